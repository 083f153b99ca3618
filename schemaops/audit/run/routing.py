"""``--jobs N`` on a large registry: each worker audits the outputs of its own schemas.

Why not byte ranges here: on a platform log (thousands of schemas, a few outputs each) every
byte range names nearly every schema, so every worker pays every schema's first-use cost
(loading, checking and compiling it: about as much as auditing its outputs). Measured on the
JSONSchemaBench workload (``bench/audit_many_schemas.py``), two byte-range workers took longer
than one process. Here each schema has one home worker (registry schemas balanced by the
bytes of their files, ``balanced_homes``; other names by a hash), so it is loaded
and compiled once in the whole run.

Every worker reads the whole file, but only parses the record envelope of a line it does not
own (the output's text is parsed and validated by the owner alone). A schema that holds a large
share of the outputs (``hot``, seen in a sample spread over the file) would make its home worker
the bottleneck, so its outputs are split by line range instead, like ``parallel.py``'s byte
ranges: worker k audits the hot schemas' outputs, the schema-less outputs, the unusable lines
and the line count of the k-th line range.

The merge is exact, equal to one process:
- counters add up;
- a schema's trailing run of failures (``diagnose.note_run``) lives in one worker for a homed
  schema, and in range order for a hot one, so ``Tally.merge`` in worker order joins it as it
  joins byte ranges;
- the capped lists (first examples, input-error lines, timeouts) are re-cut from the union of
  every worker's first few, sorted by line and by the output's position in its line;
- ``--records`` parts carry a ``line ordinal`` prefix and are merged by it (``heapq.merge``).

No serial pass before the workers: the file is cut at line-aligned byte offsets
(``parallel.cut_points``, a few small reads) and each worker numbers the lines itself as it
reads them from the start (``numbered_slices``).
"""

from __future__ import annotations

import heapq
import os
import zlib
from collections import Counter
from collections.abc import Iterator
from typing import IO, Any

import orjson

from schemaops.audit.read.extract import MAX_LINE_BYTES, RecordError, find_outputs, parse_record
from schemaops.audit.run import parallel
from schemaops.audit.tally.stats import (
    EXAMPLES_PER_CATEGORY,
    INPUT_ERROR_LINES,
    TIMEOUT_LINES,
    Tally,
)
from schemaops.jsonl import bounded_lines
from schemaops.watchdog import armed

#: bytes of the file read to find the hot schemas, in windows spread over it
SAMPLE_BYTES = 4 << 20
SAMPLE_WINDOWS = 4
#: a schema with at least this share of a worker's fair load (1/N) in the sample is hot
HOT_SHARE = 0.25


class Route:
    """Which outputs worker ``k`` of ``n`` audits: its schemas' outputs, and everything of
    the lines of slices ``[first, end)`` that has no home (hot schemas, schema-less outputs,
    unusable lines). ``lo``/``hi``: that range as line numbers ``[lo, hi)``, set by
    ``numbered_slices`` as the worker reads (what ``lines.audit_lines`` tests)."""

    def __init__(
        self,
        k: int,
        n: int,
        first: int,
        end: int,
        hot: frozenset[str],
        homes: dict[str, int] | None = None,
    ) -> None:
        self.k, self.n, self.first, self.end, self.hot = k, n, first, end, hot
        self.lo = self.hi = 0  # no line is in range until numbered_slices reaches ``first``
        # the registry's schemas placed by ``balanced_homes``; any other name by ``home``
        self._home: dict[str, bool] = {name: h == k for name, h in (homes or {}).items()}

    def owns(self, name: str | None, in_range: bool) -> bool:
        """Whether this worker audits an output of schema ``name`` on a line (in its range?)."""
        if name is None or name in self.hot:
            return in_range
        mine = self._home.get(name)
        if mine is None:
            mine = self._home[name] = home(name, self.n) == self.k
        return mine


def balanced_homes(sizes: dict[str, int], n: int, hot: frozenset[str]) -> dict[str, int]:
    """Each schema's worker, balancing the bytes of their files (largest first, each to the
    least loaded worker; ties by name, so the same in every process).

    Why bytes: a schema's first-use cost (read, hash, parse, scan, its closure tree) grows
    with its size, and on the platform workload the crc32 split gave one of two workers 8 %
    more schema bytes, and that worker was the last to finish by about as much."""
    loads = [(0, k) for k in range(n)]
    out: dict[str, int] = {}
    for name in sorted(sizes, key=lambda x: (-sizes[x], x)):
        if name in hot:
            continue
        load, k = heapq.heappop(loads)
        out[name] = k
        heapq.heappush(loads, (load + sizes[name] + FIXED_COST_BYTES, k))
    return out


