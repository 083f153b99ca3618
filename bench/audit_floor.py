"""How fast could any audit that keeps today's report be on this machine? (issue 24)

    python bench/audit_floor.py [--lines 200000] [--rounds 5] [--jobs 2]
    python bench/audit_floor.py --many ~/.cache/schemaops/bench/many-schemas --rounds 2

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

``--many DIR``: a many-schema workload, ``DIR/outputs.jsonl`` beside ``DIR/registry/``
(``audit_many_schemas.py --build-only`` caches 9,525 schemas, distinct texts, 64 % failing;
issue 36's (b) is ``audit_scale.py``'s file beside its registry), each worker owning a share
of the schemas (as the audit routes a large registry) and compiling each on its first line.
There L4 sets each schema up through the audit's own resolver (``SchemaResolver``: the
registry's check, or its facts cache, then the checker whose jsonschema-rs ``is_valid``
answers every line) and explains each failure with it, as the audit does.

``--warm``: the facts caches (the audit's and L4's, one each) are filled once before the
rounds and kept, as on a platform's second day (issue 36's (b) warm); without it each is
emptied before every round (cold).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "audits"))
sys.path.insert(0, str(REPO / "bench"))

LEVELS = ("forked", "imports", "facts", "failures")


def child(level: str, path: str, source: str, jobs: int, cache: str | None = None) -> int:
    """One floor layer, run as its own process: ``level`` is one of ``LEVELS``; ``source`` is
    a JSON file of ``{name: schema}`` (the 8-schema workload) or a registry folder (the
    many-schema one: each schema read and compiled on its first line, as ``rs_loop.py``
    does)."""
    import jsonschema_rs
    import orjson

    depth = LEVELS.index(level)
    folder = Path(source) if Path(source).is_dir() else None
    inline = None if folder is not None else orjson.loads(Path(source).read_bytes())
    if depth >= 1:
        import typer._adapters  # noqa: F401 (typer builds its parameters' coercion with it)

        import schemaops.audit.run.pipeline  # noqa: F401
        import schemaops.cli  # noqa: F401
    if depth >= 3:
        from schemaops.audit.verdict.classify import parse_output
        from schemaops.audit.verdict.validate import SchemaChecker
        from schemaops.errors import InputError
        from schemaops.registry.lazy import LazyRegistry

        # the registry's own check of a schema before it is trusted (metaschema, refs, the
        # strict parse): what makes an unusable schema an input error, as in the audit
        registry = LazyRegistry(folder if folder is not None else REPO / "schemas")
        resolver = None
        if folder is not None:  # many schemas: the audit's own resolver and facts cache
            from schemaops.audit.verdict.resolver import SchemaResolver

            resolver = SchemaResolver(None, folder, cache_dir=cache)
    size = os.path.getsize(path)
    cuts = [0]
    with open(path, "rb") as fh:
        for k in range(1, jobs):
            fh.seek(size * k // jobs)
            fh.readline()
            cuts.append(fh.tell())
    cuts.append(size)

    def first_use(name: str) -> tuple:
        if depth >= 3 and resolver is not None:
            try:
                checker = resolver.get(name)
            except InputError:
                return None, None
            if checker.quick is not None:  # its own yes/no: one compile, as in the audit
                return _Quick(checker.quick), checker
            return _Checked(checker), checker
        try:
            if inline is not None:
                schema = inline[name]
            else:
                schema = orjson.loads((folder / f"{name}.json").read_bytes())  # type: ignore[operator]
            validator = jsonschema_rs.validator_for(schema, validate_formats=True)
        except Exception:
            return None, None
        checker = None
        if depth >= 3:
            try:
                checked = registry.schema(name)
            except InputError:
                return None, None
            checker = SchemaChecker(name, checked.bundled(), checked=True)
        return validator, checker

    def work(lo: int, hi: int, mine: int) -> dict:
        """One worker's share; returns its outcomes by category (L4: the audit's own
        categories, which ``tests/test_bench_audit_floor.py`` holds to the audit's report;
        below L4 only ok and failed)."""
        loads, dumps = orjson.loads, orjson.dumps
        seen: dict = {}
        compiled: dict = {}
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
            found = compiled.get(name)
            if found is None:
                if mine >= 0 and hash(name) % jobs != mine:
                    compiled[name] = (None, None)  # another worker's schema
                    continue
                found = compiled[name] = first_use(name)
            validator, checker = found
            if validator is None:
                continue
            text = rec["text"]
            try:
                value = loads(text)
            except orjson.JSONDecodeError:
                if depth < 3:
                    seen["failed"] = seen.get("failed", 0) + 1
                    continue
                value, outcome = parse_output(text, orjson_failed=True)
                if outcome is None:  # the strict decoder reads what orjson did not
                    outcome = checker.check(value)
                seen[outcome.category] = seen.get(outcome.category, 0) + 1
                continue
            if depth >= 2:
                if value.__class__ is dict or value.__class__ is list:
                    back = dumps(value)
                    if text.count(":") != back.count(b":") or "\\u" in text:
                        pass
                ep = rec.get("episode_id")
                if ep is not None:
                    e = episodes.get(ep)
                    if e is None:
                        e = episodes[ep] = [0, 0]
                    e[0] += 1
                    step = rec.get("step")
                    st = steps.get(step)
                    if st is None:
                        st = steps[step] = [0, 0]
                    st[0] += 1
                meta = rec.get("meta_info")
                if meta is not None:
                    fr = meta.get("finish_reason")
                    kind = (name, fr.get("type"), meta.get("completion_tokens"))
                    lengths[kind] = lengths.get(kind, 0) + 1
            if validator.__class__ is _Checked:  # a schema jsonschema-rs cannot answer for
                category = checker.check(value).category
            elif validator.is_valid(value):
                category = "ok"
            elif checker is None:
                next(validator.iter_errors(value))
                category = "failed"
            elif validator.__class__ is _Quick:  # as the audit's lean loop hands it over
                category = checker.refused(value).category
            else:
                category = checker.check(value).category
            seen[category] = seen.get(category, 0) + 1
        return seen

    # the 8-schema workload: byte ranges; the many-schema one: every worker reads the whole
    # file and owns a share of the schemas (as the audit routes a large registry), so no
    # schema is compiled twice
    shares = (
        [(lo, hi, -1) for lo, hi in zip(cuts, cuts[1:], strict=False)]
        if folder is None
        else [(0, size, k) for k in range(jobs)]
    )
    pids = []
    for lo, hi, mine in shares:
        pid = os.fork()
        if pid == 0:
            try:
                seen = work(lo, hi, mine)
                os.write(1, orjson.dumps(seen) + b"\n")  # one line a worker (tests read it)
                if depth >= 3 and resolver is not None:
                    resolver.flush_cache()  # each worker's own schemas (the audit's workers
                    # hand theirs to the parent, which writes them once)
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
    ap.add_argument(
        "--many",
        type=Path,
        help="the many-schema workload's folder (audit_many_schemas.py --build-only, or"
        " audit_scale.py's (b) file as outputs.jsonl beside its registry/): L4 sets each schema"
        " up through the audit's own resolver",
    )
    ap.add_argument(
        "--warm",
        action="store_true",
        help="keep the facts caches (the audit's, L4's) filled across rounds: issue 36's (b) warm",
    )
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--cache", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(*args.child, jobs=args.jobs, cache=args.cache)
    from baselines import audit_cmd, byte_compile, parse_only_cmd, rs_loop_cmd, timed

    byte_compile()
    with tempfile.TemporaryDirectory() as tmp:
        if args.many is not None:
            path, registry = args.many / "outputs.jsonl", args.many / "registry"
            source, loop = registry, rs_loop_cmd(path, registry=registry)
            audit = audit_cmd(path, registry, "--cache-dir", str(Path(tmp) / "cache"))
            levels = LEVELS
            what = f"{sum(1 for _ in open(path, 'rb')):,} distinct lines, many-schema workload"
        else:
            path, registry = Path(tmp) / "outputs.jsonl", REPO / "schemas"
            source = write_workload(path, Path(tmp) / "schemas.json", args.lines, registry)
            loop, audit, levels = (
                rs_loop_cmd(path, schemas=source),
                audit_cmd(path, registry),
                LEVELS,
            )
            what = f"{args.lines:,} distinct lines, 8-schema workload"
        me = [sys.executable, __file__, "--jobs", str(args.jobs), "--child"]
        contenders = {"loop": loop}
        labels = {"loop": "jsonschema-rs loop, one process"}
        caches = [Path(tmp) / "cache", Path(tmp) / "l4-cache"]  # the audit's, L4's
        for level in levels:
            contenders[level] = [*me, level, str(path), str(source), "--cache", str(caches[1])]
            labels[level] = LABELS[level].format(jobs=args.jobs)
        contenders["audit"] = audit
        state = "warm" if args.warm else "cold"
        labels["audit"] = f"schemaops audit (defaults, {state} cache)"
        contenders["parse"] = parse_only_cmd(path)
        labels["parse"] = "orjson parse-only, one process"
        timed(contenders["loop"])  # page cache
        if args.warm:  # fill both facts caches once; every round then reads them
            timed(contenders["audit"])
            if "failures" in contenders:
                timed(contenders["failures"])
        best: dict[str, float] = {}
        for _ in range(args.rounds):
            if not args.warm:
                for cache in caches:
                    shutil.rmtree(cache, ignore_errors=True)
            for key, cmd in contenders.items():
                t, _out = timed(cmd)
                best[key] = min(best.get(key, float("inf")), t)
        print(
            f"{what}, {os.cpu_count()} cores,"
            f" best of {args.rounds} interleaved rounds (whole processes):"
        )
        for key, t in best.items():
            print(
                f"  {labels[key]:<40} {t:7.3f} s   {best['loop'] / t:5.2f}x the loop"
                f"   {best['parse'] / t:5.2f}x parse-only"
            )
    return 0


class _Quick:
    """A checker's own jsonschema-rs ``is_valid`` where the loop's validator stood (L4 with
    the audit's resolver: one compile a schema, as in the audit)."""

    __slots__ = ("is_valid",)

    def __init__(self, is_valid: Any) -> None:
        self.is_valid = is_valid


class _Checked:
    """A checker without a plain jsonschema-rs yes/no (its schema needs the watchdog or the
    closure tree): ``check`` answers every line, as in the audit."""

    __slots__ = ("checker",)

    def __init__(self, checker: Any) -> None:
        self.checker = checker


LABELS = {
    "forked": "L1 the loop forked into {jobs}",
    "imports": "L2 + the audit's imports",
    "facts": "L3 + per-line facts",
    "failures": "L4 + exact failures",  # many schemas: through the audit's resolver
}


def write_workload(path: Path, schemas: Path, lines: int, registry: Path) -> Path:
    """The 8-schema workload of ``audit_throughput.py`` at ``path``, its schemas at
    ``schemas`` (for the loop)."""
    from audit_throughput import make_file
    from generate_example import generate

    from schemaops.registry import load_registry

    reg = load_registry(registry)
    schemas.write_text(json.dumps({s.name: s.bundled() for s in reg if s.valid}))
    make_file(path, lines, generate(5000), unique=True)
    return schemas


if __name__ == "__main__":
    raise SystemExit(main())
