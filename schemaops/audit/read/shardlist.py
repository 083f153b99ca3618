"""The shards behind the ``audit`` arguments: paths, folders, globs and URIs expanded into an
ordered list, each file once.

Why apart from ``shards``: listing decides *which* files are audited (the order of the
arguments, each folder or glob sorted by path; one file whatever its paths; ``**`` never
following a symlinked folder or a loop); ``shards`` reads one. Object-store calls go through
``shards.within`` (a deadline each) like the reads.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from schemaops.audit.read.shards import (
    GLOB_CHARS,
    OPEN_TIMEOUT_S,
    SHARD_SUFFIXES,
    Shard,
    ShardError,
    filesystem_of,
    split_query,
    within,
)
from schemaops.errors import InputError
from schemaops.http.urls import redact, scrub


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
            raise InputError(f"cannot read {redact(arg)}: no such file, or no shard in it")
        for name in found:
            key = _identity(name)
            shown = redact(name)  # s3://key:secret@bucket/...: the report never shows the secret
            first = seen.get(key) if key is not None else None
            if first is not None:
                if skipped is not None:
                    skipped.append({"shard": shown, "same_as": first})
                continue
            if key is not None:
                seen[key] = shown
            path = name if shown != name else None
            out.append(Shard(shown, path=path, open_timeout=open_timeout))
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

    raw, (arg, query) = arg, split_query(arg)
    full = redact(raw)  # how messages name it
    scheme, rest = arg.split("://", 1)
    wild = next((i for i, c in enumerate(rest) if c in GLOB_CHARS), None)
    base_rest = rest if wild is None else rest[: rest.rfind("/", 0, wild) + 1] or rest[:wild]
    filesystem, base = filesystem_of(f"{scheme}://{base_rest}{query}", timeout, full)
    try:
        listing = within(timeout, full, _list, filesystem, base, wild is not None)
    except ShardError:
        raise
    except Exception as exc:  # the store refused the listing
        why = scrub(str(exc), [raw])
        raise InputError(f"cannot read {full}: {type(exc).__name__}: {why}") from None
    if listing is None:
        return [raw]
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
