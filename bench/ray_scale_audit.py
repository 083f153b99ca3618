"""``audit`` on Ray: 1 vs 2 workers against the local run, over 20 shards (issue 12).

    python bench/ray_scale_audit.py [--quick] [--lines 1000000] [--shards 20] [--rounds 3]

``run(quick) -> dict`` is what ``bench/ray_scale.py`` calls; it prints its own table.

Input: the simulated example records (``audits/generate_example.py``, the shipped registry),
repeated with fresh ids into ``--shards`` plain JSONL shards of equal size, 7 steps per
episode so that episodes cross shard boundaries; generated once into
``$XDG_CACHE_HOME/schemaops/bench/ray_audit/<lines>x<shards>/`` and reused.

Measured in one run, each the best of ``--rounds`` (the machine is shared):
- ``local``: ``run_audit`` over the shards in this process (the default, one core);
- ``ray 1`` / ``ray 2``: ``run_audit(..., ray=ADDRESS)`` on a local Ray cluster with 1 and
  then 2 worker CPUs (``ray.init(address="local", num_cpus=N)`` in a fresh process; the
  clock starts when ``ray.init`` returns, so every figure includes booting the worker
  processes (Ray starts them per job) and compiling the registry in each, but not starting
  the cluster, which a deployment does once, nor a CLI's connection to a remote head).
Ratios: scaling efficiency = (t_ray1 / t_ray2) / 2 (target >= 0.85) and the overhead of Ray
with one worker = t_ray1 / t_local - 1 (target <= 10 %). The reports of all three runs are
checked equal (the run's own fields aside) before any figure is printed.
From the per-worker rate (lines / t_ray1) it sizes 1 billion lines on N nodes.

Wall-clock ratios need idle cores, and a shared host has none to spare, so it also prints
what the host's load does not change: the CPU seconds of the audit (the local process; the
sum of the Ray tasks, each task's registry compile included, and the driver's own), the
lines per CPU-second, the CPU overhead of Ray with one worker, the host's load average, and
the 1e9-line estimate at the per-CPU-second rate (each worker on an idle core).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REGISTRY = REPO / "schemas"
RUN_FIELDS = {"input", "elapsed_s", "jobs", "ray"}
STEPS_PER_EPISODE = 7
TARGET_EFFICIENCY = 0.85
TARGET_OVERHEAD = 0.10
BILLION = 1_000_000_000
NODE_CPUS = 16  # the estimate's node size: an ordinary 16-core machine


def cache_dir(lines: int, shards: int) -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "schemaops" / "bench" / "ray_audit" / f"{lines}x{shards}"


def make_shards(lines: int, shards: int) -> Path:
    """The shards (generated once; a ``complete`` marker says they are whole)."""
    folder = cache_dir(lines, shards)
    if (folder / "complete").exists():
        return folder
    sys.path.insert(0, str(REPO / "audits"))
    from generate_example import generate

    base = generate(5000)
    folder.mkdir(parents=True, exist_ok=True)
    per = -(-lines // shards)
    i = 0
    for s in range(shards):
        with open(folder / f"part-{s:05d}.jsonl", "w", encoding="utf-8") as fh:
            for _ in range(min(per, lines - i)):
                rec = dict(base[i % len(base)])
                rec["id"] = f"sim-{i:09d}"
                rec["episode_id"] = f"ep-{i // STEPS_PER_EPISODE:08d}"
                rec["step"] = i % STEPS_PER_EPISODE + 1
                fh.write(json.dumps(rec) + "\n")
                i += 1
    (folder / "complete").write_text(str(i))
    return folder


def _one(folder: str, workers: int) -> dict:
    """One measured audit (run in a fresh process): 0 workers = local, else Ray."""
    from schemaops.audit import AuditOptions, run_audit

    opts = AuditOptions(registry=str(REGISTRY), cache=False)
    if workers:
        import ray

        # "local": a private Ray with this many CPUs, never a running cluster found by ray.init
        ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False)
        opts.ray = "auto"
    t0, c0 = time.perf_counter(), time.process_time()
    doc = run_audit(folder, opts).to_json()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if workers:
        import ray

        ray.shutdown()
    # CPU seconds of the audit: this process (local), or the Ray tasks' sum (each task's
    # registry compile included; the driver's own CPU is driver_cpu_s)
    audit_cpu = doc["ray"]["task_cpu_s"] if workers else cpu
    return {"wall_s": wall, "cpu_s": audit_cpu, "driver_cpu_s": cpu, "doc": doc}


def measure(folder: Path, workers: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, __file__, "--one", str(folder), "--workers", str(workers)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"run with {workers} workers failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def same(a: dict, b: dict) -> list[str]:
    return [k for k in sorted((set(a) | set(b)) - RUN_FIELDS) if a.get(k) != b.get(k)]


def estimate(per_worker: float, efficiency: float) -> list[dict]:
    """1e9 lines on N nodes of NODE_CPUS workers, at the measured per-worker rate and
    scaling efficiency (capped at 1; assumes shards at least as many as workers)."""
    eff = min(efficiency, 1.0)
    out = []
    for nodes in (1, 4, 16, 64):
        rate = per_worker * NODE_CPUS * nodes * eff
        out.append({"nodes": nodes, "workers": NODE_CPUS * nodes, "hours": BILLION / rate / 3600})
    return out


def run(
    quick: bool = False, lines: int | None = None, shards: int = 20, rounds: int | None = None
) -> dict:
    """Measure local, Ray 1 worker and Ray 2 workers; print the table; return the figures."""
    lines = lines or (200_000 if quick else 1_000_000)
    rounds = rounds or (1 if quick else 3)
    folder = make_shards(lines, shards)
    load_before = os.getloadavg()[0]
    best: dict[str, dict] = {}
    for _ in range(rounds):  # interleaved, so a busy spell hits all three alike
        for name, workers in (("local", 0), ("ray1", 1), ("ray2", 2)):
            m = measure(folder, workers)
            if name not in best or m["wall_s"] < best[name]["wall_s"]:
                best[name] = m
    docs = {k: v["doc"] for k, v in best.items()}
    for k in ("ray1", "ray2"):
        diff = same(docs["local"], docs[k])
        if diff:
            raise RuntimeError(f"{k} report differs from local in {diff}")
    t = {k: v["wall_s"] for k, v in best.items()}
    n = docs["local"]["lines"]
    efficiency = (t["ray1"] / t["ray2"]) / 2
    overhead = t["ray1"] / t["local"] - 1
    per_worker = n / t["ray1"]
    cpu = {k: v["cpu_s"] for k, v in best.items()}
    result = {
        "lines": n,
        "shards": shards,
        "rounds": rounds,
        "quick": quick,
        "cpus": os.cpu_count(),
        "wall_s": t,
        "lines_per_s": {k: n / v for k, v in t.items()},
        "scaling_efficiency": efficiency,
        "efficiency_target": TARGET_EFFICIENCY,
        "ray1_overhead": overhead,
        "overhead_target": TARGET_OVERHEAD,
        "per_worker_lines_per_s": per_worker,
        "billion_lines": estimate(per_worker, efficiency),
        # Independent of how busy the host is: lines per CPU-second of the audit itself
        "audit_cpu_s": cpu,
        "driver_cpu_s": {k: v["driver_cpu_s"] for k, v in best.items()},
        # CPU of the whole run (driver + tasks) against the local run: host load aside
        "ray1_cpu_overhead": (cpu["ray1"] + best["ray1"]["driver_cpu_s"]) / cpu["local"] - 1,
        "lines_per_cpu_s": {k: n / v for k, v in cpu.items() if v},
        "billion_lines_by_cpu": estimate(n / cpu["ray1"], 1.0) if cpu["ray1"] else [],
        "load_avg_1m": [load_before, os.getloadavg()[0]],
        "reports_equal": True,
    }
    print_table(result)
    return result


def print_table(r: dict) -> None:
    print(
        f"audit on Ray: {r['lines']:,} lines in {r['shards']} shards, best of {r['rounds']},"
        f" {r['cpus']} host CPUs{' (quick)' if r['quick'] else ''}"
    )
    load = r["load_avg_1m"]
    print(f"host load average (1 min) before/after: {load[0]:.2f} / {load[1]:.2f}")
    print(f"{'run':<8}{'wall s':>9}{'lines/s':>12}{'audit CPU s':>13}{'lines/CPU-s':>13}")
    for k, v in r["wall_s"].items():
        lc = r["lines_per_cpu_s"].get(k, 0)
        print(
            f"{k:<8}{v:>9.2f}{r['lines_per_s'][k]:>12,.0f}{r['audit_cpu_s'][k]:>13.2f}{lc:>13,.0f}"
        )
    eff, ovh = r["scaling_efficiency"], r["ray1_overhead"]
    print(
        f"scaling efficiency 2 vs 1 worker: {eff:.2f} (target >= {r['efficiency_target']}:"
        f" {'met' if eff >= r['efficiency_target'] else 'NOT met'})"
    )
    print(
        f"overhead of Ray, 1 worker vs local: {ovh:+.1%} (target <= {r['overhead_target']:.0%}:"
        f" {'met' if ovh <= r['overhead_target'] else 'NOT met'})"
    )
    print(
        f"CPU overhead of Ray, 1 worker (driver + task CPU vs local CPU):"
        f" {r['ray1_cpu_overhead']:+.1%}"
    )
    print(f"reports equal (local, ray1, ray2): {r['reports_equal']}")
    print(f"1e9 lines at {r['per_worker_lines_per_s']:,.0f} lines/s per worker:")
    for e in r["billion_lines"]:
        print(f"  {e['nodes']:>3} nodes x {NODE_CPUS} workers: {_dur(e['hours'])}")
    if r["billion_lines_by_cpu"]:
        rate = r["lines_per_cpu_s"]["ray1"]
        print(f"1e9 lines at {rate:,.0f} lines per task CPU-second (an idle core each, no loss):")
        for e in r["billion_lines_by_cpu"]:
            print(f"  {e['nodes']:>3} nodes x {NODE_CPUS} workers: {_dur(e['hours'])}")


def _dur(hours: float) -> str:
    return f"{hours:.2f} h" if hours >= 1 else f"{hours * 60:.1f} min"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="200,000 lines, one round")
    ap.add_argument("--lines", type=int)
    ap.add_argument("--shards", type=int, default=20)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--json", action="store_true", help="also print the figures as JSON")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--workers", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(_one(args.one, args.workers)))
        return
    r = run(args.quick, args.lines, args.shards, args.rounds)
    if args.json:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
