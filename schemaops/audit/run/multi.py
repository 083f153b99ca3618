"""An audit over many shards: each shard audited on its own, the tallies merged in order.

Why per shard: the unit of work is then the same in one process, in ``--jobs`` worker
processes and in Ray tasks (``ray_audit.py``), and every runner merges the same
``ShardRun`` values the same way, so their reports are equal by construction:

- a shard is audited with line numbers counted from its own first line; ``absorb`` shifts
  them by the lines of the shards before it, so every line number in the report (examples,
  input errors, timeouts, duplicate keys, the ``poisoned`` run start) and in ``--records``
  is the line number in the concatenation of the shards in order; input errors, examples and
  ``--records`` rows also carry ``shard`` and ``shard_line`` (the line, or Parquet row, in
  that shard);
- counters add; episodes and steps are keyed by their id, so an episode whose steps are in
  several shards is the sum of its parts, exactly as in one pass (``Tally.merge``); the
  run-of-failures state behind ``poisoned`` is merged in order (``diagnose.merge_runs``);
- a shard that cannot be read (opening it, or a stream that breaks inside it) contributes
  nothing (neither counts nor ``--records`` rows) and is listed by name with the reason;
  the other shards are audited, and the run then exits 2 (input error) after its report.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO

from schemaops.audit.options import AuditOptions
from schemaops.audit.read.extract import MAX_LINE_BYTES
from schemaops.audit.read.shards import Shard, ShardError, range_lines, shard_lines
from schemaops.audit.run.lines import audit_lines
from schemaops.audit.tally.stats import Tally
from schemaops.audit.verdict.resolver import SchemaResolver
from schemaops.errors import InputError
from schemaops.watchdog import armed

UNREADABLE_LISTED = 100


@dataclass
class ShardRun:
    """What auditing one shard gives (pickled between processes and Ray tasks).

    ``first_line`` is the line number its tally and records start at (1 in a worker; the
    global line in the one-process runner, which writes ``--records`` as it goes).
    """

    index: int
    name: str
    first_line: int = 1
    tally: Tally | None = None
    records: bytes | None = None
    error: str | None = None
    #: CPU seconds the audit of this shard took in its process (Ray reports the sum)
    cpu_s: float = 0.0
    #: which byte range of its shard this is (0: the first, or the whole shard)
    piece: int = 0


@dataclass
class ShardsSummary:
    """How many shards the input had and which could not be read (the ``shards`` field)."""

    count: int = 0
    unreadable: list[dict] = field(default_factory=list)
    unreadable_count: int = 0
    #: lines of the current shard's earlier byte ranges (``absorb``; not reported)
    shard_base: int = 0
    #: paths skipped as a shard already read under another path (``shardlist.expand``)
    duplicates: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        doc = {
            "count": self.count,
            "audited": self.count - self.unreadable_count,
            "unreadable_count": self.unreadable_count,
            "unreadable": self.unreadable,
        }
        if self.duplicates:  # only when some were: the document is otherwise as before
            doc["duplicates_skipped"] = self.duplicates[:UNREADABLE_LISTED]
            doc["duplicates_skipped_count"] = len(self.duplicates)
        return doc


def audit_shard(
    shard: Shard,
    index: int,
    opts: AuditOptions,
    resolver: SchemaResolver,
    first_line: int = 1,
    records_out: IO[bytes] | None = None,
    span: tuple[int, int] | None = None,
) -> ShardRun:
    """Audit one shard into a ``ShardRun``; an unreadable shard gives its ``error`` instead.

    ``records_out``: where its ``--records`` rows go (a file in one process, a buffer in a
    worker, None without ``--records``). ``span``: only the lines that start in this byte
    range of an uncompressed JSONL shard (its line numbers then count from the range).
    """
    cpu = time.process_time()
    opened = (
        shard_lines(shard, MAX_LINE_BYTES)
        if span is None
        else range_lines(shard, span[0], span[1], MAX_LINE_BYTES)
    )
    try:
        with armed(opts.timeout), opened as lines:
            tally = audit_lines(lines, opts, resolver, first_line, records_out, shard.name)
    except ShardError as exc:
        return ShardRun(index, shard.name, first_line, error=str(exc))
    label(tally, shard.name, first_line)
    return ShardRun(index, shard.name, first_line, tally, cpu_s=time.process_time() - cpu)


def label(tally: Tally, name: str, first_line: int) -> None:
    """Name the shard and the line in it on each input error and example."""
    for entry in tally.input_error_lines:
        entry["shard"], entry["shard_line"] = name, entry["line"] - first_line + 1
    for exs in tally.examples.values():
        for entry in exs:
            entry["shard"], entry["shard_line"] = name, entry["line"] - first_line + 1


def shift(tally: Tally, by: int, shard_by: int = 0) -> None:
    """Add ``by`` to every global line number a tally holds (before it is merged), and
    ``shard_by`` to its ``shard_line``s."""
    for entry in tally.input_error_lines:
        entry["line"] += by
        if shard_by and "shard_line" in entry:
            entry["shard_line"] += shard_by
    for exs in tally.examples.values():
        for entry in exs:
            entry["line"] += by
            if shard_by and "shard_line" in entry:
                entry["shard_line"] += shard_by
    if not by:
        return
    tally.timeouts = [t + by for t in tally.timeouts]
    tally.duplicate_key_lines = [d + by for d in tally.duplicate_key_lines]
    for run in tally.fail_runs.values():
        run[0] += by


_LINE = re.compile(rb'^(\{"line": ?)(\d+)')
# The first '"shard_line":' of a row is the key: inside the shard name a '"' is escaped.
_SHARD_LINE = re.compile(rb'("shard_line": ?)(\d+)')


def shift_records(data: bytes, by: int, shard_by: int = 0) -> bytes:
    """Shift the leading ``"line"`` of each ``--records`` row (written first, by
    ``lines._write_record`` and ``lines._input_error``) by ``by``, and its ``shard_line`` by
    ``shard_by`` (a later byte range of its shard); the rest is kept byte for byte."""
    if not (by or shard_by) or not data:
        return data
    out = []
    for row in data.splitlines(keepends=True):
        m = _LINE.match(row)
        if m is None:  # cannot happen: every row starts with its line
            out.append(row)
            continue
        row = m.group(1) + str(int(m.group(2)) + by).encode() + row[m.end() :]
        if shard_by:
            k = _SHARD_LINE.search(row)
            if k is not None:
                row = row[: k.start(2)] + str(int(k.group(2)) + shard_by).encode() + row[k.end(2) :]
        out.append(row)
    return b"".join(out)


def absorb(
    total: Tally,
    summary: ShardsSummary,
    run: ShardRun,
    records_out: IO[bytes] | None = None,
) -> None:
    """Merge one shard's run into the total (runs must come in shard order)."""
    if run.error is not None:
        summary.unreadable_count += 1
        if len(summary.unreadable) < UNREADABLE_LISTED:
            summary.unreadable.append({"shard": run.name, "message": run.error})
        return
    assert run.tally is not None
    by = total.lines + 1 - run.first_line
    if run.piece == 0:
        summary.shard_base = 0
    shard_by = summary.shard_base  # a later byte range: count on from the ranges before it
    shift(run.tally, by, shard_by)
    total.merge(run.tally)
    summary.shard_base += run.tally.lines
    if records_out is not None and run.records:
        records_out.write(shift_records(run.records, by, shard_by))


