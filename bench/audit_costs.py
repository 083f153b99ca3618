"""Where a warm audit's CPU goes, line by line, next to the jsonschema-rs loop's (issue 36).

    python bench/audit_costs.py [--per-schema 20] [--rounds 3] [--json]
    python bench/audit_costs.py --file OUTPUTS.jsonl --registry DIR

``bench/audit_scale.py`` says how far the audit is from its targets; this says which of its
costs keeps it there, measured, so that "which floor stops which target" is a figure anyone
can reproduce rather than a profile read once. Two measurements, in one run:

1. **Whole processes, one worker** (``--jobs 1``, the facts cache warm, CPU seconds, least
   of ``--rounds``): the audit and the loop (``rs_loop.py``) over the workload, and over its
   first line of each schema. The second run is start-up plus first use of every schema; the
   difference, divided by the other lines, is each one's **CPU per line**.
2. **One instrumented audit in this process** (warm, ``--jobs 1``): the CPU time of each
   kind of failure, taken around the library's own functions, each kind's count and its
   share of the per-line cost:
   - a parse failure's naming (``classify.parse_output`` on a text orjson refused);
   - a violation explained by each way of ``SchemaChecker.explained``: the root's ``type``
     without a walk, located by jsonschema-rs and worded by jsonschema, or jsonschema's own
     ``best_match``;
   - counting a failure (``rows.count_failure``: its category, path, example, diagnoses).

   What is left (per line, minus the failures') is the cost every line pays: the record, the
   memo, orjson, ``is_valid``, the repeated-name test, the counters.

From those it prints, for each kind, the ratio to the loop the audit would reach with two
workers (perfectly split) if that kind cost nothing: a kind whose removal still leaves the
ratio under a target is not what stops it alone. The default workload is
``audit_scale.py``'s (b) (every JSONSchemaBench schema, distinct texts), at ``--per-schema``
outputs each. The instrumentation costs a little itself (two clock reads a failure), so the
kinds' sum is a slight overestimate of their share.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from audit_scale import default_workdir, jsb_workload, rounds_of, write_jsb  # noqa: E402
from baselines import audit_cmd, byte_compile, rs_loop_cmd  # noqa: E402

#: the kinds of failure timed in process, in the order printed
PARSE_KIND = "parse failure named"
COUNT_KIND = "failure counted"


def first_of_each_schema(src: Path, dest: Path, field: str = "schema") -> int:
    """The first line of each schema in ``src`` (start-up plus first use of every schema,
    with as few lines as that takes); returns its line count."""
    import orjson

    seen: set[Any] = set()
    with open(src, "rb") as fh, open(dest, "wb") as out:
        for line in fh:
            name = orjson.loads(line).get(field)
            key = json.dumps(name, sort_keys=True)
            if key not in seen:
                seen.add(key)
                out.write(line)
    return len(seen)


def count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(1 for _ in fh)


def whole_processes(path: Path, firsts: Path, registry: Path, cache: Path, rounds: int) -> dict:
    """CPU seconds of the audit (``--jobs 1``, cache warm) and of the loop, on the workload and
    on its first line of each schema; each one's CPU per line from the difference."""
    jobs = ("--jobs", "1", "--cache-dir", str(cache))
    rounds_of({"warm": {"cmd": audit_cmd(path, registry, *jobs)}}, 1)  # fills the cache
    best = rounds_of(
        {
            "audit": {"cmd": audit_cmd(path, registry, *jobs)},
            "audit_firsts": {"cmd": audit_cmd(firsts, registry, *jobs)},
            "loop": {"cmd": rs_loop_cmd(path, registry=registry)},
            "loop_firsts": {"cmd": rs_loop_cmd(firsts, registry=registry)},
        },
        rounds,
    )
    lines, first = count_lines(path), count_lines(firsts)
    out: dict[str, Any] = {"lines": lines, "schemas": first}
    for who in ("audit", "loop"):
        whole, start = best[who]["cpu_s"], best[f"{who}_firsts"]["cpu_s"]
        out[who] = {
            "cpu_s": round(whole, 3),
            "firsts_cpu_s": round(start, 3),
            "per_line_us": round((whole - start) / max(lines - first, 1) * 1e6, 2),
            "per_schema_us": round(start / max(first, 1) * 1e6, 1),
        }
    return out


