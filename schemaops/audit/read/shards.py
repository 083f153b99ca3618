"""Many input files ("shards") for one audit: expand the arguments, read each shard as lines.

A month of logs is many files: JSONL, gzipped JSONL and Parquet, in a folder tree, behind a
glob, or in object storage. ``expand`` turns the ``audit`` arguments into an ordered list of
shards (the order of the arguments, each folder or glob sorted by path), and ``shard_lines``
reads one shard as the raw JSONL lines ``lines.audit_lines`` takes, so a shard of any format
goes through the one audit loop and the report of many shards is the report of their
concatenation in that order.

A Parquet row becomes one record: its non-null columns are the record's fields (a struct
column is a nested object, a list column an array), so ``pyarrow``'s reading of a JSONL file
written back as Parquet audits like the JSONL (a key a line lacks is a null there). The row
is serialised to one JSON line for the loop (values JSON has no type for, such as decimals or
bytes, as strings); its line number is its row number in the shard.

A URI (``s3://``, ``gs://``, ``file://``, ...) is opened through ``pyarrow.fs`` (the
credentials are pyarrow's, from the environment); a plain path is a local file.

Only regular files are read (``open_regular``), and ``-`` (stdin) when named: a FIFO would
block the open or the read forever, a device such as ``/dev/zero`` behind a ``.jsonl`` name
would never end. Anything else is an unreadable shard, named, as the registry refuses it
(``registry/jsontext.read_bytes``).
"""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

import orjson

from schemaops.errors import InputError
from schemaops.http.urls import scrub
from schemaops.jsonl import (
    STREAM_ERRORS,
    OverlongLine,
    block_lines,
    bounded_lines,
    checked_lines,
    is_gzip,
)
from schemaops.jsonl import open_regular as jsonl_open_regular

#: What a folder or glob picks up (an explicitly named file is read whatever its name).
SHARD_SUFFIXES = (".jsonl", ".ndjson", ".json", ".gz", ".parquet", ".pq")
PARQUET_MAGIC = b"PAR1"
PARQUET_BATCH_ROWS = 4096
GLOB_CHARS = "*?["
#: default deadline of each object-store call made to open a shard (``--open-timeout``)
OPEN_TIMEOUT_S = 30.0


class ShardError(InputError):
    """A shard that cannot be read (opening it, or a stream that breaks inside it)."""


@dataclass(frozen=True)
class Shard:
    """One input file: ``name`` as the user gave or as the folder listing found it (what the
    report says); ``path``, where a Ray worker opens it (an absolute path), if not ``name``."""

    name: str
    path: str | None = None
    #: seconds each call to an object store may take (``--open-timeout``; ``within``)
    open_timeout: float = OPEN_TIMEOUT_S

    @property
    def location(self) -> str:
        return self.path or self.name

    @property
    def is_uri(self) -> bool:
        return "://" in self.location


