"""The audit as one straight line: line -> record -> text -> parse -> validate -> category ->
statistics. ``run_audit`` is the one library function the CLI calls.

The loop itself is ``lines.audit_lines``; ``--jobs N`` splits a plain file into byte ranges
on line boundaries, audits them in worker processes and merges the tallies
(``parallel.py``). This module picks one or the other and builds the result.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from schemaops.audit.options import AuditOptions
from schemaops.audit.read.extract import MAX_LINE_BYTES
from schemaops.audit.read.shards import Shard, is_regular, shard_lines
from schemaops.audit.run import routing
from schemaops.audit.run.lines import NO_SCHEMA, audit_lines
from schemaops.audit.run.parallel import can_split, run_parallel
from schemaops.audit.tally.stats import Tally
from schemaops.audit.verdict.resolver import SchemaResolver, collector_restored
from schemaops.errors import InputError
from schemaops.watchdog import armed

__all__ = ["NO_SCHEMA", "AuditOptions", "AuditResult", "audit_lines", "run_audit"]


@dataclass
class AuditResult:
    """The tally plus what the reports need to describe the run."""

    input: str
    options: AuditOptions
    tally: Tally
    elapsed_s: float
    jobs: int = 1
    schemas: dict[str, Any] = field(default_factory=dict)
    #: several input files (``multi.ShardsSummary.to_json``); None for one FILE argument
    shards: dict | None = None
    #: where ``--ray`` ran (``ray_audit.run_ray``); None without ``--ray``
    ray: dict | None = None

    @property
    def classified(self) -> int:
        return self.tally.outputs

    @property
    def total(self) -> int:
        return self.tally.outputs + self.tally.input_errors

    @property
    def p(self) -> float | None:
        return self.tally.ok / self.tally.outputs if self.tally.outputs else None

    def to_json(self) -> dict:
        from schemaops.audit.report.result import to_json

        return to_json(self)


def run_audit(
    path: str | Sequence[str], options: AuditOptions | None = None, tools: str | None = None
) -> AuditResult:
    """Audit a JSONL file (``-`` = stdin, gzip detected) and return the result.

    ``tools``: a registry tool set to judge every tool call against (``--tools``; the same
    as ``AuditOptions.tools``, which it overrides).

    ``path`` may also be several paths, folders, globs or URIs of JSONL, JSONL.gz and Parquet
    shards (``shards.py``): they are audited as their concatenation in that order, in one
    process, ``--jobs`` processes or Ray tasks (``--ray``), with the same report.

    Raises ``InputError`` (exit 2) for unreadable input, an unknown ``--schema``, or an input
    with no model output at all (an empty file, only blank lines, only unusable lines).
    """
    opts = options or AuditOptions()
    if tools is not None:
        opts = replace(opts, tools=tools)
    with collector_restored():
        return _run_audit(path, opts)


def _run_audit(path: str | Sequence[str], opts: AuditOptions) -> AuditResult:
    """``run_audit`` with the options resolved (its body, inside ``collector_restored``)."""
    start = time.perf_counter()
    resolver = SchemaResolver.for_options(opts)
    jobs = auto_jobs(opts.jobs, path)
    if not isinstance(path, str) or opts.ray is not None or _needs_shards(path):
        args = [path] if isinstance(path, str) else list(path)
        return _run_shards(args, opts, resolver, jobs, start)
    if path != "-" and not Path(path).exists():
        raise InputError(f"cannot read {path}: no such file")
    if jobs > 1 and can_split(path):
        if resolver.routes_by_schema():  # each worker owns a share of the schemas
            tally = routing.run_routed(path, opts, jobs, resolver)
        else:  # each worker audits a byte range
            tally = run_parallel(path, opts, jobs, resolver)
    else:
        jobs = 1
        try:
            # shard_lines: only a regular file (or '-') is read, a FIFO or device is refused
            with armed(opts.timeout), shard_lines(Shard(path), MAX_LINE_BYTES) as lines:
                if opts.records:
                    with _open_out(opts.records) as rec_out:
                        tally = audit_lines(lines, opts, resolver, 1, rec_out)
                else:
                    tally = audit_lines(lines, opts, resolver)
        finally:
            resolver.flush_cache()
    _check_outputs(path, tally, path)
    schemas = _schemas(tally, resolver)
    return AuditResult(path, opts, tally, time.perf_counter() - start, jobs, schemas)


#: ``--jobs 0`` uses every core from this input size on: below it, starting and merging the
#: workers costs about as much as they save (measured on the shipped registry's records)
AUTO_PARALLEL_BYTES = 8 << 20


def cores() -> int:
    """The cores this process may run on (its affinity where the platform says)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def auto_jobs(jobs: int, path: str | Sequence[str]) -> int:
    """``jobs`` when set; for 0, every core when the input is one regular file of
    ``AUTO_PARALLEL_BYTES`` or more, else 1 (shards and streams as before: one process)."""
    if jobs > 0:
        return jobs
    if not isinstance(path, str) or path == "-" or _needs_shards(path):
        return 1
    try:
        big = os.stat(path).st_size >= AUTO_PARALLEL_BYTES and is_regular(path)
    except OSError:
        big = False
    return cores() if big else 1


