"""Audit speed at platform scale (issue 36): one run, whole processes, same-run ratios.

    python bench/audit_scale.py                       # (a) 3,000,000 lines, (b) 100 per schema
    python bench/audit_scale.py --lines 1000000 --per-schema 30 --rounds 2
    python bench/audit_scale.py --before HEAD~3       # start-up of another commit, same rounds
    python bench/audit_scale.py --quick --json        # the structure, in about a minute

Three workloads, each contender its own process (start-up included), interleaved rounds,
best of each kept (on a shared machine the load moves from second to second); peak RSS of
every run (``wait4``'s ``ru_maxrss``: the process or its largest waited-for worker):

- (a) ``--lines`` tool-call outputs of one schema: the arguments of the support agent's
  ``create_ticket`` calls against its parameters (``schemas/create_ticket.json``), every
  text distinct (``baselines.distinct``), in the simulated prompt-only mix of
  ``audits/generate_example.py`` (~96 % ok; enum/required violations, truncated, fenced and
  prose-prefixed texts). ``--envelope``: every tool's calls as ``{"tool", "args"}`` against
  the registry's ``tool_call`` (an ``anyOf`` over the eight tools), one in a hundred naming a
  tool that does not exist.
  Contenders: ``schemaops audit FILE --registry schemas --json`` (defaults), the
  jsonschema-rs loop (``rs_loop.py``: compile once, orjson, ``is_valid``, the first error's
  kind and path on a failure) and orjson parse-only (``parse_only.py``). Targets: >= 1.0x
  the loop, >= 0.5x parse-only.
- (b) every JSONSchemaBench schema that loads with ``--per-schema`` distinct outputs each
  (``audit_many_schemas.build_workload``'s generator: valid instances, mutations, broken
  texts, most invalid), the audit with a cold facts cache (an empty ``--cache-dir``) and the
  second run on the same registry (the cache warm, as a platform audits every day) against
  the loop and parse-only. Targets: cold >= 0.5x the loop, warm >= 1.0x. Memory flat in the
  line count: the warm audit's peak RSS on the whole file and on a quarter of it.
- start-up: ``schemaops audit`` on a one-line file (the facts cache warm) against
  ``python -c "import orjson, jsonschema_rs"``; with ``--before REV`` the same audit from a
  ``git archive`` of REV in the same rounds (the change measured before/after). Target:
  <= 0.2 s on a quiet machine, reported as the ratio to the baseline.

The (b) registry and its unique outputs are built once and cached under ``--workdir``
(default ``$XDG_CACHE_HOME/schemaops/bench/audit-scale``); the output files are written per
run (fast). ``--quick``: (a) 20,000 lines, (b) 60 sampled schemas x 20, one round, three
start-up rounds: the structure (``tests/test_bench_audit_scale.py``), not figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "audits"))
import orjson  # noqa: E402
from baselines import audit_cmd, byte_compile, distinct, parse_only_cmd, rs_loop_cmd  # noqa: E402

TOOL_ARGS = "create_ticket"  # one function's parameters: its calls' arguments are the outputs
TOOL_ENVELOPE = "tool_call"  # --envelope: {"tool", "args"} against an anyOf over the tools
#: one call in this many names a tool the set does not have
UNKNOWN_EVERY = 100
WORKDIR_VERSION = 1


# --- running ---------------------------------------------------------------------------


#: GNU time, when installed: the peak RSS of the command itself. ``wait4``'s ``ru_maxrss`` of a
#: child this process spawns also carries over this process's own peak (vfork + exec; the
#: bench holds the workloads), so it is read through a small intermediate process instead.
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def run_proc(cmd: list[str], env: dict | None = None, cwd: Path | None = None) -> dict:
    """One whole process: wall seconds, CPU seconds (user + system, its workers included:
    ``os.wait4``), peak RSS in MiB (the process or its largest waited-for worker; NaN
    without GNU time) and stdout."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile("r") as rss,
    ):
        full = [GNU_TIME, "-f", "%M", "-o", rss.name, *cmd] if GNU_TIME else cmd
        t0 = time.perf_counter()
        proc = subprocess.Popen(full, stdout=out, stderr=err, env=env, cwd=cwd)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode("utf-8", "replace")
        if proc.returncode not in (0, 1):
            tail = err.read().decode("utf-8", "replace")[-2000:]
            raise SystemExit(f"{' '.join(cmd[:6])} ... exited {proc.returncode}: {tail}")
        try:
            peak = int(rss.read().split()[-1]) / 1024
        except (ValueError, IndexError):
            peak = float("nan")
    cpu = usage.ru_utime + usage.ru_stime
    return {"wall_s": wall, "cpu_s": cpu, "rss_mib": peak, "out": text}