def within(seconds: float, name: str, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` if it returns (or raises) within ``seconds``, else ``ShardError`` naming
    ``name``: the deadline of every call to an object store (``--open-timeout``).

    Why a thread: pyarrow's store clients retry inside C++ (a ``gs://`` URI without network
    retried for many minutes; an S3 endpoint that accepts and never answers, ~100 s), and
    nothing from Python can interrupt them. The call runs in a daemon thread that is left
    behind when the deadline passes; the audit reports the shard and goes on or exits 2."""
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # handed to the caller's thread below
            box["error"] = exc

    worker = threading.Thread(target=call, name="schemaops-uri", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        _ABANDONED[0] += 1
        raise ShardError(
            f"cannot read {name}: no answer from the store within {seconds:g} s"
            " (--open-timeout; no network, or the endpoint does not answer?)"
        )
    if "error" in box:
        raise box["error"]
    return box["value"]


_ABANDONED = [0]


def abandoned_calls() -> int:
    """How many store calls ``within`` left running in this process. The command line then
    ends with ``os._exit``: pyarrow's exit handler (``finalize_s3``) would wait for them
    (an unanswering S3 endpoint held the exit ~100 s after the report)."""
    return _ABANDONED[0]


#: pyarrow raised while reading a shard in this process (see ``leave_at_once``)
_PYARROW_FAILED = [0]


def leave_at_once() -> bool:
    """Whether the command line should end with ``os._exit`` once its report is out: a store
    call is still running (``abandoned_calls``), or pyarrow failed inside a read. After a
    page that failed to decompress, pyarrow's threads were torn down at interpreter exit with
    ``terminate called without an active exception`` (SIGABRT) in 2 runs of 12 here, after
    the report and its exit code 2 were written; nothing is left to do by then."""
    return bool(_ABANDONED[0] or _PYARROW_FAILED[0])


#: a URI's query (``?region=...&endpoint_override=...``, read by pyarrow), not a glob's ``?``
_QUERY = re.compile(r"\?[A-Za-z_]+=[^&/?]*(?:&[A-Za-z_]+=[^&/?]*)*$")


def split_query(uri: str) -> tuple[str, str]:
    """``(uri without its query, "?query" or "")``."""
    m = _QUERY.search(uri)
    return (uri[: m.start()], m.group(0)) if m else (uri, "")


def _with_limits(uri: str, timeout: float) -> str:
    """``uri`` with the store's own retry limit set inside the deadline where pyarrow reads
    one from the URI (``gs://``: ``retry_limit_seconds``, which also bounds later reads),
    unless the user set it: the call then ends by itself, not only our wait for it."""
    scheme = uri.split("://", 1)[0].lower()
    if scheme in ("gs", "gcs") and "retry_limit_seconds=" not in uri:
        limit = f"retry_limit_seconds={max(1.0, timeout / 2):g}"
        return uri + ("&" if split_query(uri)[1] else "?") + limit
    return uri


def filesystem_of(uri: str, timeout: float = OPEN_TIMEOUT_S, name: str | None = None) -> Any:
    """``(filesystem, path)`` of ``uri``, within the deadline (resolving an S3 bucket's
    region or GCS credentials already goes to the network)."""
    name = uri if name is None else name
    try:
        from pyarrow import fs
    except ImportError:
        raise InputError(
            f"cannot read {name}: reading URIs needs pyarrow: pip install 'schemaops[parquet]'"
        ) from None
    try:
        return within(timeout, name, fs.FileSystem.from_uri, _with_limits(uri, timeout))
    except ShardError:
        raise
    except Exception as exc:  # an unknown scheme, a bad bucket name, missing credentials
        why = scrub(str(exc), [uri])  # pyarrow may quote the URI, credentials and all
        raise ShardError(f"cannot read {name}: {type(exc).__name__}: {why}") from None


def open_regular(path: str, name: str | None = None) -> BinaryIO:
    """``path`` opened for reading if it is a regular file, else ``ShardError`` naming it
    (``jsonl.open_regular``: a FIFO or a device is refused, never waited on)."""
    return jsonl_open_regular(path, name, ShardError, "a JSONL or Parquet file")


def is_regular(path: str) -> bool:
    """Whether ``path`` is (a link to) a regular file; never opens it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _open(shard: Shard) -> BinaryIO:
    """Open a shard at its location; errors name it as the report does."""
    name, loc = shard.name, shard.location
    if loc == "-":
        import sys

        return sys.stdin.buffer
    if shard.is_uri:
        timeout = shard.open_timeout
        filesystem, path = filesystem_of(loc, timeout, name)
        if type(filesystem).__name__ == "LocalFileSystem":  # file://: the local rules
            return open_regular(path, name)
        try:  # random access: Parquet needs it
            return within(timeout, name, filesystem.open_input_file, path)
        except ShardError:
            raise
        except Exception as exc:
            why = scrub(str(exc), [loc])
            raise ShardError(f"cannot read {name}: {type(exc).__name__}: {why}") from None
    return open_regular(loc, name)


@contextmanager
def shard_lines(shard: Shard, limit: int) -> Iterator[Iterator[bytes]]:
    """The raw JSONL lines of one shard (a Parquet row as one line), none over ``limit``.

    Opening errors raise ``ShardError`` here; a stream that breaks while it is read raises
    ``ShardError`` from the iterator, naming the shard and the last line (row) read.
    """
    raw = _open(shard)
    try:
        buffered = raw if hasattr(raw, "peek") else io.BufferedReader(raw)  # type: ignore[arg-type]
        try:
            head = buffered.peek(4)[:4]
        except STREAM_ERRORS as exc:
            raise ShardError(f"cannot read {shard.name}: {exc}") from None
        if head == PARQUET_MAGIC or shard.name.lower().endswith((".parquet", ".pq")):
            yield _checked(_parquet_lines(raw, shard.name, limit), shard.name)
        else:
            stream: Any = buffered
            if is_gzip(head, shard.name):
                stream = gzip.GzipFile(fileobj=buffered, mode="rb")
            yield block_lines(stream, limit, shard.name, (*STREAM_ERRORS, ValueError), ShardError)
    finally:
        if shard.location != "-":
            raw.close()


def plain_size(shard: Shard) -> int | None:
    """The size of a shard that can be cut into byte ranges (uncompressed JSONL), else None
    (gzip, Parquet, stdin, or one that cannot be opened: its task reports that)."""
    if shard.name == "-" or shard.name.lower().endswith((".gz", ".parquet", ".pq")):
        return None
    try:
        raw = _open(shard)
    except InputError:
        return None
    try:
        head = raw.read(4)
        if is_gzip(head, shard.name) or head == PARQUET_MAGIC:
            return None
        return int(raw.size()) if hasattr(raw, "size") else os.fstat(raw.fileno()).st_size
    except (OSError, ValueError):
        return None
    finally:
        raw.close()


class _RangeReader:
    """``readline`` over the lines that start in ``[start, end)`` of a file: a range after
    the first skips the line in progress (the range before it reads that line to its end),
    so the ranges of a file give each of its lines exactly once."""

    def __init__(self, fh: Any, start: int, end: int) -> None:
        self.fh, self.end, self.pos = fh, end, max(start - 1, 0)
        fh.seek(self.pos)
        if start > 0:  # read past the rest of the line that started before this range
            while True:
                chunk = fh.readline(1 << 20)
                self.pos += len(chunk)
                if not chunk or chunk.endswith(b"\n"):
                    break
        self.at_line_start = True

    def readline(self, size: int) -> bytes:
        if self.at_line_start and self.pos >= self.end:
            return b""
        line = self.fh.readline(size)
        self.pos += len(line)
        self.at_line_start = line.endswith(b"\n")
        return line


@contextmanager
def range_lines(shard: Shard, start: int, end: int, limit: int) -> Iterator[Iterator[bytes]]:
    """The raw lines of an uncompressed JSONL shard that start in ``[start, end)``, without
    their newline (as ``shard_lines`` gives them)."""
    raw = _open(shard)
    try:
        lines = _checked(bounded_lines(_RangeReader(raw, start, end), limit), shard.name)
        yield (x[:-1] if x[-1:] == b"\n" else x for x in lines)
    finally:
        raw.close()


def _checked(lines: Iterator[bytes], name: str) -> Iterator[bytes]:
    """``jsonl.checked_lines`` as ``ShardError``; a ValueError is a broken stream here too
    (pyarrow raises ArrowInvalid, a ValueError, inside a Parquet shard)."""
    return checked_lines(lines, name, (*STREAM_ERRORS, ValueError), ShardError)


def _default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def unreadable_codecs(metadata: Any) -> list[str]:
    """The compression codecs of a Parquet file's column chunks that this pyarrow cannot
    decompress (``pyarrow.Codec.is_available``; ``LZO`` is not even a name it knows), from
    the footer alone.

    Why before reading: a chunk with such a codec fails inside pyarrow's reader threads, and
    with several columns and row groups that failure aborted the whole process (SIGABRT,
    exit 134) in 4 of 16 runs instead of raising; refused here, it is a named unreadable
    shard."""
    import pyarrow as pa

    seen: set[str] = set()
    for i in range(metadata.num_row_groups):
        group = metadata.row_group(i)
        for j in range(group.num_columns):
            seen.add(str(group.column(j).compression))
    missing = []
    for codec in sorted(seen - {"UNCOMPRESSED"}):
        try:
            ok = pa.Codec.is_available(codec.lower())
        except (ValueError, TypeError):  # a codec pyarrow has no name for (LZO)
            ok = False
        if not ok:
            missing.append(codec)
    return missing


def _parquet_lines(raw: Any, name: str, limit: int) -> Iterator[bytes]:
    """Each Parquet row as one JSON object line (non-null columns), read batch by batch."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ShardError(
            f"cannot read {name}: Parquet needs pyarrow: pip install 'schemaops[parquet]'"
        ) from None
    if not hasattr(raw, "seek") or (hasattr(raw, "seekable") and not raw.seekable()):
        raise ShardError(f"cannot read {name}: Parquet needs a seekable file, not a stream")
    try:
        pf = pq.ParquetFile(raw)
        missing = unreadable_codecs(pf.metadata)
    except Exception as exc:  # not Parquet, a truncated footer
        raise ShardError(f"cannot read {name}: {type(exc).__name__}: {exc}") from None
    if missing:
        raise ShardError(
            f"cannot read {name}: compressed with {', '.join(missing)}, which this pyarrow"
            " cannot decompress (refused before reading: a failed read there can abort the"
            " process); rewrite it with snappy, zstd or gzip"
        )
    try:
        yield from _rows(pf, limit)
    except Exception:
        _PYARROW_FAILED[0] += 1
        raise


def _rows(pf: Any, limit: int) -> Iterator[bytes]:
    """The rows of an open Parquet file as JSON lines. One thread: a page failing to
    decompress in pyarrow's reader threads aborted the process (SIGABRT) in some runs;
    single-threaded it raises (the row loop here, not the decoding, is what a Parquet
    shard's audit spends its time on)."""
    dumps, opt = orjson.dumps, orjson.OPT_NON_STR_KEYS
    for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, use_threads=False):
        for row in batch.to_pylist():
            try:
                line = dumps(
                    {k: v for k, v in row.items() if v is not None}, default=_default, option=opt
                )
            except (TypeError, orjson.JSONEncodeError):
                line = b'"row not serialisable as JSON"'  # counted as an input error
            yield line if len(line) <= limit else OverlongLine()
