"""``--jobs N``: audit byte ranges of one plain file in worker processes, then merge.

Why byte ranges: workers read their own slice of the file (no pickling of lines through a
pipe, which would cost as much as the audit). The parent only finds line-aligned cut points
(a few small reads, never a pass over the file); line numbers come from the merge (each
tally shifted by the lines before it) or, for ``--records``, from the slices' newlines counted
by the workers, so the merged tally, examples and ``--records`` file carry global line
numbers. Slices are capped in size
so memory stays flat however large the file is.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemaops.audit.read.extract import MAX_LINE_BYTES
from schemaops.audit.run.lines import audit_lines
from schemaops.audit.tally.stats import Tally
from schemaops.audit.verdict.resolver import SchemaResolver
from schemaops.errors import SchemaopsError
from schemaops.jsonl import OverlongLine, bounded_lines, is_gzip
from schemaops.watchdog import armed

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

MAX_SLICE = 16 << 20
#: the smallest slice the end of a file is cut into (``cut_points``' taper)
MIN_SLICE = 256 << 10
READ_BLOCK = 8 << 20
FIRST_BLOCK = 64 << 10


@contextmanager
def worker_pool(jobs: int) -> Iterator[ProcessPoolExecutor]:
    """``jobs`` worker processes (forked where the platform can). A worker that dies (killed,
    out of memory) is a bounded, explained failure, exit 2: not a traceback, and never exit
    1, which says a gate failed."""
    # imported here: a one-process audit (most runs, and every small input) needs neither
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        with ProcessPoolExecutor(
            max_workers=jobs, mp_context=mp.get_context(start_method())
        ) as pool:
            yield pool
    except BrokenProcessPool:
        raise SchemaopsError(
            "an audit worker process died (killed, or out of memory?): no report was made;"
            " run again, with fewer --jobs or more memory"
        ) from None


def start_method() -> str:
    """``fork`` (workers inherit the parent's compiled checks) when this process runs one
    thread, else ``forkserver`` (workers forked from a clean one-thread server, each building
    its own checks: ``worker_resolver``); ``spawn`` where neither exists.

    Why: a child forked while another thread holds a lock (the allocator's, logging's, an
    import lock) waits on it forever; Python 3.12 warns of it, and a test that forked from an
    xdist worker (execnet's threads) hung for 900 s in CI (2026-12-05). The CLI runs one
    thread; a library caller's program may not (and then needs the main-module guard that
    every ``forkserver`` pool needs: its workers import the caller's ``__main__``)."""
    import multiprocessing as mp
    import threading

    methods = mp.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


def remove_parts(parts: list[Any]) -> None:
    """Delete the ``--records`` part files a failed run leaves (missing ones are fine)."""
    for part in parts:
        if part:
            try:
                os.unlink(part)
            except OSError:
                pass


def can_split(path: str) -> bool:
    """Only a regular, uncompressed file can be cut into byte ranges."""
    if path == "-":
        return False
    p = Path(path)
    if not p.is_file():
        return False
    with open(p, "rb") as fh:
        return not is_gzip(fh.read(2), path)


def cut_points(path: str, jobs: int) -> list[int]:
    """Offsets from 0 to the file's size, each just after a newline: ``jobs * 4`` slices (or
    more, so none is over ``MAX_SLICE``), the last ones tapering.

    Why taper: workers take the next slice as they free up, so the run ends when the worker
    holding the last slice is done; with slices all alike the other sat idle for up to a
    slice's time (~0.3 s of an 8.7 s audit of 3M lines on 2 cores). Once less than
    ``2 * jobs`` slices are left, each slice is ``1 / (2 * jobs)`` of what is left, down
    to ``MIN_SLICE``: the last ones in flight are short."""
    size = os.path.getsize(path)
    n = max(jobs * 4, -(-size // MAX_SLICE), 1)
    step = max(1, size // n)
    taper = 2 * max(jobs, 1)
    cuts = [0]
    with open(path, "rb") as fh:
        pos = step
        while pos < size:
            cut = _after_newline(fh, pos)
            if cut >= size:
                break
            if cut > cuts[-1]:
                cuts.append(cut)
            at = max(cut, pos)
            pos = at + min(step, max(MIN_SLICE, (size - at) // taper))
    cuts.append(size)
    return cuts


def count_lines(args: tuple[str, int, int]) -> int:
    """The newlines in ``[start, end)`` of ``path`` (a worker's task: the lines before a
    slice give its first global line number)."""
    path, start, end = args
    n = 0
    with open(path, "rb") as fh:
        fh.seek(start)
        left = end - start
        while left > 0:
            block = fh.read(min(READ_BLOCK, left))
            if not block:
                break
            left -= len(block)
            n += block.count(b"\n")
    return n


def _after_newline(fh: Any, pos: int) -> int:
    """The offset just after the first newline at or after ``pos`` (or the end of the file),
    found block by block: a line of any length is never held in memory. The first block is
    small (a line is usually short: an 8 MiB read at each cut cost more than the search) and
    each next one twice the last, up to ``READ_BLOCK``."""
    fh.seek(pos)
    size = FIRST_BLOCK
    while True:
        block = fh.read(size)
        if not block:
            return pos
        i = block.find(b"\n")
        if i >= 0:
            return pos + i + 1
        pos += len(block)
        size = min(2 * size, READ_BLOCK)


class _SliceReader:
    """``readline`` over ``[start, end)`` of a file, for ``bounded_lines``."""

    def __init__(self, fh: Any, start: int, end: int) -> None:
        fh.seek(start)
        self.fh, self.left = fh, end - start

    def readline(self, size: int) -> bytes:
        if self.left <= 0:
            return b""
        line = self.fh.readline(min(size, self.left))
        self.left -= len(line)
        return line


_RESOLVER: list = []  # the parent's resolver, inherited by forked workers (one per process)


def worker_resolver(opts: Any) -> Any:
    """The resolver of a worker process: the parent's, inherited through the fork
    (``inherited``), else one built here. Schemas are compiled once per worker process, not
    once per slice (the registry load and compile cost as much as auditing 10,000 lines)."""
    if not _RESOLVER:
        _RESOLVER.append(SchemaResolver.for_options(opts))
    return _RESOLVER[0]


@contextmanager
def inherited(resolver: Any) -> Iterator[None]:
    """Workers forked inside the block start with ``resolver`` (its compiled checks and
    registry index), and nothing is left behind for a later run in this process."""
    _RESOLVER.clear()
    if resolver is not None:
        _RESOLVER.append(resolver)
    try:
        yield
    finally:
        _RESOLVER.clear()


def read_slice(fh: Any, start: int, end: int) -> Any:
    """The lines of ``[start, end)``: read whole and split in C when the slice is of the usual
    size; streamed when one huge line made it large (that line is never held)."""
    if end - start <= 2 * MAX_SLICE:
        fh.seek(start)
        lines = fh.read(end - start).split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        return [x if len(x) <= MAX_LINE_BYTES else OverlongLine() for x in lines]
    return bounded_lines(_SliceReader(fh, start, end), MAX_LINE_BYTES)


def _work(args: tuple) -> Tally:
    path, start, end, first_line, opts, part = args
    resolver = worker_resolver(opts)
    try:
        with open(path, "rb", buffering=1 << 20) as fh, armed(opts.timeout):
            lines = read_slice(fh, start, end)
            if part is None:
                return audit_lines(lines, opts, resolver, first_line)
            with open(part, "wb") as out:
                return audit_lines(lines, opts, resolver, first_line, out)
    finally:
        resolver.flush_cache()  # a pack per slice that compiled new schemas


def run_parallel(path: str, opts: Any, jobs: int, resolver: Any = None) -> Tally:
    """Audit ``path`` with ``jobs`` processes, each a byte range; tallies merge in file order.
    (A registry large enough to route by schema goes to ``routing.run_routed`` instead: the
    pipeline chooses.)

    Line numbers: with ``--records`` each worker is told its slice's first global line (the
    rows it writes carry it), from the slices' newlines counted by the workers in parallel
    (``count_lines``) before they audit: no serial pass over the file (issue 36). Without,
    each worker numbers its slice from 1 and the merge shifts its tally by the lines of the
    slices before it (``Tally.merge``'s ``line_offset``): the same report."""
    records = getattr(opts, "records", None)
    points = cut_points(path, jobs)
    spans = list(zip(points, points[1:], strict=False))
    if resolver is not None:
        for name in resolver.precompile_names():
            try:
                # compiled before forking (jsonschema-rs's check too): workers inherit them
                resolver.get(name).fast  # noqa: B018
            except SchemaopsError:
                pass  # reported per line, as in one process, if a record names it
        resolver.flush_cache()  # written once here, not once per forked worker
    parts = [f"{records}.part{i}" if records else None for i in range(len(spans))]
    total = Tally()
    try:
        with inherited(resolver), worker_pool(jobs) as pool:
            firsts = [1] * len(spans)
            if records:  # each slice's first global line: its newlines counted in parallel
                tasks = [(path, s, e) for s, e in spans]
                for i, n in enumerate(pool.map(count_lines, tasks)):
                    if i + 1 < len(firsts):
                        firsts[i + 1] = firsts[i] + n
            args = [
                (path, s, e, first, opts, part)
                for (s, e), first, part in zip(spans, firsts, parts, strict=False)
            ]
            for tally in pool.map(_work, args):
                total.merge(tally, 0 if records else total.lines)
    except BaseException:
        remove_parts(parts)
        raise
    if records:
        with open(records, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:  # type: ignore[arg-type]
                    shutil.copyfileobj(fh, out)
                os.unlink(part)  # type: ignore[arg-type]
    return total