def rounds_of(contenders: dict[str, dict], rounds: int, before_each: Any = None) -> dict:
    """Interleaved rounds over ``contenders`` (name -> {"cmd", "env"?, "cwd"?}); per name the
    best wall with that run's peak RSS and stdout, and the least CPU seconds of any run."""
    best: dict[str, dict] = {}
    for _ in range(rounds):
        for name, c in contenders.items():
            if before_each is not None:
                before_each(name)
            r = run_proc(c["cmd"], c.get("env"), c.get("cwd"))
            if name not in best or r["wall_s"] < best[name]["wall_s"]:
                cpu = min(r["cpu_s"], best[name]["cpu_s"]) if name in best else r["cpu_s"]
                best[name] = {**r, "cpu_s": cpu}
            else:
                best[name]["cpu_s"] = min(best[name]["cpu_s"], r["cpu_s"])
    return best


def _figures(best: dict[str, dict], lines: int) -> dict[str, dict]:
    return {
        name: {
            "wall_s": round(r["wall_s"], 3),
            "cpu_s": round(r["cpu_s"], 3),
            "lines_per_s": round(lines / r["wall_s"]),
            "peak_rss_mib": round(r["rss_mib"], 1),
        }
        for name, r in best.items()
    }


# --- (a) one schema, tool calls -------------------------------------------------------


def tool_texts(envelope: bool) -> tuple[str, list[str]]:
    """(schema, texts): the arguments of the support agent's ``create_ticket`` calls in the
    simulated prompt-only mix (``generate_example``, 40,000 records drawn, the ~5,000 of that
    tool kept); with ``envelope`` every call of every tool wrapped as ``{"tool": NAME, "args":
    TEXT}`` against the registry's ``tool_call`` (an ``anyOf`` over the eight tools; one call
    in ``UNKNOWN_EVERY`` names a tool the set does not have)."""
    from generate_example import generate

    if not envelope:
        return TOOL_ARGS, [r["text"] for r in generate(40000) if r["schema"] == TOOL_ARGS]
    out = []
    for i, rec in enumerate(generate(5000)):
        name = "delete_account" if i % UNKNOWN_EVERY == UNKNOWN_EVERY - 1 else rec["schema"]
        out.append(f'{{"tool": "{name}", "args": {rec["text"]}}}')
    return TOOL_ENVELOPE, out


def write_tool_calls(path: Path, n: int, envelope: bool = False) -> str:
    """``n`` records cycling over ``tool_texts`` with every text made distinct; returns the
    schema's name."""
    schema, base = tool_texts(envelope)
    dumps = orjson.dumps
    with open(path, "wb") as fh:
        buf = []
        for i in range(n):
            text = distinct(base[i % len(base)], i)
            buf.append(dumps({"id": f"tc-{i:08d}", "schema": schema, "text": text}))
            if len(buf) >= 10000:
                fh.write(b"\n".join(buf) + b"\n")
                buf.clear()
        if buf:
            fh.write(b"\n".join(buf) + b"\n")
    return schema


def one_schema_file(path: Path, name: str) -> Path:
    """``{name: bundled schema}`` for the loop (self-contained, as the audit bundles)."""
    from schemaops.registry import load_registry

    reg = load_registry(REPO / "schemas")
    path.write_text(json.dumps({s.name: s.bundled() for s in reg if s.name == name}))
    return path


# --- (b) JSONSchemaBench ----------------------------------------------------------------


def default_workdir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "schemaops" / "bench" / "audit-scale"


