"""The new lines of one followed file past its offset: what ``follow.Follower`` reads once it
has decided which file to read and whether it is finished (rotated away, stopped growing).

Only complete lines are taken: a last line without its newline waits for the rest unless the
file is ``final`` (its writer is gone). A line longer than ``max_line`` is read past without
being held and given as an ``OverlongLine`` (an input error for the audit). A ``.gz`` is
complete when it appears: its last line needs no newline.
"""

from __future__ import annotations

import gzip
import os
import zlib

from schemaops.jsonl import OverlongLine, bounded_lines
from schemaops.watch.files import Tracked

#: bytes read from a plain file at once
CHUNK = 1 << 20


def plain_lines(
    t: Tracked, fd: int, size: int, budget: int, max_line: int, final: bool
) -> tuple[list[bytes], int]:
    """Complete lines of ``fd`` from ``t.offset`` up to ``size`` (``t`` advanced), until
    ``budget`` bytes are read; the lines and the budget left (<= 0: there is more)."""
    lines: list[bytes] = []
    while t.offset < size and budget > 0:
        buf = os.pread(fd, min(CHUNK, size - t.offset), t.offset)
        if not buf:
            break
        if t.skipping:  # inside an overlong line: up to its newline
            i = buf.find(b"\n")
            if i < 0:
                t.offset += len(buf)
                continue
            t.offset += i + 1
            t.skipping = False
            t.line += 1
            lines.append(OverlongLine())
            continue
        last = buf.rfind(b"\n")
        if last < 0:
            if not _long_line(t, fd, size, max_line, lines, final):
                break
            continue
        part = buf[:last].split(b"\n")
        lines.extend(part)
        t.line += len(part)
        t.offset += last + 1
        budget -= last + 1
    return lines, budget


def finish(t: Tracked, fd: int, size: int, max_line: int, lines: list[bytes]) -> None:
    """A rotated file that stopped growing: its last line (never completed) is consumed,
    and once it is read to its end the file is done."""
    if not t.skipping and t.offset < size:
        tail = os.pread(fd, min(size - t.offset, max_line), t.offset)
        if tail and b"\n" not in tail:
            lines.append(tail)
            t.line += 1
            t.offset += len(tail)
    if t.offset >= size:
        if t.skipping:  # the file ended inside an overlong line
            lines.append(OverlongLine())
            t.line += 1
            t.skipping = False
        t.done = True


def _long_line(
    t: Tracked, fd: int, size: int, max_line: int, lines: list[bytes], final: bool
) -> bool:
    """No newline in the next chunk: one line up to ``max_line`` bytes, or an overlong one
    to read past. False when the line is not complete yet (wait for the rest)."""
    buf = os.pread(fd, min(max_line + 1, size - t.offset), t.offset)
    i = buf.find(b"\n")
    if i >= 0:
        lines.append(buf[:i])
        t.line += 1
        t.offset += i + 1
        return True
    if len(buf) > max_line:
        t.skipping = True
        t.offset += len(buf)
        return True
    if final and buf:
        lines.append(buf)
        t.line += 1
        t.offset += len(buf)
        return True
    return False


def gz_lines(t: Tracked, budget: int, max_line: int) -> tuple[list[bytes], bool, str | None]:
    """Up to ``budget`` bytes of a complete ``.gz``'s lines past ``t.offset`` (of the
    decompressed stream); the lines, whether there is more, and why it broke (``t.done``
    once read to its end or broken)."""
    assert t.fh is not None
    lines: list[bytes] = []
    try:
        if t.lines_iter is None:
            t.fh.seek(0)
            t.gzs = gzip.GzipFile(fileobj=t.fh)
            t.gzs.seek(t.offset)
            t.lines_iter = bounded_lines(t.gzs, max_line)
        for line in t.lines_iter:  # a last line without newline is complete: the file is
            lines.append(line)
            t.line += 1
            t.offset = t.gzs.tell()
            budget -= len(line) + 1
            if budget <= 0:
                return lines, True, None
    except (EOFError, zlib.error, OSError) as exc:
        t.done = True
        return lines, False, type(exc).__name__
    t.done = True
    return lines, False, None