def _needs_shards(path: str) -> bool:
    """One argument the shard reader takes: a folder, a glob, a URI, or a Parquet file."""
    if path == "-":
        return False
    p = Path(path)
    if "://" in path or p.is_dir():
        return True
    if not p.exists():
        return any(c in path for c in "*?[")
    if path.lower().endswith((".parquet", ".pq")):
        return True
    if not is_regular(path):  # a FIFO would block this open: the reader refuses it
        return False
    try:
        with open(p, "rb") as fh:
            return fh.read(4) == b"PAR1"
    except OSError:
        return False


def _run_shards(
    args: list[str], opts: AuditOptions, resolver: SchemaResolver, jobs: int, start: float
) -> AuditResult:
    """Several shards: one process, ``--jobs`` processes (one shard per task) or Ray."""
    from schemaops.audit.read.shardlist import expand
    from schemaops.audit.run import multi

    if not args:
        raise InputError("no input given")
    skipped: list[dict] = []  # a file met again under another path: read once
    shards = expand(args, skipped, opts.open_timeout)
    if sum(s.name == "-" for s in shards) and len(shards) > 1:
        raise InputError("'-' (stdin) cannot be combined with other inputs")
    name = " ".join(args)
    ray_info = None
    if opts.ray is not None:
        from schemaops.audit.run.ray_audit import run_ray

        tally, summary, ray_info = run_ray(shards, opts, resolver)
        jobs = max(1, min(ray_info.get("cpus", 1), len(shards)))
    elif jobs > 1 and len(shards) > 1 and "-" not in {s.name for s in shards}:
        for schema in resolver.precompile_names():
            try:
                resolver.get(schema)  # compile before forking: workers inherit the checks
            except InputError:
                pass
        resolver.flush_cache()  # written once here, not once per forked worker
        with multi.inherited(opts, resolver):
            tally, summary = multi.run_pool(shards, opts, min(jobs, len(shards)))
        jobs = min(jobs, len(shards))
    else:
        jobs = 1
        try:
            tally, summary = multi.run_sequential(shards, opts, resolver)
        finally:
            resolver.flush_cache()
    summary.duplicates = skipped
    if summary.unreadable_count == summary.count:
        first = "; ".join(u["message"] for u in summary.unreadable[:3])
        raise InputError(f"{name}: no shard could be read ({first})")
    _check_outputs(name, tally)
    return AuditResult(
        name,
        opts,
        tally,
        time.perf_counter() - start,
        jobs,
        _schemas(tally, resolver),
        shards=summary.to_json(),
        ray=ray_info,
    )


def _check_outputs(path: str, tally: Tally, file: str | None = None) -> None:
    """Refuse a run with no model output (exit 2). ``file``: the one regular file audited,
    which may be a pretty-printed ``.json`` document (said as such, not line by line)."""
    if tally.outputs == 0:
        from schemaops.audit.report.inputerrors import no_output_message

        # One rule for an empty file, blank lines and only bad lines: nothing to estimate p
        # from and no gate that could pass, so it is an input error (exit 2), never "0 ok".
        if tally.lines == 0:
            raise InputError(f"{path}: no model output to audit (the input is empty)")
        spans = _one_document(file) if file is not None else None
        if spans is not None:
            raise InputError(
                f"{path}: expected one JSON record per line (JSONL), but the file is one JSON"
                f" document over {spans:,} lines (pretty-printed): write each record on a"
                " line of its own"
            )
        raise InputError(no_output_message(path, tally.input_errors, tally.input_error_lines))


#: the largest file read whole to tell a pretty-printed JSON document from broken JSONL
ONE_DOCUMENT_MAX = 64 << 20


def _one_document(path: str) -> int | None:
    """The number of lines of ``path`` when it is one JSON document over several lines (a
    pretty-printed ``.json`` file), else None. Only asked when no line was a record."""
    import orjson

    if path == "-" or not is_regular(path):
        return None
    try:
        if os.path.getsize(path) > ONE_DOCUMENT_MAX:
            return None
        data = Path(path).read_bytes()
    except OSError:
        return None
    lines = data.rstrip(b"\n").count(b"\n") + 1
    if lines < 2:
        return None
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return lines


def _schemas(tally: Tally, resolver: SchemaResolver) -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for name in sorted(tally.by_schema):
        if name == NO_SCHEMA:
            continue
        if name in tally.fast_path:  # the checkers that ran (in this process or a worker)
            schemas[name] = {"fast_path": tally.fast_path[name]}
        else:
            try:
                checker = resolver.fixed or resolver.get(name)
                schemas[name] = {"fast_path": checker.fast_path}
            except InputError as exc:  # cannot happen for a schema that classified outputs;
                schemas[name] = {"fast_path": None, "error": str(exc)}  # shown if it does
    return schemas


def _open_out(path: str) -> IO[bytes]:
    try:
        return open(path, "wb")  # noqa: SIM115
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