def sampled_corpus(corpus: Path, dest: Path, n: int, seed: int) -> Path:
    """A corpus folder with ``n`` rows drawn over every subset (``--quick``)."""
    rows = []
    for f in sorted(corpus.glob("*.jsonl")):
        with f.open(encoding="utf-8") as fh:
            rows += [(f.stem, line) for line in fh]
    picked = sorted(random.Random(seed).sample(rows, min(n, len(rows))))
    dest.mkdir(parents=True, exist_ok=True)
    for stem in {s for s, _ in picked}:
        with open(dest / f"{stem}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(line for s, line in picked if s == stem)
    return dest


def jsb_workload(workdir: Path, sample: int | None, seed: int) -> tuple[Path, list[bytes], dict]:
    """The registry and its unique outputs (one pass of ``build_workload``: each unique
    output once), built once and cached in ``workdir``."""
    from audit_many_schemas import CORPUS, build_workload

    base = workdir / (f"jsb-sample-{sample}" if sample else "jsb")
    corpus = CORPUS
    if sample:
        corpus = sampled_corpus(CORPUS, workdir / f"corpus-sample-{sample}", sample, seed)
    meta = build_workload(base, corpus, False, 1, seed)  # lines=1: exactly one pass
    with open(base / "outputs.jsonl", "rb") as fh:
        unique = [line.rstrip(b"\n") for line in fh if line.strip()]
    return base / "registry", unique, meta


def write_jsb(path: Path, unique: list[bytes], schemas: int, per_schema: int, seed: int) -> int:
    """``schemas * per_schema`` lines: passes over the unique outputs, each pass shuffled,
    every text made distinct again (the line's index), ids fresh. Returns the line count."""
    rng = random.Random(seed)
    recs = [orjson.loads(u) for u in unique]
    want = schemas * per_schema
    n = 0
    with open(path, "wb") as fh:
        while n < want:
            order = list(range(len(recs)))
            rng.shuffle(order)
            buf = []
            for i in order:
                if n >= want:
                    break
                r = recs[i]
                buf.append(
                    orjson.dumps(
                        {
                            "id": f"jsb-{n:08d}",
                            "schema": r["schema"],
                            "text": distinct(r["text"], n),
                        }
                    )
                )
                n += 1
            fh.write(b"\n".join(buf) + b"\n")
    return n


def quarter_of(src: Path, dest: Path) -> int:
    """The first quarter of ``src``'s lines at ``dest``; returns its line count."""
    with open(src, "rb") as fh:
        lines = fh.readlines()
    k = len(lines) // 4
    with open(dest, "wb") as out:
        out.writelines(lines[:k])
    return k


# --- start-up ----------------------------------------------------------------------------


def old_tree(rev: str, dest: Path) -> Path:
    """``git archive REV`` of this checkout at ``dest``, byte-compiled; or REV itself when it
    is a folder holding a checkout (``schemaops/``)."""
    import compileall

    if (Path(rev) / "schemaops").is_dir():
        compileall.compile_dir(Path(rev) / "schemaops", quiet=1)
        return Path(rev).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    compileall.compile_dir(dest / "schemaops", quiet=1)
    return dest


def startup_contenders(tmp: Path, before: str | None) -> dict[str, dict]:
    one = tmp / "one.jsonl"
    with open(REPO / "audits" / "example-outputs.jsonl", "rb") as fh:
        one.write_bytes(fh.readline())
    cache = tmp / "startup-cache"
    registry = REPO / "schemas"  # each tree audits with its own registry
    out = {
        "baseline": {"cmd": [sys.executable, "-c", "import orjson, jsonschema_rs"]},
        "audit": {
            "cmd": audit_cmd(one, registry, "--cache-dir", str(cache)),
            "cwd": REPO,
        },
    }
    if before:
        root = old_tree(before, tmp / "before")
        env = {**os.environ, "PYTHONPATH": str(root)}
        out["audit_before"] = {
            "cmd": audit_cmd(
                one, root / "schemas", "--cache-dir", str(tmp / "startup-cache-before")
            ),
            "cwd": root,
            "env": env,
        }
    return out


# --- main --------------------------------------------------------------------------------


def ratio(num: float, den: float) -> float:
    return round(num / den, 3) if den else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, help="(a) lines (default 3,000,000; --quick 20,000)")
    ap.add_argument("--per-schema", type=int, help="(b) outputs per schema (default 100)")
    ap.add_argument("--rounds", type=int, help="interleaved rounds of (a) and (b) (default 2)")
    ap.add_argument("--startup-rounds", type=int, help="rounds of the start-up (default 10)")
    ap.add_argument(
        "--before",
        help="a git revision (or a checkout's folder) whose audit start-up is timed alongside",
    )
    ap.add_argument("--workdir", type=Path, help="(b) workload cache")
    ap.add_argument(
        "--envelope",
        action="store_true",
        help="(a) as {tool, args} calls of every tool against tool_call (an anyOf)",
    )
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--skip", default="", help="comma list of a,b,startup to leave out")
    ap.add_argument("--quick", action="store_true", help="small sizes: the structure only")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args(argv)
    lines = args.lines or (20_000 if args.quick else 3_000_000)
    per_schema = args.per_schema or (20 if args.quick else 100)
    rounds = args.rounds or (1 if args.quick else 2)
    s_rounds = args.startup_rounds or (3 if args.quick else 10)
    skip = {x.strip() for x in args.skip.split(",") if x.strip()}
    workdir = args.workdir or default_workdir()
    say = (lambda *a, **k: print(*a, file=sys.stderr, **k)) if args.json else print
    byte_compile()
    doc: dict[str, Any] = {
        "python": sys.version.split()[0],
        "cores": os.cpu_count(),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        "rounds": rounds,
    }
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        if "a" not in skip:
            path = tmp / "toolcalls.jsonl"
            name = write_tool_calls(path, lines, args.envelope)
            schemas = one_schema_file(tmp / "schemas.json", name)
            size = path.stat().st_size / 2**20
            say(f"(a) {lines:,} distinct tool-call outputs of one schema ({name}), {size:.0f} MiB")
            run_proc(parse_only_cmd(path))  # page cache
            best = rounds_of(
                {
                    "parse_only": {"cmd": parse_only_cmd(path)},
                    "rs_loop": {"cmd": rs_loop_cmd(path, schemas=schemas)},
                    "audit": {
                        "cmd": audit_cmd(path, REPO / "schemas", "--cache-dir", str(tmp / "ca"))
                    },
                },
                rounds,
            )
            report = json.loads(best["audit"]["out"])
            loop = json.loads(best["rs_loop"]["out"])
            a = {
                "schema": name,
                "lines": lines,
                "mib": round(size, 1),
                "runs": _figures(best, lines),
                "audit_jobs": report.get("jobs"),
                "audit_ok": report.get("ok"),
                "loop_counts": loop,
                "vs_loop": ratio(best["rs_loop"]["wall_s"], best["audit"]["wall_s"]),
                "vs_parse_only": ratio(best["parse_only"]["wall_s"], best["audit"]["wall_s"]),
                "cpu_vs_loop": ratio(best["rs_loop"]["cpu_s"], best["audit"]["cpu_s"]),
                "targets": {"vs_loop": 1.0, "vs_parse_only": 0.5},
            }
            doc["a"] = a
            path.unlink()
        if "b" not in skip:
            sample = 60 if args.quick else None
            with contextlib.redirect_stdout(sys.stderr):  # the builder's progress lines
                registry, unique, meta = jsb_workload(workdir, sample, args.seed)
            n_schemas = meta["schemas"]
            path, quarter = tmp / "jsb.jsonl", tmp / "jsb-quarter.jsonl"
            n = write_jsb(path, unique, n_schemas, per_schema, args.seed)
            nq = quarter_of(path, quarter)
            say(
                f"(b) {n_schemas:,} JSONSchemaBench schemas x {per_schema} = {n:,} distinct"
                f" outputs ({meta['unique_invalid_share']:.0%} of the unique ones invalid)"
            )
            cold_dir, warm_dir = tmp / "cache-cold", tmp / "cache-warm"
            run_proc(parse_only_cmd(path))  # page cache
            run_proc(audit_cmd(path, registry, "--cache-dir", str(warm_dir)))  # fills warm

            def before_each(name: str) -> None:
                if name == "audit_cold":
                    shutil.rmtree(cold_dir, ignore_errors=True)

            best = rounds_of(
                {
                    "parse_only": {"cmd": parse_only_cmd(path)},
                    "rs_loop": {"cmd": rs_loop_cmd(path, registry=registry)},
                    "audit_cold": {"cmd": audit_cmd(path, registry, "--cache-dir", str(cold_dir))},
                    "audit_warm": {"cmd": audit_cmd(path, registry, "--cache-dir", str(warm_dir))},
                },
                rounds,
                before_each,
            )
            cold = json.loads(best["audit_cold"]["out"])
            warm = json.loads(best["audit_warm"]["out"])
            # the same number of processes as the full run (the default picks by size)
            jobs_q = ["--jobs", str(warm.get("jobs") or 1)]
            q = run_proc(audit_cmd(quarter, registry, "--cache-dir", str(warm_dir), *jobs_q))
            assert cold["categories"] == warm["categories"], "cold and warm verdicts differ"
            doc["b"] = {
                "schemas": n_schemas,
                "per_schema": per_schema,
                "lines": n,
                "unique_outputs": len(unique),
                "unique_invalid_share": meta["unique_invalid_share"],
                "runs": _figures(best, n),
                "audit_jobs": cold.get("jobs"),
                "audit_ok": cold.get("ok"),
                "loop_counts": json.loads(best["rs_loop"]["out"]),
                "cold_vs_loop": ratio(best["rs_loop"]["wall_s"], best["audit_cold"]["wall_s"]),
                "warm_vs_loop": ratio(best["rs_loop"]["wall_s"], best["audit_warm"]["wall_s"]),
                "cold_vs_parse_only": ratio(
                    best["parse_only"]["wall_s"], best["audit_cold"]["wall_s"]
                ),
                "warm_vs_parse_only": ratio(
                    best["parse_only"]["wall_s"], best["audit_warm"]["wall_s"]
                ),
                "cpu_cold_vs_loop": ratio(best["rs_loop"]["cpu_s"], best["audit_cold"]["cpu_s"]),
                "cpu_warm_vs_loop": ratio(best["rs_loop"]["cpu_s"], best["audit_warm"]["cpu_s"]),
                "memory": {
                    "warm_full_lines": n,
                    "warm_full_peak_rss_mib": round(best["audit_warm"]["rss_mib"], 1),
                    "warm_quarter_lines": nq,
                    "warm_quarter_peak_rss_mib": round(q["rss_mib"], 1),
                },
                "targets": {"cold_vs_loop": 0.5, "warm_vs_loop": 1.0},
            }
        if "startup" not in skip:
            best = rounds_of(startup_contenders(tmp, args.before), 1)  # warm: cache, pages
            best = rounds_of(startup_contenders(tmp, args.before), s_rounds)
            base = best["baseline"]["wall_s"]
            st: dict[str, Any] = {
                "rounds": s_rounds,
                "runs": {
                    k: {"best_s": round(v["wall_s"], 4), "cpu_s": round(v["cpu_s"], 4)}
                    for k, v in best.items()
                },
                "audit_over_baseline": ratio(best["audit"]["wall_s"], base),
                "audit_over_baseline_cpu": ratio(best["audit"]["cpu_s"], best["baseline"]["cpu_s"]),
                "target_s": 0.2,
            }
            for k, v in best.items():
                st["runs"][k]["peak_rss_mib"] = round(v["rss_mib"], 1)
            if "audit_before" in best:
                st["before"] = args.before
                st["audit_before_over_baseline"] = ratio(best["audit_before"]["wall_s"], base)
                st["before_over_after"] = ratio(
                    best["audit_before"]["wall_s"], best["audit"]["wall_s"]
                )
                st["before_over_after_cpu"] = ratio(
                    best["audit_before"]["cpu_s"], best["audit"]["cpu_s"]
                )
            doc["startup"] = st
    doc["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print_text(doc)
    return 0


def print_text(doc: dict) -> None:
    """The figures as lines, ratios first (above 1.0 is faster than the baseline)."""
    print(
        f"python {doc['python']}, {doc['cores']} cores, load {doc['load_avg_at_start']} ->"
        f" {doc['load_avg_at_end']}, best of {doc['rounds']} interleaved rounds"
    )
    for key, title in (("a", "(a) one schema, tool calls"), ("b", "(b) JSONSchemaBench")):
        part = doc.get(key)
        if not part:
            continue
        print(f"{title}: {part['lines']:,} lines, audit --jobs {part['audit_jobs']}")
        for name, r in part["runs"].items():
            print(
                f"  {name:<12} {r['wall_s']:8.2f} s (cpu {r['cpu_s']:7.2f} s)"
                f" {r['lines_per_s']:>10,} lines/s"
                f"  peak RSS {r['peak_rss_mib']:7.1f} MiB"
            )
        for name, target in part["targets"].items():
            value = part[name]
            print(
                f"  {name:<20} {value:6.2f}x  target >= {target}x:"
                f" {'met' if value >= target else 'NOT met'}"
            )
        cpus = {k: v for k, v in part.items() if k.startswith("cpu_")}
        print(
            "  cpu ratios (what the machine's load moves least): "
            + ", ".join(f"{k[4:]} {v:.2f}x" for k, v in cpus.items())
        )
        if key == "b":
            m = part["memory"]
            print(
                f"  memory (warm): {m['warm_quarter_lines']:,} lines"
                f" {m['warm_quarter_peak_rss_mib']:.0f} MiB, {m['warm_full_lines']:,} lines"
                f" {m['warm_full_peak_rss_mib']:.0f} MiB"
            )
    st = doc.get("startup")
    if st:
        print(f"start-up (best of {st['rounds']}):")
        for name, r in st["runs"].items():
            print(
                f"  {name:<14} {r['best_s']:.3f} s (cpu {r['cpu_s']:.3f} s)"
                f"  peak RSS {r['peak_rss_mib']:.0f} MiB"
            )
        print(
            f"  audit / baseline: {st['audit_over_baseline']:.2f}x wall,"
            f" {st['audit_over_baseline_cpu']:.2f}x cpu (target: audit <= 0.2 s, quiet machine)"
        )
        if "before" in st:
            print(
                f"  audit at {st['before']} / baseline: {st['audit_before_over_baseline']:.2f}x;"
                f" before / after: {st['before_over_after']:.2f}x wall,"
                f" {st['before_over_after_cpu']:.2f}x cpu"
            )


if __name__ == "__main__":
    raise SystemExit(main())
