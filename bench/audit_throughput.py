"""Audit throughput on texts that do not repeat, against baselines timed in the same run.

    python bench/audit_throughput.py [--lines 200000] [--rounds 3] [--rss-lines 200000,1000000]

Whole processes, start-up included, each contender in its own process, interleaved for
``--rounds`` rounds (best of each kept):
- ``schemaops audit FILE --registry schemas --json`` with default options;
- the jsonschema-rs loop a user would write (``rs_loop.py``: orjson, a validator per schema,
  ``is_valid``, the first error of a failure);
- the orjson parse-only floor (``parse_only.py``: the record and its text, nothing else);
- the naive loop a team writes first (``json.loads`` then ``jsonschema.validate`` per line,
  measured in this process on the first ``--naive-lines`` lines);
and the ratios. Targets (issue 24): >= 1.0x the jsonschema-rs loop, >= 0.5x parse-only.
The verdict memo (an exact text seen before for the same schema) is reported separately, on
the same records with their texts repeated as the generator makes them.

Input: the simulated example records (``audits/generate_example.py``: the failure mix of the
prompt-only deployment in docs/findings.md over the shipped registry), 5,000 generated and
cycled with fresh ids and episodes, every text made distinct (``baselines.distinct``).
Peak RSS, when asked, is measured in fresh subprocesses auditing files of each size
(``VmHWM``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "audits"))
sys.path.insert(0, str(REPO / "bench"))
from baselines import audit_cmd, byte_compile, distinct, parse_only_cmd, rs_loop_cmd, timed  # noqa: E402


def make_file(path: Path, n: int, base: list[dict], unique: bool = True) -> None:
    """Write ``n`` records cycling over ``base`` with unique ids and episode numbers, and with
    ``unique`` every text made distinct (``baselines.distinct``)."""
    per_ep = 20
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            rec = dict(base[i % len(base)])
            if unique:
                rec["text"] = distinct(rec["text"], i)
            rec["id"] = f"sim-{i:08d}"
            rec["episode_id"] = f"ep-{i // per_ep:07d}"
            rec["step"] = i % per_ep + 1
            fh.write(json.dumps(rec) + "\n")


def bench_parse_only(path: Path) -> float:
    t0 = time.perf_counter()
    with open(path, "rb") as fh:
        for line in fh:
            rec = json.loads(line)
            try:
                json.loads(rec["text"])
            except ValueError:
                pass
    return time.perf_counter() - t0


def bench_naive(path: Path, limit: int) -> tuple[float, int]:
    import jsonschema

    from schemaops.registry import load_registry

    reg = load_registry(REPO / "schemas")
    schemas = {s.name: s.self_contained if s.self_contained is not None else s.schema for s in reg}
    n = 0
    t0 = time.perf_counter()
    with open(path, "rb") as fh:
        for line in fh:
            if n >= limit:
                break
            n += 1
            rec = json.loads(line)
            try:
                jsonschema.validate(json.loads(rec["text"]), schemas[rec["schema"]])
            except (ValueError, jsonschema.ValidationError):
                pass
    return time.perf_counter() - t0, n


def bench_explain(path: Path, limit: int) -> tuple[int, float, float]:
    """Why ``treecheck.py`` stays beside jsonschema-rs: the audit explains a violation with
    ``best_match`` over the failing part only (the closure tree skips the subtrees it accepts);
    timed here against ``best_match`` over the whole output, on the first ``limit`` violations
    of the workload, after checking both name the same keyword, path and message. Returns
    (violations, seconds with the tree, seconds without)."""
    from jsonschema.exceptions import best_match

    from schemaops.audit.verdict.classify import parse_output
    from schemaops.audit.verdict.validate import SchemaChecker
    from schemaops.registry import load_registry
    from schemaops.strings import pointer

    reg = load_registry(REPO / "schemas")
    checkers = {s.name: SchemaChecker(s.name, s.bundled(), checked=True) for s in reg if s.valid}
    cases = []
    with open(path, "rb") as fh:
        for line in fh:
            rec = json.loads(line)
            checker = checkers.get(rec["schema"])
            value, failure = parse_output(rec["text"])
            if checker is None or failure is not None:
                continue
            outcome = checker.check(value)
            if outcome.category != "ok":
                err = best_match(checker.validator.iter_errors(value))
                assert outcome.category.endswith(f":{err.validator}")
                assert outcome.path == pointer(err.absolute_path)
                cases.append((checker, value))
                if len(cases) >= limit:
                    break
    t0 = time.perf_counter()
    for checker, value in cases:
        checker.check(value)
    t1 = time.perf_counter()
    for checker, value in cases:
        best_match(checker.validator.iter_errors(value))
    return len(cases), t1 - t0, time.perf_counter() - t1


def rss_child(path: str) -> None:
    """Run in a fresh process: audit ``path`` and print the peak RSS in MiB."""
    from schemaops.audit import AuditOptions, run_audit

    run_audit(path, AuditOptions(registry=str(REPO / "schemas")))
    # VmHWM (Linux) is this process's own peak; ru_maxrss also carries over the peak of the
    # parent that spawned it (vfork + exec), which here holds the generated records.
    try:
        with open("/proc/self/status") as fh:
            hwm = next(x for x in fh if x.startswith("VmHWM"))
        print(int(hwm.split()[1]) / 1024)
    except (OSError, StopIteration):
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--naive-lines", type=int, default=1_000)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (best of)")
    ap.add_argument("--rss-lines", default="", help="e.g. 200000,1000000 (default: skipped)")
    ap.add_argument("--rss-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(args.rss_child)
        return 0
    from generate_example import generate

    from schemaops.registry import load_registry

    base = generate(5000)
    byte_compile()
    registry = REPO / "schemas"
    with tempfile.TemporaryDirectory() as tmp:
        path, repeated = Path(tmp) / "outputs.jsonl", Path(tmp) / "repeated.jsonl"
        schemas = Path(tmp) / "schemas.json"
        reg = load_registry(registry)
        schemas.write_text(json.dumps({s.name: s.bundled() for s in reg if s.valid}))
        make_file(path, args.lines, base, unique=True)
        make_file(repeated, args.lines, base, unique=False)
        size_mb = path.stat().st_size / 2**20
        print(
            f"input: {args.lines:,} records, {size_mb:.1f} MiB, every text distinct"
            f" (simulated prompt-only mix over the {len(reg)}-schema shipped registry)"
        )
        bench_parse_only(path)  # warm the page cache for every contender
        # Interleaved rounds, best of each: on a shared machine the load changes from second
        # to second, and the ratio should compare like with like.
        best: dict[str, float] = {}
        outs: dict[str, str] = {}
        contenders = {
            "parse": parse_only_cmd(path),
            "rs": rs_loop_cmd(path, schemas=schemas),
            "audit": audit_cmd(path, registry),
            "audit_repeated": audit_cmd(repeated, registry),
            "rs_repeated": rs_loop_cmd(repeated, schemas=schemas),
        }
        for _ in range(args.rounds):
            for key, cmd in contenders.items():
                t, outs[key] = timed(cmd)
                best[key] = min(best.get(key, float("inf")), t)
        t_naive, n_naive = bench_naive(path, args.naive_lines)
        doc = json.loads(outs["audit"])
        rs_counts = json.loads(outs["rs"])
        rate = {k: args.lines / t for k, t in best.items()}
        naive = n_naive / t_naive
        print(f"audit: p = {doc['p']:.4f}, p^20 = {doc['compound']['20']:.4f}, ok {doc['ok']:,}")
        print(f"jsonschema-rs loop: ok {rs_counts['ok']:,} (its own format rules)")
        print("whole processes, start-up included, best of", args.rounds, "rounds:")
        print(f"  orjson parse-only:             {rate['parse']:>10,.0f} lines/s")
        print(f"  jsonschema-rs loop:            {rate['rs']:>10,.0f} lines/s")
        print(f"  schemaops audit (defaults):    {rate['audit']:>10,.0f} lines/s")
        print(f"  naive jsonschema.validate:     {naive:>10,.0f} lines/s (first {n_naive:,})")
        vs_rs, vs_parse = rate["audit"] / rate["rs"], rate["audit"] / rate["parse"]
        print(f"  audit vs jsonschema-rs loop:   {vs_rs:.2f}x (target >= 1.0x)")
        print(f"  audit vs parse-only:           {vs_parse:.2f}x (target >= 0.5x)")
        print(f"  audit vs naive:                {rate['audit'] / naive:,.0f}x")
        print(
            "the verdict memo, on the same records with each text repeated"
            f" {args.lines // len({r['text'] for r in base}):,}x on average:"
        )
        print(f"  schemaops audit:               {rate['audit_repeated']:>10,.0f} lines/s")
        print(
            f"  vs jsonschema-rs loop:         {rate['audit_repeated'] / rate['rs_repeated']:.2f}x"
        )
        print(f"jobs: {doc.get('jobs')} ({os.cpu_count()} cores)")
        k, t_tree, t_plain = bench_explain(path, 2000)
        print(
            f"explaining {k:,} violations (same keyword, path, message): {t_tree / k * 1e6:,.0f} us"
            f" each skipping what the closure tree accepts, {t_plain / k * 1e6:,.0f} us with"
            f" best_match over the whole output ({t_plain / t_tree:.2f}x)"
        )
        for n in [int(x) for x in args.rss_lines.split(",") if x.strip()]:
            make_file(path, n, base, unique=True)
            out = subprocess.run(
                [sys.executable, __file__, "--rss-child", str(path)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            print(f"peak RSS auditing {n:>9,} lines: {float(out.strip().splitlines()[-1]):.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
