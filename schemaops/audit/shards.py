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
"""

from __future__ import annotations

import fnmatch
import glob
import gzip
import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from schemaops.errors import InputError
from schemaops.jsonl import STREAM_ERRORS, OverlongLine, bounded_lines, checked_lines, is_gzip

#: What a folder or glob picks up (an explicitly named file is read whatever its name).
SHARD_SUFFIXES = (".jsonl", ".ndjson", ".json", ".gz", ".parquet", ".pq")
PARQUET_MAGIC = b"PAR1"
PARQUET_BATCH_ROWS = 4096
GLOB_CHARS = "*?["


class ShardError(InputError):
    """A shard that cannot be read (opening it, or a stream that breaks inside it)."""


@dataclass(frozen=True)
class Shard:
    """One input file: ``name`` as the user gave or as the folder listing found it (what the
    report says); ``path``, where a Ray worker opens it (an absolute path), if not ``name``."""

    name: str
    path: str | None = None

    @property
    def location(self) -> str:
        return self.path or self.name

    @property
    def is_uri(self) -> bool:
        return "://" in self.location


def expand(args: list[str]) -> list[Shard]:
    """The shards behind the ``audit`` arguments, in order; ``InputError`` if one matches
    nothing (a missing file, an empty folder, a glob without a match)."""
    out: list[Shard] = []
    for arg in args:
        found = _expand_uri(arg) if "://" in arg else _expand_local(arg)
        if not found:
            raise InputError(f"cannot read {arg}: no such file, or no shard in it")
        out.extend(Shard(name) for name in found)
    return out


def _picked(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    # Hidden files and Hadoop/Spark markers (_SUCCESS, .part.crc) are not data.
    return not base.startswith((".", "_")) and base.lower().endswith(SHARD_SUFFIXES)


def _expand_local(arg: str) -> list[str]:
    if arg == "-":
        return ["-"]
    if any(c in arg for c in GLOB_CHARS) and not os.path.exists(arg):
        hits = sorted(glob.glob(arg, recursive=True))
        files = []
        for h in hits:
            if os.path.isdir(h):
                files.extend(_walk(h))
            else:
                files.append(h)
        return files
    p = Path(arg)
    if p.is_dir():
        return _walk(arg)
    return [arg] if p.exists() or p.is_symlink() else []


def _walk(folder: str) -> list[str]:
    files = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        files.extend(os.path.join(root, n) for n in names if _picked(n))
    return sorted(files)


def _filesystem(uri: str) -> tuple[Any, str]:
    try:
        from pyarrow import fs
    except ImportError:
        raise InputError(
            f"cannot read {uri}: reading URIs needs pyarrow: pip install 'schemaops[parquet]'"
        ) from None
    try:
        return fs.FileSystem.from_uri(uri)
    except Exception as exc:  # an unknown scheme, a bad bucket name, missing credentials
        raise InputError(f"cannot read {uri}: {type(exc).__name__}: {exc}") from None


def _expand_uri(arg: str) -> list[str]:
    from pyarrow import fs

    scheme, rest = arg.split("://", 1)
    wild = next((i for i, c in enumerate(rest) if c in GLOB_CHARS), None)
    base_rest = rest if wild is None else rest[: rest.rfind("/", 0, wild) + 1] or rest[:wild]
    filesystem, base = _filesystem(f"{scheme}://{base_rest}")
    try:
        info = filesystem.get_file_info(base)
        if info.type == fs.FileType.File and wild is None:
            return [arg]
        if info.type != fs.FileType.Directory:
            return []
        listing = filesystem.get_file_info(fs.FileSelector(base, recursive=True))
    except Exception as exc:  # the store refused the listing
        raise InputError(f"cannot read {arg}: {type(exc).__name__}: {exc}") from None
    prefix = arg[: len(arg) - len(rest)] + base_rest.rstrip("/")
    names = []
    for f in listing:
        if f.type != fs.FileType.File:
            continue
        rel = f.path[len(base.rstrip("/")) :].lstrip("/")
        uri = f"{prefix}/{rel}"
        if wild is None:
            if _picked(rel) and not any(p.startswith((".", "_")) for p in rel.split("/")[:-1]):
                names.append(uri)
        elif glob_match(uri, arg):
            names.append(uri)
    return sorted(names)


def glob_match(path: str, pattern: str) -> bool:
    """``glob`` semantics on a URI: ``*``, ``?`` and ``[...]`` stay within one path segment,
    a ``**`` segment matches any number of segments (as the local ``glob(recursive=True)``)."""
    return _match(path.split("/"), pattern.split("/"))


def _match(parts: list[str], pats: list[str]) -> bool:
    if not pats:
        return not parts
    if pats[0] == "**":
        return any(_match(parts[i:], pats[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pats[0]) and _match(parts[1:], pats[1:])


def _open(shard: Shard) -> BinaryIO:
    """Open a shard at its location; errors name it as the report does."""
    name, loc = shard.name, shard.location
    if loc == "-":
        import sys

        return sys.stdin.buffer
    if shard.is_uri:
        filesystem, path = _filesystem(loc)
        try:
            return filesystem.open_input_file(path)  # random access: Parquet needs it
        except Exception as exc:
            raise ShardError(f"cannot read {name}: {type(exc).__name__}: {exc}") from None
    if os.path.isdir(loc):
        raise ShardError(f"cannot read {name}: it is a directory, not a JSONL or Parquet file")
    try:
        return open(loc, "rb", buffering=1 << 20)  # noqa: SIM115
    except OSError as exc:
        raise ShardError(f"cannot read {name}: {exc.strerror or exc}") from None


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
            yield _checked(bounded_lines(stream, limit), shard.name)
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
    """The raw lines of an uncompressed JSONL shard that start in ``[start, end)``."""
    raw = _open(shard)
    try:
        yield _checked(bounded_lines(_RangeReader(raw, start, end), limit), shard.name)
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
    except Exception as exc:  # not Parquet, a truncated footer, an unknown codec
        raise ShardError(f"cannot read {name}: {type(exc).__name__}: {exc}") from None
    dumps, opt = orjson.dumps, orjson.OPT_NON_STR_KEYS
    for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS):
        for row in batch.to_pylist():
            try:
                line = dumps(
                    {k: v for k, v in row.items() if v is not None}, default=_default, option=opt
                )
            except (TypeError, orjson.JSONEncodeError):
                line = b'"row not serialisable as JSON"'  # counted as an input error
            yield line if len(line) <= limit else OverlongLine()