def run_sequential(
    shards: list[Shard], opts: AuditOptions, resolver: SchemaResolver
) -> tuple[Tally, ShardsSummary]:
    """One process: shards in order, ``--records`` written as they go."""
    total, summary = Tally(), ShardsSummary(len(shards))
    rec_out = _open_out(opts.records) if opts.records else None
    try:
        for i, shard in enumerate(shards):
            pos = rec_out.tell() if rec_out is not None else 0
            run = audit_shard(shard, i, opts, resolver, total.lines + 1, rec_out)
            if run.error is not None and rec_out is not None:
                rec_out.seek(pos)  # an unreadable shard leaves no rows
                rec_out.truncate()
            absorb(total, summary, run)
    finally:
        if rec_out is not None:
            rec_out.close()
    return total, summary


_RESOLVER: list = []


@contextmanager
def inherited(opts: AuditOptions, resolver: SchemaResolver) -> Iterator[None]:
    """Shard workers forked inside the block start with the parent's ``resolver`` (its
    compiled checks), and nothing is left behind for a later run in this process."""
    _RESOLVER[:] = [(opts, resolver)]
    try:
        yield
    finally:
        _RESOLVER.clear()


def worker_resolver(opts: AuditOptions) -> SchemaResolver:
    """One resolver per worker process (compiling schemas costs as much as ~10,000 lines);
    rebuilt when a later run in the same process (a reused Ray worker) has other options."""
    if not _RESOLVER or _RESOLVER[0][0] != opts:
        _RESOLVER[:] = [(opts, SchemaResolver.for_options(opts))]
    return _RESOLVER[0][1]


def shard_task(
    name: str,
    index: int,
    opts: AuditOptions,
    path: str | None = None,
    span: tuple[int, int] | None = None,
    piece: int = 0,
) -> ShardRun:
    """One shard in a worker (a process of ``--jobs`` or a Ray task): lines counted from 1,
    ``--records`` rows kept in memory and returned with the tally. ``path``: where to open
    it, if not at ``name`` (a Ray worker's working folder is not the caller's); ``span``
    and ``piece``: one byte range of a big uncompressed shard, and which one it is."""
    cpu = time.process_time()  # the task's CPU time, the registry compile included
    buf = io.BytesIO() if opts.records else None
    try:
        resolver = worker_resolver(opts)
    except InputError as exc:  # checked by the caller first; a worker without the registry
        return ShardRun(index, name, error=f"cannot audit {name} here: {exc}")
    try:
        shard = Shard(name, path, opts.open_timeout)
        run = audit_shard(shard, index, opts, resolver, 1, buf, span)
    finally:
        resolver.flush_cache()
    run.piece = piece
    if buf is not None and run.error is None:
        run.records = buf.getvalue()
    run.cpu_s = time.process_time() - cpu
    return run


def _pool_task(args: tuple) -> ShardRun:
    return shard_task(*args)


def run_pool(shards: list[Shard], opts: AuditOptions, jobs: int) -> tuple[Tally, ShardsSummary]:
    """``--jobs N`` over shards: one shard per task, merged in shard order."""
    total, summary = Tally(), ShardsSummary(len(shards))
    from schemaops.audit.run.parallel import worker_pool

    args = [(s.name, i, opts, s.path) for i, s in enumerate(shards)]  # path: credentials
    rec_out = _open_out(opts.records) if opts.records else None
    try:
        with worker_pool(jobs) as pool:
            merge_in_order(total, summary, pool.map(_pool_task, args), rec_out)
    finally:
        if rec_out is not None:
            rec_out.close()
    return total, summary


def merge_in_order(
    total: Tally, summary: ShardsSummary, runs: Iterable[ShardRun], rec_out: IO[bytes] | None
) -> None:
    """Absorb runs that arrive in shard order."""
    for run in runs:
        absorb(total, summary, run, rec_out)


def _open_out(path: str) -> IO[bytes]:
    try:
        return open(path, "w+b")  # noqa: SIM115
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
