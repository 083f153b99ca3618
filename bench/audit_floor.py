"""How fast could any audit that keeps today's report be on this machine? (issue 24)

    python bench/audit_floor.py [--lines 200000] [--rounds 5] [--jobs 2]

The issue asks the whole ``schemaops audit`` process to be at least as fast as the
jsonschema-rs loop (``rs_loop.py``, one process). This bench builds the floor under that
target from the loop itself, one layer at a time, each a whole process timed in the same
interleaved rounds (best of ``--rounds``) on the 8-schema workload of
``audit_throughput.py`` (every text distinct):

- ``loop``: the jsonschema-rs loop, one process (the target's baseline);
- ``L1 forked loop``: the same loop forked into ``--jobs`` workers, each over its half of the
  file (what the machine's cores give a loop that does nothing more);
- ``L2 + imports``: L1 after importing what ``schemaops audit`` imports before its first line
  (the CLI with typer and the pydantic coercion typer's parameters use, jsonschema for the
  explanations, the audit library);
- ``L3 + per-line facts``: L2 plus what the report counts for every output, ok or not: the
  duplicate-key check (``orjson`` keeps the last of two equal keys silently), the episode and
  step counters (compound p per task), the SGLang finish reason and token count (the
  truncation budget);
- ``L4 + exact failures``: L3 plus what decides a failure's category, subtype, keyword, path
  and message: the audit's own checker on each violation (``best_match`` over the failing
  part) and its parse-failure classification;
- ``audit``: ``schemaops audit FILE --registry schemas --json``, default options;
- ``parse-only``: the orjson floor (``parse_only.py``), for the issue's other target (the
  audit at >= 0.5x its rate).

Each layer does strictly less than the audit (no report, no merge, no memo, no
``--records``): if L3 or L4 is slower than the loop, no implementation that keeps the audit's
output, with these libraries, meets the 1.0x target on this machine; if L4 is more than twice
the parse-only time, none meets the 0.5x parse-only target either. Ratios are printed as
loop time / layer time (above 1.0 is faster than the loop), and parse-only time / layer time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "audits"))
sys.path.insert(0, str(REPO / "bench"))

LEVELS = ("forked", "imports", "facts", "failures")


def child(level: str, path: str, schemas_path: str, jobs: int) -> int:
    """One floor layer, run as its own process: ``level`` is one of ``LEVELS``."""
    import jsonschema_rs
    import orjson

    depth = LEVELS.index(level)
    checkers: dict = {}
    if depth >= 1:
        import typer._adapters  # noqa: F401 (typer builds its parameters' coercion with it)

        import schemaops.audit.run.pipeline  # noqa: F401
        import schemaops.cli  # noqa: F401
    if depth >= 3:
        from schemaops.audit.verdict.classify import parse_output
        from schemaops.audit.verdict.validate import SchemaChecker
        from schemaops.registry import load_registry

        reg = load_registry(REPO / "schemas")
        checkers = {
            s.name: SchemaChecker(s.name, s.bundled(), checked=True) for s in reg if s.valid
        }
    schemas = orjson.loads(Path(schemas_path).read_bytes())
    validators = {
        n: jsonschema_rs.validator_for(s, validate_formats=True) for n, s in schemas.items()
    }
    size = os.path.getsize(path)
    cuts = [0]
    with open(path, "rb") as fh:
        for k in range(1, jobs):
            fh.seek(size * k // jobs)
            fh.readline()
            cuts.append(fh.tell())
    cuts.append(size)

    def work(lo: int, hi: int) -> None:
        loads, dumps = orjson.loads, orjson.dumps
        episodes: dict = {}
        steps: dict = {}
        lengths: dict = {}
        with open(path, "rb") as fh:
            fh.seek(lo)
            data = fh.read(hi - lo)
        for raw in data.split(b"\n"):
            if not raw:
                continue
            rec = loads(raw)
            name = rec.get("schema")
            text = rec["text"]
            try:
                value = loads(text)
            except orjson.JSONDecodeError:
                if depth >= 3:
                    parse_output(text)
                continue
            if depth >= 2:
                if value.__class__ is dict or value.__class__ is list:
                    back = dumps(value)
                    if text.count(":") != back.count(b":") or "\\u" in text:
                        pass
                ep = rec.get("episode_id")
                e = episodes.get(ep)
                if e is None:
                    e = episodes[ep] = [0, 0]
                e[0] += 1
                step = rec.get("step")
                s = steps.get(step)
                if s is None:
                    s = steps[step] = [0, 0]
                s[0] += 1
                meta = rec.get("meta_info")
                kind = (name, meta.get("finish_reason").get("type"), meta.get("completion_tokens"))
                lengths[kind] = lengths.get(kind, 0) + 1
            v = validators[name]
            if not v.is_valid(value):
                if depth >= 3:
                    checkers[name].check(value)
                else:
                    next(v.iter_errors(value))

    pids = []
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        pid = os.fork()
        if pid == 0:
            try:
                work(lo, hi)
            finally:
                os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(*args.child, jobs=args.jobs)
    from audit_throughput import make_file
    from baselines import audit_cmd, byte_compile, parse_only_cmd, rs_loop_cmd, timed
    from generate_example import generate

    from schemaops.registry import load_registry

    byte_compile()
    registry = REPO / "schemas"
    with tempfile.TemporaryDirectory() as tmp:
        path, schemas = Path(tmp) / "outputs.jsonl", Path(tmp) / "schemas.json"
        reg = load_registry(registry)
        schemas.write_text(json.dumps({s.name: s.bundled() for s in reg if s.valid}))
        make_file(path, args.lines, generate(5000), unique=True)
        me = [sys.executable, __file__, "--jobs", str(args.jobs), "--child"]
        contenders = {"loop": rs_loop_cmd(path, schemas=schemas)}
        labels = {"loop": "jsonschema-rs loop, one process"}
        for level, label in zip(
            LEVELS,
            (
                f"L1 the loop forked into {args.jobs}",
                "L2 + the audit's imports",
                "L3 + per-line facts",
                "L4 + exact failures",
            ),
            strict=True,
        ):
            contenders[level] = [*me, level, str(path), str(schemas)]
            labels[level] = label
        contenders["audit"] = audit_cmd(path, registry)
        labels["audit"] = "schemaops audit (defaults)"
        contenders["parse"] = parse_only_cmd(path)
        labels["parse"] = "orjson parse-only, one process"
        timed(contenders["loop"])  # page cache
        best: dict[str, float] = {}
        for _ in range(args.rounds):
            for key, cmd in contenders.items():
                t, _out = timed(cmd)
                best[key] = min(best.get(key, float("inf")), t)
        print(
            f"{args.lines:,} distinct lines, 8-schema workload, {os.cpu_count()} cores,"
            f" best of {args.rounds} interleaved rounds (whole processes):"
        )
        for key, t in best.items():
            print(
                f"  {labels[key]:<36} {t:6.3f} s   {best['loop'] / t:5.2f}x the loop"
                f"   {best['parse'] / t:5.2f}x parse-only"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