#: a schema's cost beyond its bytes (setup and its outputs), in bytes of the same cost
FIXED_COST_BYTES = 2048


def home(name: str, n: int) -> int:
    """A schema's home worker: the same in every process (unlike ``hash``, salted per run)."""
    return zlib.crc32(str(name).encode("utf-8", "surrogatepass")) % n


class KeyedRows:
    """A ``--records`` part whose rows start with ``line ordinal `` (for the ordered merge)."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh = fh
        self.key = b""

    def write(self, row: bytes) -> int:
        return self.fh.write(self.key + row)


def hot_schemas(path: str, opts: Any, resolver: Any, jobs: int) -> frozenset[str]:
    """Schemas holding at least ``HOT_SHARE / jobs`` of the outputs in a sample of the file
    (four 1 MiB windows at its start, quarter, middle and three quarters)."""
    from schemaops.audit.run.lines import tool_schema_picker

    counts: Counter = Counter()
    pick = tool_schema_picker(resolver)
    lines: list[bytes] = []
    size = os.path.getsize(path)
    if size <= SAMPLE_BYTES:
        windows = [(0, size + 1)]  # the whole file
    else:  # spread over the file: a schema that is hot only later counts too
        each = SAMPLE_BYTES // SAMPLE_WINDOWS
        windows = [(size * i // SAMPLE_WINDOWS, each) for i in range(SAMPLE_WINDOWS)]
    with open(path, "rb") as fh:
        for start, length in windows:
            fh.seek(start)
            block = fh.read(length)
            part = block.split(b"\n")
            if start > 0:
                part = part[1:]  # starts mid-line
            if len(block) == length:
                part = part[:-1]  # ends mid-line
            lines += part
    for raw in lines:
        try:
            rec = orjson.loads(raw)
        except orjson.JSONDecodeError:
            try:
                rec = parse_record(raw)
            except RecordError:
                continue
        try:
            outs = find_outputs(rec, opts.field, opts.schema_field, pick, raw)
        except RecordError:
            continue
        for out in outs:
            if out.schema is not None:
                counts[out.schema] += 1
    total = sum(counts.values())
    if not total:
        return frozenset()
    cut = HOT_SHARE * total / jobs
    return frozenset(name for name, c in counts.items() if c >= cut)


def _work(args: tuple) -> Tally:
    """Worker ``route.k``: every slice of the file in order, its own outputs only."""
    path, spans, opts, route, part = args
    from schemaops.audit.run.lines import audit_lines

    resolver = parallel.worker_resolver(opts)
    total = Tally()
    out = open(part, "wb") if part else None  # noqa: SIM115 (closed below)
    try:
        keyed = KeyedRows(out) if out is not None else None
        with open(path, "rb", buffering=1 << 20) as fh, armed(opts.timeout):
            # one pass over the slices in order, read one at a time (flat memory): line
            # numbers run on from slice to slice, as in one process, and there is one tally
            # to build instead of one per slice merged (thousands of schemas' counters each)
            lines = numbered_slices(fh, spans, route)
            total = audit_lines(lines, opts, resolver, 1, keyed, route=route)  # type: ignore[arg-type]
    finally:
        if out is not None:
            out.close()
        resolver.flush_cache()
    return total


def numbered_slices(fh: IO[bytes], spans: list[tuple[int, int]], route: Route) -> Iterator[Any]:
    """The lines of every slice in order; on reaching slice ``route.first`` (then
    ``route.end``) the route's line range opens (then closes) at the next line's number.

    Why here: the line range of the hot schemas is a range of slices, and only a reader that
    has counted the lines before it knows where it starts. Every worker reads the file from
    its start anyway, so it counts them itself: the parent no longer counts every newline of
    the file before any worker starts (issue 36; a serial pass as long as reading the file)."""
    n = 0
    route.lo = route.hi = 0
    for i, (start, end) in enumerate(spans):
        if i == route.first:
            route.lo, route.hi = n + 1, 1 << 62
        if i == route.end:
            route.hi = n + 1
        for line in parallel.read_slice(fh, start, end):
            n += 1
            yield line


def slice_ranges(spans: list[tuple[int, int]], jobs: int) -> list[tuple[int, int]]:
    """``jobs`` contiguous ranges of slice indices of about equal bytes: worker k's share of
    the lines that have no home (``Route``), as (first slice, end slice)."""
    size = spans[-1][1] if spans else 0
    bounds = [0]
    for k in range(1, jobs):
        target = size * k // jobs
        first = next((i for i, (s, _e) in enumerate(spans) if s >= target), len(spans))
        bounds.append(max(first, bounds[-1]))
    bounds.append(len(spans))
    return list(zip(bounds, bounds[1:], strict=False))


def run_routed(path: str, opts: Any, jobs: int, resolver: Any) -> Tally:
    """Audit ``path`` with ``jobs`` workers, each owning its schemas (see the module doc)."""
    cuts = parallel.cut_points(path, jobs)  # line-aligned offsets: no newline counted here
    spans = list(zip(cuts, cuts[1:], strict=False))
    hot = hot_schemas(path, opts, resolver, jobs)
    ranges = slice_ranges(spans, jobs)
    records = getattr(opts, "records", None)
    parts = [f"{records}.part{k}" if records else None for k in range(jobs)]
    homes = balanced_homes(resolver.schema_sizes(), jobs, hot)
    args = [
        (path, spans, opts, Route(k, jobs, first, end, hot, homes), parts[k])
        for k, (first, end) in enumerate(ranges)
    ]
    resolver.flush_cache()  # the index's entries: written once here, not once per worker
    try:  # forked workers share the registry index
        with parallel.inherited(resolver), parallel.worker_pool(jobs) as pool:
            tallies = list(pool.map(_work, args))
    except BaseException:
        parallel.remove_parts(parts)
        raise
    total = merge_routed(tallies)
    if records:
        merge_records(records, [p for p in parts if p])
    return total


def merge_routed(tallies: list[Tally]) -> Tally:
    """One tally equal to a single process's: see the module doc."""
    total = Tally()
    for t in tallies:
        total.merge(t)  # counters, runs (worker order = range order for hot schemas)

    def cut(lists: list[list[Any]], cap: int, key: Any) -> list[Any]:
        return sorted((x for xs in lists for x in xs), key=key)[:cap]

    def ordered(e: dict) -> tuple[int, int]:
        return e["line"], e.get("_ord", 0)

    total.input_error_lines = _strip(
        cut([t.input_error_lines for t in tallies], INPUT_ERROR_LINES, ordered)
    )
    firsts: dict[str, tuple[int, int]] = {}  # category -> its first example's place
    for t in tallies:
        for k, exs in t.examples.items():
            if exs:
                firsts[k] = min(firsts.get(k, (1 << 62, 0)), ordered(exs[0]))
    total.examples = {
        k: _strip(cut([t.examples.get(k, []) for t in tallies], EXAMPLES_PER_CATEGORY, ordered))
        for k in sorted(firsts, key=firsts.__getitem__)
    }
    total.timeouts = cut([t.timeouts for t in tallies], TIMEOUT_LINES, None)
    total.duplicate_key_lines = cut([t.duplicate_key_lines for t in tallies], TIMEOUT_LINES, None)
    return total


def _strip(entries: list[dict]) -> list[dict]:
    for e in entries:
        e.pop("_ord", None)
    return entries


def _keyed_rows(part: str) -> Iterator[tuple[int, int, bytes]]:
    with open(part, "rb") as fh:
        for row in bounded_lines(fh, MAX_LINE_BYTES + (1 << 20)):
            line, ordinal, rest = row.split(b" ", 2)
            yield int(line), int(ordinal), rest


def merge_records(dest: str, parts: list[str]) -> None:
    """The workers' ``--records`` parts, merged in (line, position in line) order."""
    try:
        with open(dest, "wb") as out:
            for _line, _ord, row in heapq.merge(*(_keyed_rows(p) for p in parts)):
                out.write(row)
    finally:
        for p in parts:
            try:
                os.unlink(p)
            except OSError:
                pass
