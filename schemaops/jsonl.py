"""Bounded reading of JSONL inputs: the one line reader of ``audit`` and ``warm --from-log``.

Both read logs that may be huge, gzipped or hostile (a gzip member that expands to one
endless line, bytes that are not UTF-8, a stream that breaks halfway). Each caller keeps its
own line cap (audit 32 MiB per record, a request log 64 MiB per request body) and its own
name for the input; the rules are the same for both:

- ``-`` is stdin; gzip is recognised by its magic bytes or a ``.gz`` name;
- a line longer than the cap is read past in cap-sized pieces and yielded as an empty
  ``OverlongLine``, so memory stays bounded and the caller reports it by its line number;
- a stream that breaks (a truncated or corrupt gzip member, bad deflate data, an I/O error)
  is an ``InputError`` (exit 2) naming the last line read, never a traceback;
- ``not_utf8`` words a line that is not UTF-8 the same way wherever it is reported.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from schemaops.errors import InputError

# What a broken stream raises: gzip.BadGzipFile is an OSError, bad deflate data is zlib.error.
STREAM_ERRORS = (OSError, EOFError, zlib.error)


class OverlongLine(bytes):
    """Stands for a line longer than the cap: its text is dropped, never held."""


def is_gzip(head: bytes, path: str) -> bool:
    """A gzip stream by its first two bytes, or by a ``.gz`` name."""
    return head[:2] == b"\x1f\x8b" or str(path).endswith(".gz")


def bounded_lines(stream: BinaryIO, limit: int) -> Iterator[bytes]:
    """The lines of ``stream``, none longer than ``limit`` bytes (plus its newline) in memory.

    A longer line is read past in ``limit``-sized pieces and yielded as an ``OverlongLine``.
    """
    readline = stream.readline
    while True:
        line = readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n") and len(line) == limit + 1:
            yield line
            continue
        while not line.endswith(b"\n"):
            line = readline(limit)
            if not line:
                break
        yield OverlongLine()


#: what ``block_lines`` reads at a time
BLOCK = 1 << 20


def block_lines(
    stream: BinaryIO,
    limit: int,
    name: str,
    errors: tuple[type[BaseException], ...] = STREAM_ERRORS,
    error: type[InputError] = InputError,
) -> Iterator[bytes]:
    """The lines of ``stream`` without their newline, read ``BLOCK`` bytes at a time and split
    in C; none longer than ``limit`` bytes is held (it is read past and yielded as an
    ``OverlongLine``). A broken stream raises ``error`` naming ``name`` and the last line
    read, as ``checked_lines`` does.

    Why not ``bounded_lines``: ``readline`` plus two generator layers cost more per line than
    the audit's whole check of a valid output (issue 24). Lines come without their newline
    (as ``--jobs`` workers' slices always did); readers that copy a line out keep using
    ``bounded_lines``.
    """
    n = 0
    read = stream.read
    pending: list[bytes] = []  # pieces of a line longer than a block, not yet ended
    held = 0
    skipping = False  # inside a line longer than ``limit``: dropped up to its newline
    while True:
        try:
            block = read(BLOCK)
        except errors as exc:
            raise error(f"{name}: unreadable after line {n}: {type(exc).__name__}: {exc}") from None
        if not block:
            break
        cut = block.find(b"\n")
        if cut < 0:
            if not skipping:
                pending.append(block)
                held += len(block)
                if held > limit:
                    skipping, pending, held = True, [], 0
            continue
        if skipping:
            skipping = False
            n += 1
            yield OverlongLine()
            block = block[cut + 1 :]
        elif pending:
            pending.append(block)
            block = b"".join(pending)
            pending, held = [], 0
        lines = block.split(b"\n")
        tail = lines.pop()
        if len(tail) > limit:
            skipping = True
        elif tail:
            pending, held = [tail], len(tail)
        if lines:
            if max(map(len, lines)) > limit:
                lines = [x if len(x) <= limit else OverlongLine() for x in lines]
            n += len(lines)
            yield from lines
    if skipping:
        yield OverlongLine()
    elif pending:
        yield b"".join(pending)


NOT_REGULAR = "not a regular file (a FIFO, socket or device): only files and '-' are read"


def open_regular(
    path: str,
    name: str | None = None,
    error: type[Exception] = InputError,
    what: str = "a JSONL file",
) -> BinaryIO:
    """``path`` opened for reading if it is a regular file, else ``error`` naming it.

    Why: a FIFO without a writer blocks the open (or the read) forever, and a device such as
    ``/dev/zero`` behind a ``.jsonl`` name never ends. Opened with ``O_NONBLOCK``, then
    checked with ``fstat`` on the open descriptor (no window for a swap between a check and
    the open), then set back to blocking reads. Audit shards, warm's ``--from-log`` and
    ``registry drift`` all read through here."""
    name = path if name is None else name
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise error(f"cannot read {name}: no such file") from None
    except OSError as exc:
        raise error(f"cannot read {name}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise error(f"cannot read {name}: it is a directory, not {what}")
        if not stat.S_ISREG(mode):
            raise error(f"cannot read {name}: {NOT_REGULAR}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=1 << 20)
    except BaseException:
        os.close(fd)
        raise


def _open_binary(path: str, name: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    return open_regular(path, name)


@contextmanager
def open_lines(path: str | Path, limit: int, name: str | None = None) -> Iterator[Iterator[bytes]]:
    """Yield the raw lines of ``path`` (``-`` = stdin, gzip detected), bounded by ``limit``.

    ``name`` is how messages call the input (default: the path). Opening or reading errors
    are ``InputError`` with the line number reached.
    """
    path = str(path)
    name = name or path
    raw = _open_binary(path, name)
    try:
        buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)  # type: ignore[arg-type]
        try:
            head = buffered.peek(2)[:2]
        except OSError as exc:
            raise InputError(f"cannot read {name}: {exc.strerror or exc}") from None
        stream: BinaryIO = buffered  # type: ignore[assignment]
        if is_gzip(head, path):
            stream = gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[assignment]
        yield checked_lines(bounded_lines(stream, limit), name)
    finally:
        if raw is not sys.stdin.buffer:
            raw.close()


def checked_lines(
    lines: Iterator[bytes],
    name: str,
    errors: tuple[type[BaseException], ...] = STREAM_ERRORS,
    error: type[InputError] = InputError,
) -> Iterator[bytes]:
    """Iterate ``lines``, turning a broken stream (one of ``errors``) into ``error`` naming
    the input and the last line read. ``audit/read/shards.py`` passes its own: ``ShardError``, and
    pyarrow's ``ValueError`` too."""
    n = 0
    try:
        for n, line in enumerate(lines, 1):  # noqa: B007
            yield line
    except errors as exc:
        raise error(f"{name}: unreadable after line {n}: {type(exc).__name__}: {exc}") from None


def not_utf8(exc: UnicodeDecodeError) -> str:
    """Why a line is not UTF-8, as every reader says it: the first bad byte and its offset."""
    return f"not UTF-8: byte 0x{exc.object[exc.start]:02x} at offset {exc.start} of the line"
