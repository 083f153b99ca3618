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

import fnmatch
import gzip
import io
import os
import re
import stat
import threading
from collections.abc import Callable, Iterator
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


def expand(
    args: list[str], skipped: list[dict] | None = None, open_timeout: float = OPEN_TIMEOUT_S
) -> list[Shard]:
    """The shards behind the ``audit`` arguments, in order; ``InputError`` if one matches
    nothing (a missing file, an empty folder, a glob without a match).

    One file is one shard whatever its paths: a local file met again (named twice, or
    through a symlink alias, a second glob or folder) is its (device, inode) seen before
    and is skipped, as is a URI named twice; each skip is appended to ``skipped``
    (``{"shard": the path skipped, "same_as": the shard kept}``)."""
    out: list[Shard] = []
    seen: dict[Any, str] = {}
    for arg in args:
        found = _expand_uri(arg, open_timeout) if "://" in arg else _expand_local(arg)
        if not found:
            raise InputError(f"cannot read {arg}: no such file, or no shard in it")
        for name in found:
            key = _identity(name)
            first = seen.get(key) if key is not None else None
            if first is not None:
                if skipped is not None:
                    skipped.append({"shard": name, "same_as": first})
                continue
            if key is not None:
                seen[key] = name
            out.append(Shard(name, open_timeout=open_timeout))
    return out


