"""``audit --ray [ADDRESS]``: each shard audited as one Ray task, the runs merged in order.

The task is ``multi.shard_task``, the same function ``--jobs`` runs in its processes, and the
driver merges with ``multi.absorb``, as the one-process runner does; so the report equals the
single-process audit of the same shards (and of their concatenation) by construction, and the
tests check it field by field. Why that holds for what is not a plain sum:

- line numbers: a task counts from its shard's first line; the driver shifts each run by the
  lines of the shards before it, in shard order, whatever order tasks finish in;
- episodes and steps are keyed by their id, so the per-episode (outputs, failures) of an
  episode cut across shards is the sum of its parts, and every episode figure is a function
  of those sums; no boundary state is needed;
- ``poisoned`` (a run of failures to the end of the input) is merged in shard order by
  ``diagnose.merge_runs``, as ``--jobs`` does;
- a task is a pure function of (shard, options): its ``--records`` rows come back with its
  tally, not written on the worker, so a task that Ray retries after its worker or node died
  gives the same result once: nothing is lost or counted twice. A shard whose task still
  fails after Ray's retries is listed in ``shards.unreadable`` (exit 2), as an unreadable one.

Every node needs the registry (and a ``--schema`` file) at the same absolute path, and the
shards at their paths or URIs (a shared file system or object storage).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from typing import Any

from schemaops.audit.options import AuditOptions
from schemaops.audit.read.shards import Shard, plain_size
from schemaops.audit.run.multi import ShardRun, ShardsSummary, absorb, shard_task
from schemaops.audit.tally.stats import Tally
from schemaops.audit.verdict.resolver import SchemaResolver
from schemaops.errors import InputError

#: Ray retries a task whose worker process or node died this many times (then ``_lost``).
TASK_RETRIES = 3
#: An uncompressed JSONL shard larger than this is audited as byte ranges of this size, one
#: task each (gzip and Parquet shards are one task each: they cannot be cut).
PIECE_BYTES = 64 << 20


def portable(opts: AuditOptions) -> AuditOptions:
    """The options with local paths made absolute: a Ray worker runs in its own folder."""

    def absolute(p: str | None) -> str | None:
        return os.path.abspath(p) if p and "://" not in p and os.path.exists(p) else p

    return dataclasses.replace(
        opts,
        registry=absolute(opts.registry) or opts.registry,
        schema=absolute(opts.schema),
        cache_dir=absolute(opts.cache_dir),
        jobs=1,
        ray=None,
    )


def _location(shard: Shard) -> str | None:
    if shard.is_uri:
        return shard.path  # the URI as given (its credentials); ``name`` is the shown form
    if shard.name == "-":
        raise InputError("--ray cannot read stdin ('-'): give files, a folder, a glob or URIs")
    return os.path.abspath(shard.name)


def run_ray(
    shards: list[Shard],
    opts: AuditOptions,
    resolver: SchemaResolver,
    piece_bytes: int | None = None,
) -> tuple[Tally, ShardsSummary, dict[str, Any]]:
    """Audit ``shards`` as Ray tasks on the cluster at ``opts.ray`` and merge them in order.

    ``resolver`` was built by the caller, so a bad ``--schema`` or registry fails here
    (exit 2) before any task starts."""
    from schemaops.raycluster import connect, disconnect, map_tasks, require_ray

    wopts = portable(opts)
    payloads = _payloads(shards, wopts, piece_bytes or PIECE_BYTES)
    ours = not require_ray().is_initialized()
    # Ray's driver prints cluster events ("Task _ray_task failed ... will be retried") on
    # sys.stdout from a thread of its own: they go to stderr, so that stdout holds only the
    # --json document; a connection this run made is closed inside, so none come later.
    with contextlib.redirect_stdout(sys.stderr):
        try:
            info = connect(opts.ray)
            runs = map_tasks(_ray_task, payloads, lost=_lost, max_retries=TASK_RETRIES)
        finally:
            if ours:
                disconnect()
    total, summary = Tally(), ShardsSummary(len(shards))
    rec_out = open(opts.records, "w+b") if opts.records else None  # noqa: SIM115
    try:
        for run in whole_shards(runs):  # in shard order, whatever order tasks finished in
            absorb(total, summary, run, rec_out)
    finally:
        if rec_out is not None:
            rec_out.close()
    cpu_s = round(sum(r.cpu_s for r in runs), 3)  # what the audit cost the cluster
    return total, summary, {**info, "tasks": len(payloads), "task_cpu_s": cpu_s}


def _payloads(shards: list[Shard], wopts: AuditOptions, piece_bytes: int) -> list[tuple]:
    """One task per shard, or per ``piece_bytes`` byte range of a big uncompressed one
    (the ranges cut anywhere: each task reads the lines that start in its range)."""
    out: list[tuple] = []
    for i, s in enumerate(shards):
        loc = _location(s)
        size = plain_size(Shard(s.name, loc)) if piece_bytes > 0 else None
        if size is None or size <= piece_bytes:
            out.append((s.name, i, wopts, loc, None, 0))
            continue
        for k, start in enumerate(range(0, size, piece_bytes)):
            out.append((s.name, i, wopts, loc, (start, min(start + piece_bytes, size)), k))
    return out


def whole_shards(runs: list[ShardRun]) -> list[ShardRun]:
    """The runs in order, with a shard one of whose byte ranges failed as one failed run:
    an unreadable shard contributes nothing, as in one process."""
    failed: dict[int, ShardRun] = {}
    for r in runs:
        if r.error is not None and r.index not in failed:
            failed[r.index] = r
    out: list[ShardRun] = []
    for r in runs:
        if r.index in failed:
            if failed[r.index] is r:
                out.append(r)
            continue
        out.append(r)
    return out


def _lost(payload: tuple, exc: BaseException) -> ShardRun:
    """A shard whose task failed after Ray's retries (its node died each time, or a crash)."""
    name, index, piece = payload[0], payload[1], payload[5]
    text = str(exc).strip().splitlines()
    reason = f"{type(exc).__name__}: {text[0][:300] if text else ''}"
    msg = f"{name}: not audited: its Ray task failed: {reason}"
    return ShardRun(index, name, error=msg, piece=piece)


def _ray_task(payload: tuple) -> ShardRun:
    """What a Ray worker runs (a module function, so Ray pickles it by reference)."""
    name, index, opts, path, span, piece = payload
    return shard_task(name, index, opts, path, span, piece)
