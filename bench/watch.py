"""``schemaops watch`` throughput and lag against ``audit`` on the same lines.

    python bench/watch.py [--lines 200000] [--rate 10000] [--seconds 30] [--rounds 3]

Two measurements on the simulated example records (``audits/generate_example.py``: the
failure mix of the prompt-only deployment in docs/findings.md over the shipped registry,
5,000 generated and repeated with fresh ids), the input ``bench/audit_throughput.py`` uses:

1. catch-up: a file of ``--lines`` lines read by ``run_audit`` (one process) and by one
   ``run_watch(once=True)`` pass, interleaved for ``--rounds`` rounds, best of each kept;
   lines/s and CPU s per line of both, and the ratio (target: watch >= 0.8x audit);
2. live: ``schemaops watch`` in a subprocess pinned to one core (``--cpu``) follows a file
   this process appends to at ``--rate`` lines/s (a write every 10 ms) for ``--seconds``;
   /metrics is scraped every 0.25 s and the lag is the lines written but not yet counted,
   divided by the rate (seconds behind); p50, p99 and max, the time to catch up after the
   writer stops, and the watch process's CPU per line (utime + stime from /proc). Target:
   lag under 1 s at 10k lines/s on one core;
3. memory: peak RSS (``VmHWM``) of a fresh process running one ``watch --once`` pass over
   files of each ``--rss-lines`` size: flat in the number of lines (counters, not lines).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "audits"))
sys.path.insert(0, str(REPO / "bench"))

from audit_throughput import make_file  # noqa: E402


def catch_up(path: Path, rounds: int) -> dict:
    from schemaops.audit import AuditOptions, run_audit
    from schemaops.watch import WatchOptions, run_watch

    reg = str(REPO / "schemas")
    best = {"audit": (1e9, 1e9), "watch": (1e9, 1e9)}
    n = 0
    for _ in range(rounds):
        w0, c0 = time.perf_counter(), time.process_time()
        doc = run_audit(str(path), AuditOptions(registry=reg)).to_json()
        best["audit"] = min(best["audit"], (time.perf_counter() - w0, time.process_time() - c0))
        n = doc["lines"]
        opts = WatchOptions([str(path)], AuditOptions(registry=reg), listen=None, once=True)
        w0, c0 = time.perf_counter(), time.process_time()
        snap = run_watch(opts)
        best["watch"] = min(best["watch"], (time.perf_counter() - w0, time.process_time() - c0))
        assert snap["lines"] == n and snap["p"] == doc["p"], (snap["p"], doc["p"])
    out = {k: {"lines_per_s": n / w, "cpu_us_per_line": c / n * 1e6} for k, (w, c) in best.items()}
    out["ratio"] = out["watch"]["lines_per_s"] / out["audit"]["lines_per_s"]
    out["lines"] = n
    return out


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        parts = fh.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def _lines_total(url: str) -> float:
    for fam in text_string_to_metric_families(httpx.get(url, timeout=10).text):
        for s in fam.samples:
            if s.name == "schemaops_watch_lines_total":
                return s.value
    return 0.0


def live(lines: list[bytes], rate: int, seconds: float, cpu: int, tmp: Path) -> dict:
    log = tmp / "live.jsonl"
    log.write_bytes(b"")
    proc = subprocess.Popen(
        [sys.executable, "-m", "schemaops", "watch", str(log), "--registry",
         str(REPO / "schemas"), "--listen", "127.0.0.1:0", "--interval", "0.1s"],
        stderr=subprocess.PIPE, text=True, cwd=REPO,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )  # fmt: skip
    assert proc.stderr is not None
    url = ""
    while not url:
        line = proc.stderr.readline()
        if not line:
            raise SystemExit(f"watch did not start (exit {proc.wait()})")
        if "serving http://" in line:
            url = line.split("serving ", 1)[1].strip() + "/metrics"
    written = [0]
    samples: list[tuple[float, int, float]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append((time.monotonic(), written[0], _lines_total(url)))
            time.sleep(0.25)

    per_tick = max(1, rate // 100)
    cpu0 = _cpu_s(proc.pid)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.monotonic()
    i = 0
    with open(log, "ab", buffering=0) as fh:
        tick = 0
        while time.monotonic() - start < seconds:
            chunk = b"".join(lines[(i + k) % len(lines)] for k in range(per_tick))
            fh.write(chunk)
            i += per_tick
            written[0] = i
            tick += 1
            delay = start + tick * 0.01 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
    wall = time.monotonic() - start
    stopped = time.monotonic()
    while _lines_total(url) < i and time.monotonic() - stopped < 120:
        time.sleep(0.05)
    caught_up = time.monotonic() - stopped
    done.set()
    sampler.join()
    cpu = _cpu_s(proc.pid) - cpu0
    proc.terminate()
    proc.wait(60)
    lags = sorted(max(0, w - r) / rate for _, w, r in samples if w)
    return {
        "rate_asked": rate,
        "rate_written": i / wall,
        "lines": i,
        "lag_p50_s": statistics.median(lags) if lags else None,
        "lag_p99_s": lags[int(0.99 * (len(lags) - 1))] if lags else None,
        "lag_max_s": lags[-1] if lags else None,
        "catch_up_after_stop_s": caught_up,
        "cpu_us_per_line": cpu / i * 1e6,
        "cpu_share_of_one_core": cpu / (wall + caught_up),
    }


def rss_child(path: str) -> None:
    """Run in a fresh process: one watch pass over ``path``; print the peak RSS in MiB."""
    from schemaops.audit import AuditOptions
    from schemaops.watch import WatchOptions, run_watch

    opts = WatchOptions([path], AuditOptions(registry=str(REPO / "schemas")), listen=None)
    opts.once = True
    run_watch(opts)
    with open("/proc/self/status") as fh:
        print(int(next(x for x in fh if x.startswith("VmHWM")).split()[1]) / 1024)


def rss(sizes: list[int], base: list[dict], tmp: Path) -> dict[int, float]:
    out = {}
    for n in sizes:
        path = tmp / f"rss-{n}.jsonl"
        make_file(path, n, base)
        r = subprocess.run(
            [sys.executable, __file__, "--rss-child", str(path)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        out[n] = float(r.stdout.strip().splitlines()[-1])
        path.unlink()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate", type=int, default=10_000)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--cpu", type=int, default=0, help="core the live watch is pinned to")
    ap.add_argument("--rss-lines", default="200000,1000000", help="'' to skip the RSS runs")
    ap.add_argument("--rss-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(args.rss_child)
        return 0
    from generate_example import generate

    base = generate(5000)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        path = tmp / "lines.jsonl"
        make_file(path, args.lines, base)
        c = catch_up(path, args.rounds)
        print(
            f"catch-up, {c['lines']:,} lines: audit {c['audit']['lines_per_s']:,.0f} lines/s "
            f"({c['audit']['cpu_us_per_line']:.1f} us CPU/line), watch "
            f"{c['watch']['lines_per_s']:,.0f} lines/s ({c['watch']['cpu_us_per_line']:.1f} us "
            f"CPU/line): {c['ratio']:.2f}x audit (target >= 0.8x)"
        )
        with open(path, "rb") as fh:
            lines = fh.readlines()[:20_000]
        r = live(lines, args.rate, args.seconds, args.cpu, tmp)
        print(
            f"live, {r['rate_written']:,.0f} lines/s for {args.seconds:g} s "
            f"({r['lines']:,} lines), one core: lag p50 {r['lag_p50_s']:.2f} s, "
            f"p99 {r['lag_p99_s']:.2f} s, max {r['lag_max_s']:.2f} s; caught up "
            f"{r['catch_up_after_stop_s']:.2f} s after the writer stopped; "
            f"{r['cpu_us_per_line']:.1f} us CPU/line, {r['cpu_share_of_one_core']:.0%} of the "
            "core (target: lag under 1 s)"
        )
        sizes = [int(x) for x in args.rss_lines.split(",") if x.strip()]
        if sizes:
            peaks = rss(sizes, base, tmp)
            print("peak RSS of one watch pass: " + ", ".join(
                f"{n:,} lines {mib:.0f} MiB" for n, mib in peaks.items()
            ))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