def _identity(name: str) -> Any:
    """What makes two names one shard: a local file's (device, inode), following symlinks;
    a URI's text; None when it cannot be told (stdin, a path that cannot be stat'ed, which
    is then reported unreadable on its own)."""
    if name == "-":
        return None
    if "://" in name:
        return ("uri", name)
    try:
        st = os.stat(name)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def _picked(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    # Hidden files and Hadoop/Spark markers (_SUCCESS, .part.crc) are not data.
    return not base.startswith((".", "_")) and base.lower().endswith(SHARD_SUFFIXES)


def _expand_local(arg: str) -> list[str]:
    if arg == "-":
        return ["-"]
    if any(c in arg for c in GLOB_CHARS) and not os.path.exists(arg):
        hits = sorted(set(local_glob(arg)))
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


def local_glob(pattern: str) -> Iterator[str]:
    """The paths ``glob.glob(pattern, recursive=True)`` gives, without its symlink loops.

    ``**`` matches any number of folders but does not descend into a symlinked folder (as
    ``os.walk``, the folder walk here, and Python 3.13's ``pathlib`` ``glob``), and no
    segment enters a folder that is already on the path being matched (``d/up -> ..``):
    ``glob.glob`` follows such a loop until the kernel refuses the path (ELOOP), so one file
    was audited 41 times. As ``glob``: ``*``, ``?`` and ``[...]`` stay within one segment
    and do not match a leading ``.`` unless the pattern segment starts with one."""
    parts = pattern.split(os.sep)
    first = next(i for i, seg in enumerate(parts) if any(c in seg for c in GLOB_CHARS))
    base = os.sep.join(parts[:first])
    if pattern.startswith(os.sep) and not base:
        base = os.sep
    start = base or os.curdir
    try:
        st = os.stat(start)
    except (OSError, ValueError):
        return
    yield from _glob_in(base, parts[first:], frozenset({(st.st_dev, st.st_ino)}))


def _glob_in(base: str, segs: list[str], ancestors: frozenset) -> Iterator[str]:
    """Matches of ``segs`` under the folder ``base`` ('' = the working folder)."""
    seg, rest = segs[0], segs[1:]
    if seg == "**" and not rest:  # everything below: the folder itself, walked later
        if base:
            yield base
        return
    if seg == "**":
        yield from _glob_in(base, rest, ancestors)  # zero folders
    if not any(c in seg for c in GLOB_CHARS) and seg != "**":
        path = os.path.join(base, seg)
        if not rest:
            if os.path.lexists(path):
                yield path
            return
        key = _dir_key(path, follow=True)
        if key is not None and key not in ancestors:
            yield from _glob_in(path, rest, ancestors | {key})
        return
    try:
        with os.scandir(base or os.curdir) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if name.startswith(".") and not seg.startswith("."):
            continue
        path = os.path.join(base, name)
        if seg == "**":  # one folder more, never through a symlink
            key = _dir_key(path, follow=False)
            if key is not None and key not in ancestors:
                yield from _glob_in(path, segs, ancestors | {key})
            continue
        if not fnmatch.fnmatch(name, seg):
            continue
        if not rest:
            yield path
            continue
        key = _dir_key(path, follow=True)
        if key is not None and key not in ancestors:
            yield from _glob_in(path, rest, ancestors | {key})


def _dir_key(path: str, follow: bool) -> tuple[int, int] | None:
    """(device, inode) of a folder (a symlink to one only if ``follow``), else None."""
    try:
        st = os.stat(path, follow_symlinks=follow)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _walk(folder: str) -> list[str]:
    files = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        files.extend(os.path.join(root, n) for n in names if _picked(n))
    return sorted(files)


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


def _filesystem(uri: str, timeout: float = OPEN_TIMEOUT_S, name: str | None = None) -> Any:
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
        raise ShardError(f"cannot read {name}: {type(exc).__name__}: {exc}") from None


def _list(filesystem: Any, base: str, wild: bool) -> list[Any] | None:
    """The file infos under ``base`` (None: ``base`` is itself the file asked for)."""
    from pyarrow import fs

    info = filesystem.get_file_info(base)
    if info.type == fs.FileType.File and not wild:
        return None
    if info.type != fs.FileType.Directory:
        return []
    return filesystem.get_file_info(fs.FileSelector(base, recursive=True))


def _expand_uri(arg: str, timeout: float = OPEN_TIMEOUT_S) -> list[str]:
    from pyarrow import fs

    full, (arg, query) = arg, split_query(arg)
    scheme, rest = arg.split("://", 1)
    wild = next((i for i, c in enumerate(rest) if c in GLOB_CHARS), None)
    base_rest = rest if wild is None else rest[: rest.rfind("/", 0, wild) + 1] or rest[:wild]
    filesystem, base = _filesystem(f"{scheme}://{base_rest}{query}", timeout, full)
    try:
        listing = within(timeout, full, _list, filesystem, base, wild is not None)
    except ShardError:
        raise
    except Exception as exc:  # the store refused the listing
        raise InputError(f"cannot read {full}: {type(exc).__name__}: {exc}") from None
    if listing is None:
        return [full]
    prefix = arg[: len(arg) - len(rest)] + base_rest.rstrip("/")
    names = []
    for f in listing:
        if f.type != fs.FileType.File:
            continue
        rel = f.path[len(base.rstrip("/")) :].lstrip("/")
        uri = f"{prefix}/{rel}"
        if wild is None:
            if _picked(rel) and not any(p.startswith((".", "_")) for p in rel.split("/")[:-1]):
                names.append(uri + query)
        elif glob_match(uri, arg):
            names.append(uri + query)
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


NOT_REGULAR = "not a regular file (a FIFO, socket or device): only files and '-' are read"


def open_regular(path: str, name: str | None = None) -> BinaryIO:
    """``path`` opened for reading if it is a regular file, else ``ShardError`` naming it.

    Opened with ``O_NONBLOCK`` (opening a FIFO without a writer would block forever), then
    checked with ``fstat`` on the open descriptor (no window for a swap between a check and
    the open), then set back to blocking reads."""
    name = path if name is None else name
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ShardError(f"cannot read {name}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise ShardError(f"cannot read {name}: it is a directory, not a JSONL or Parquet file")
        if not stat.S_ISREG(mode):
            raise ShardError(f"cannot read {name}: {NOT_REGULAR}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering=1 << 20)
    except BaseException:
        os.close(fd)
        raise


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
        filesystem, path = _filesystem(loc, timeout, name)
        if type(filesystem).__name__ == "LocalFileSystem":  # file://: the local rules
            return open_regular(path, name)
        try:  # random access: Parquet needs it
            return within(timeout, name, filesystem.open_input_file, path)
        except ShardError:
            raise
        except Exception as exc:
            raise ShardError(f"cannot read {name}: {type(exc).__name__}: {exc}") from None
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
    dumps, opt = orjson.dumps, orjson.OPT_NON_STR_KEYS
    # one thread: a page failing to decompress in pyarrow's reader threads aborted the
    # process (SIGABRT) in some runs; single-threaded it raises (the row loop here, not the
    # decoding, is what a Parquet shard's audit spends its time on)
    for batch in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, use_threads=False):
        for row in batch.to_pylist():
            try:
                line = dumps(
                    {k: v for k, v in row.items() if v is not None}, default=_default, option=opt
                )
            except (TypeError, orjson.JSONEncodeError):
                line = b'"row not serialisable as JSON"'  # counted as an input error
            yield line if len(line) <= limit else OverlongLine()