def instrumented(path: Path, registry: Path, cache: Path) -> dict:
    """One warm ``--jobs 1`` audit in this process, each kind of failure timed (CPU)."""
    from schemaops.audit.run import lines
    from schemaops.audit.verdict.validate import EXPLAINED_BY, SchemaChecker
    from schemaops.cli import main

    # perf_counter, not process_time: the CPU clock is a system call on this VM (microseconds
    # a read, which inflated every kind); one thread, so a failure's wall is its CPU
    clock = time.perf_counter
    spent: dict[str, float] = {}
    count: dict[str, int] = {}

    def note(kind: str, seconds: float) -> None:
        spent[kind] = spent.get(kind, 0.0) + seconds
        count[kind] = count.get(kind, 0) + 1

    real_parse, real_count = lines.parse_output, lines.count_failure

    def parse_output(text: str, orjson_failed: bool = False) -> Any:
        t0 = clock()
        got = real_parse(text, orjson_failed)
        if got[1] is not None:  # a parse failure (an ok parse is the per-line cost)
            note(PARSE_KIND, clock() - t0)
        return got

    def count_failure(*a: Any, **k: Any) -> Any:
        t0 = clock()
        got = real_count(*a, **k)
        note(COUNT_KIND, clock() - t0)
        return got

    def timed_check(real: Any) -> Any:
        def check(self: Any, value: Any) -> Any:
            before, setting_up = dict(self.explained), set_up
            t0 = clock()
            got = real(self, value)
            took = clock() - t0 - (set_up - setting_up)
            way = next((w for w in EXPLAINED_BY if self.explained.get(w) != before.get(w)), None)
            if way is not None:  # a violation, explained this way (an ok is per-line cost)
                note(f"violation: {way}", took)
            return got

        return check

    real_prepare = SchemaChecker.prepare

    def prepare(self: Any) -> None:  # a schema's first failure: set-up, not the failure's cost
        nonlocal set_up
        t0 = clock()
        real_prepare(self)
        set_up += clock() - t0

    set_up = 0.0
    real_check, real_refused = SchemaChecker.check, SchemaChecker.refused
    lines.parse_output, lines.count_failure = parse_output, count_failure
    SchemaChecker.check, SchemaChecker.refused = timed_check(real_check), timed_check(real_refused)
    SchemaChecker.prepare = prepare
    argv = sys.argv
    sys.argv = [
        "schemaops",
        "audit",
        str(path),
        "--registry",
        str(registry),
        "--json",
        "--jobs",
        "1",
        "--cache-dir",
        str(cache),
    ]
    buf = io.StringIO()
    try:
        t0 = clock()
        with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
            main()
        total = clock() - t0
    finally:
        sys.argv = argv
        lines.parse_output, lines.count_failure = real_parse, real_count
        SchemaChecker.check, SchemaChecker.refused = real_check, real_refused
        SchemaChecker.prepare = real_prepare
    report = json.loads(buf.getvalue())
    return {
        "cpu_s": round(total, 3),
        "explanation_set_up_s": round(set_up, 3),
        "lines": report["lines"],
        "categories": report["categories"],
        "kinds": {
            k: {"count": count[k], "us_each": round(spent[k] / count[k] * 1e6, 2)}
            for k in sorted(count, key=lambda k: -spent[k])
        },
    }


def combine(proc: dict, inproc: dict) -> dict:
    """Each kind's share of the audit's per-line CPU, and the two-worker ratio to the loop
    with it (and then with every failure kind) at no cost."""
    lines = inproc["lines"]
    audit_line, loop_line = proc["audit"]["per_line_us"], proc["loop"]["per_line_us"]

    def two_workers(per_line: float) -> float:
        return round(loop_line / (per_line / 2), 2) if per_line > 0 else float("inf")

    kinds = {}
    failures = 0.0
    for kind, k in inproc["kinds"].items():
        share = k["count"] * k["us_each"] / lines
        failures += share
        kinds[kind] = {
            **k,
            "share_of_lines": round(k["count"] / lines, 4),
            "us_per_line": round(share, 2),
            "two_workers_vs_loop_without_it": two_workers(audit_line - share),
        }
    return {
        "audit_us_per_line": audit_line,
        "loop_us_per_line": loop_line,
        "two_workers_vs_loop": two_workers(audit_line),
        "failures_us_per_line": round(failures, 2),
        "every_line_us": round(audit_line - failures, 2),
        "two_workers_vs_loop_without_failures": two_workers(audit_line - failures),
        "kinds": kinds,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--file", type=Path, help="a workload (else audit_scale.py's (b))")
    ap.add_argument("--registry", type=Path, help="its registry (with --file)")
    ap.add_argument("--per-schema", type=int, default=20, help="(b) outputs per schema")
    ap.add_argument("--rounds", type=int, default=3, help="whole-process rounds (least CPU)")
    ap.add_argument("--workdir", type=Path, help="(b) workload cache")
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args(argv)
    if (args.file is None) != (args.registry is None):
        ap.error("--file and --registry go together")
    say = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    byte_compile()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        if args.file is not None:
            path, registry = args.file, args.registry
        else:
            with contextlib.redirect_stdout(sys.stderr):  # the builder's progress lines
                registry, unique, meta = jsb_workload(
                    args.workdir or default_workdir(), None, args.seed
                )
            path = tmp / "jsb.jsonl"
            n = write_jsb(path, unique, meta["schemas"], args.per_schema, args.seed)
            say(f"(b) {meta['schemas']:,} schemas x {args.per_schema} = {n:,} distinct outputs")
        firsts = tmp / "firsts.jsonl"
        first_of_each_schema(path, firsts)
        cache = tmp / "cache"
        proc = whole_processes(path, firsts, registry, cache, args.rounds)
        inproc = instrumented(path, registry, cache)
    doc = {"processes": proc, "in_process": inproc, "costs": combine(proc, inproc)}
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    c = doc["costs"]
    say(
        f"CPU per line, --jobs 1, warm: audit {c['audit_us_per_line']} us, loop"
        f" {c['loop_us_per_line']} us (per schema: audit {proc['audit']['per_schema_us']} us,"
        f" loop {proc['loop']['per_schema_us']} us); two workers would reach"
        f" {c['two_workers_vs_loop']}x the loop"
    )
    head = (("count", 9), ("share", 7), ("us each", 8), ("us/line", 8), ("2 workers without", 18))
    say(f"{'kind':34}" + "".join(f" {h:>{w}}" for h, w in head))
    for kind, k in c["kinds"].items():
        say(
            f"{kind:34} {k['count']:>9,} {k['share_of_lines']:>7.1%} {k['us_each']:>8.1f}"
            f" {k['us_per_line']:>8.2f} {k['two_workers_vs_loop_without_it']:>17}x"
        )
    say(
        f"every line pays {c['every_line_us']} us (the failures {c['failures_us_per_line']} us);"
        f" with every failure free two workers would reach"
        f" {c['two_workers_vs_loop_without_failures']}x the loop"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
