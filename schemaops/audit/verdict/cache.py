"""On-disk cache of schema facts, so a daily audit over the same registry starts warm.

What is cached is data, never code: for each registry file found clean (no problem at all,
its sidecar examples included) one small JSON entry saying so. A hit lets the lazy registry
skip the metaschema check, the ref checks and the cycle search (and the checker its own
metaschema check), which are most of a schema's first-use cost. No compiled check is
cached: jsonschema-rs's validators and the closure trees are built in memory on first use
(code or objects read from a cache folder would need a trust check of their own).

Also cached: what the registry index reads from each file (its ``x-schemaops-name``, library
flag and root ``$id``: ``scan_get``/``scan_put``), keyed by the file's path and stat fields, so
a warm run's index lists the folder and stats each file instead of reading 10,000 files
(0.4 s of every run, and of every ``--jobs`` run's serial start, on the platform workload).

Keying: sha256 over the fingerprint of the code and libraries that derive the facts
(``schemaops.cachekeys.audit_fingerprint``: the registry checks, the format rules, the
checker hints, jsonschema and its format packages; ``schemaops.__version__`` never changes on
a ``git pull``), the example settings, the file's bytes and its sidecar's bytes. Only files
whose refs stay inside themselves are cached (a file that refers to another depends on that
file too). Checks that depend on the rest of the registry (a duplicate ``$id``) run on every
load.

Storage: packs, not a file per entry. A run's new entries are written together, when it ends
(``flush``), as one ``*.pack`` file of JSON lines (a header naming the versions, then one entry
per line); a run reads every pack once, on its first lookup. Why: on a platform registry a
cold run wrote 9,525 entry files, and creating them cost 4.3 s of system time on an ordinary
home folder (issue 15), more than the checks they saved on a second core; reading them back
was one ``open`` per schema. When more than ``MAX_PACKS`` packs pile up, the writer folds
them into one.

Safety: a pack is written to a temporary file in the same folder and renamed into place
(atomic on POSIX), so concurrent runs never see half a pack. A fold writes the merged pack
before it deletes the packs it read, and deletes only those, so an entry another run wrote
meanwhile is never lost; a pack deleted under a reader is a miss. Only regular files are
read, opened without blocking (a FIFO named ``x.pack`` would hang a plain ``open``). An
entry is used only from a pack whose header names the same versions, only if its line is a
JSON object with the expected fields, and only for what it describes: a facts entry names
the sha256 of the schema bytes it was derived from (``content``), an index entry its path
(``file``); an entry moved under another key is refused. The regex watchdog is never
switched off by an entry: a ``regex: false`` hint holds only when the schema bytes cannot
hold a ``pattern`` (``get``). Anything else (truncated, edited, another format) is counted
in ``rejected``, ignored and rebuilt. On a shared machine a pack or folder that other users
can write is not trusted either. Any I/O error turns the cache off for that step; the audit
never fails because of its cache.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from schemaops.audit.verdict.schemakeys import regex_possible
from schemaops.cachekeys import (
    NotRegular,
    TooLarge,
    Untrusted,
    audit_fingerprint,
    dist_version,
    read_regular,
)

FORMAT = 2  # pack layout (header, one entry a line); bump when it changes
PACK_SUFFIX = ".pack"
#: packs in the folder before a writer folds them into one
MAX_PACKS = 8
#: entries on disk before the next writer folds and keeps only those its run used: every
#: run reads them all, and a fresh checkout of a 10,000-file registry (new stat fields) adds
#: 10,000 index entries, so the cap bounds both the disk and each run's start
MAX_ENTRIES = 1 << 16
_MAX_PACK_BYTES = 256 << 20
#: a registry file changed less than this before its scan is not remembered (``scan_put``)
RACY_NS = 2_000_000_000


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/schemaops/audit`` (``~/.cache/schemaops/audit`` when unset)."""
    from schemaops.cachedir import cache_root

    return cache_root() / "audit"


def _versions() -> str:
    """What every key and pack header names: the fingerprint of the code and libraries that
    derive the facts (``cachekeys.audit_fingerprint``: computed once per process), with the
    main library versions spelt out for a reader of a pack."""
    from schemaops import __version__

    parts = [f"schemaops={__version__}", f"format={FORMAT}", f"code={audit_fingerprint()}"]
    parts += [f"{d}={dist_version(d)}" for d in ("jsonschema", "referencing")]
    # Python's own ``re`` parser judges which patterns jsonschema-rs may run (the scan a
    # checker's facts keep, ``rsscan.scan_facts``), and ``re`` checks format "regex"
    version = ".".join(map(str, sys.version_info[:3]))
    parts.append(f"python={sys.implementation.name}-{version}")
    return ";".join(parts)


class SchemaFacts:
    """Facts about schema files, kept in packs under ``root`` (see the module doc).

    Counters: ``hits``/``misses`` per lookup; ``rejected``: entries or packs refused (damaged,
    untrusted, another format); ``write_errors``: packs that could not be written.
    """

    def __init__(self, root: str | Path, versions: str | None = None) -> None:
        self.root = Path(root)
        # the packs' own folder, created private (``root`` may come from ``mkdir -p`` under a
        # group-writable umask): a folder others can write is not trusted
        self.dir = self.root / f"facts{FORMAT}"
        self.versions = versions if versions is not None else _versions()
        self.hits = self.misses = self.rejected = self.write_errors = 0
        self.scan_hits = self.scan_misses = 0
        self._known: dict[str, dict] | None = None  # read on the first lookup
        self._pending: dict[str, dict] = {}  # put since the last flush
        self._used: set[str] = set()  # hit or put by this run (kept by a fold over the cap)
        self._opened_ns = time.time_ns()  # packs written since are kept whole by a fold
        #: key -> (sha256 of the schema bytes, whether those bytes may hold a regex): what
        #: ``key`` was given, so ``get`` checks an entry against the content it describes
        self._content: dict[str, tuple[str, bool]] = {}
        #: scan key -> the path it was made for (``scan_get`` checks an entry against it)
        self._scan_of: dict[str, str] = {}

    def key(
        self, raw: bytes, path: Path, examples: bool, timeout: float, sidecar: bool = True
    ) -> str:
        """The entry key for a schema file's bytes (and its sidecar's, when examples count).
        ``sidecar=False``: the caller's listing of the folder found no sidecar file (its bytes
        count as empty, as a missing sidecar's do), so none is opened."""
        from schemaops.registry.examples import sidecar_path
        from schemaops.registry.jsontext import read_bytes

        h = hashlib.sha256()
        h.update(f"{self.versions};examples={examples};timeout={timeout!r}\0".encode())
        content = hashlib.sha256(raw)
        h.update(content.digest())
        side = b""
        if examples and sidecar:
            try:
                side = read_bytes(sidecar_path(path))
            except FileNotFoundError:
                side = b""
            except OSError:
                side = os.urandom(16)  # unreadable now: never matches, never reused
        h.update(hashlib.sha256(side).digest())
        found = h.hexdigest()
        self._content[found] = (content.hexdigest(), regex_possible(raw))
        return found

    def get(self, key: str) -> dict | None:
        """The facts stored under ``key``, or None (missing, or refused when read).

        For a key made by ``key``: an entry whose ``content`` is not the sha256 of the bytes
        given there (an entry of another file moved under this key) is refused, and the
        checker's regex watchdog is never switched off by an entry (see ``_bound``)."""
        if self._known is None:
            self._known = self._read_all()[0]
        facts = self._known.get(key)
        if facts is not None and key in self._content:
            facts = self._bound(facts, *self._content[key])
        if facts is None or facts.get("clean") is not True:
            self.misses += 1
            return None
        self.hits += 1
        self._used.add(key)
        return facts

    def _bound(self, facts: dict, content: str, regex: bool) -> dict | None:
        """``facts`` as trusted for schema bytes of sha256 ``content``: None when the entry
        describes other bytes; the ``checker`` hint's ``regex`` re-derived from the bytes
        (``regex_possible``: a byte scan) whenever the entry says none, so an edited entry can
        never disable the watchdog on a schema with a ``pattern``."""
        if facts.get("content") != content:
            self.rejected += 1
            return None
        hints = facts.get("checker")
        if isinstance(hints, dict) and hints.get("regex") is False and regex:
            facts = {**facts, "checker": {**hints, "regex": True}}
        return facts

    def put(self, key: str, facts: dict[str, Any]) -> None:
        """Keep ``facts`` under ``key``; written to disk by ``flush``. An entry for a key made
        by ``key`` records the content it describes (``get`` checks it)."""
        if key in self._content:
            facts = {**facts, "content": self._content[key][0]}
        elif key in self._scan_of:
            facts = {**facts, "file": self._scan_of[key]}
        self._pending[key] = facts
        self._used.add(key)
        if self._known is not None:
            self._known[key] = facts

    # --- what the registry index learnt from a file (``registry/lazy.py``) --------------

    def scan_key(self, path: str, st: os.stat_result) -> str:
        """The key of a registry file's index entry: its path and the stat fields any write
        changes (inode, size, mtime and ctime in ns; ctime cannot be set back by a user)."""
        fields = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        found = hashlib.sha256(f"scan;{self.versions};{fields!r}".encode()).hexdigest()
        self._scan_of[found] = path
        return found

    def scan_get(self, key: str) -> tuple[str | None, bool, str | None] | None:
        """(name override, library flag, root id) of a file unchanged since it was indexed.
        An entry made for another path (moved under this key) is refused."""
        if self._known is None:
            self._known = self._read_all()[0]
        facts = self._known.get(key)
        if facts is not None and key in self._scan_of and facts.get("file") != self._scan_of[key]:
            self.rejected += 1
            facts = None
        found = _scan_value(facts) if facts is not None else None
        if found is None:
            self.scan_misses += 1
            return None
        self.scan_hits += 1
        self._used.add(key)
        return found

    def scan_put(
        self, key: str, st: os.stat_result, found: tuple[str | None, bool, str | None], now_ns: int
    ) -> None:
        """Keep a file's index entry, unless the file changed within ``RACY_NS`` of ``now_ns``
        (when its scan began): a second write in the same clock tick could leave every stat
        field as it was (git's "racily clean" rule), so such a file is read again next time."""
        if max(st.st_mtime_ns, st.st_ctime_ns) >= now_ns - RACY_NS:
            return
        self.put(key, {"scan": list(found)})

    def entries(self) -> dict[str, dict]:
        """Every trusted entry on disk now (a fresh read; for tests and tools)."""
        return self._read_all()[0]

    def flush(self) -> None:
        """Write the entries put since the last flush as one pack; fold the folder's packs
        into one when more than ``MAX_PACKS`` are there or more than ``MAX_ENTRIES`` entries
        were read."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        if not self._write_pack(pending):
            return
        try:
            packs = [n for n in os.listdir(self.dir) if n.endswith(PACK_SUFFIX)]
        except OSError:
            return
        if len(packs) > MAX_PACKS or len(self._known or ()) > MAX_ENTRIES:
            self._fold()

    # --- packs ----------------------------------------------------------------------

    def _read_all(self, fresh: set[str] | None = None) -> tuple[dict[str, dict], list[Path]]:
        """(entries of every trusted pack of our versions, the packs a fold may delete: every
        pack seen, ours, stale, damaged or untrusted). ``fresh``: filled with the keys of
        packs written since this cache was opened."""
        known: dict[str, dict] = {}
        read: list[Path] = []
        seen: set[str] = set()
        for _ in range(3):  # a pack folded away while we read: its entries are in a newer one
            try:
                if not _trusted(os.stat(self.dir)):
                    self.rejected += 1
                    return known, read
                names = sorted(n for n in os.listdir(self.dir) if n.endswith(PACK_SUFFIX))
            except OSError:
                return known, read
            vanished = False
            for name in names:
                if name in seen:
                    continue
                seen.add(name)
                path = self.dir / name
                # regular files only, opened without blocking: a FIFO named ``x.pack`` would
                # hang a plain open (issue 22 #17); it is refused, and left where it is
                trusted = True
                try:
                    data = read_regular(path, _MAX_PACK_BYTES, accept=_trusted)
                    read.append(path)
                except NotRegular:
                    self.rejected += 1
                    continue
                except OSError as exc:
                    if not isinstance(exc, (Untrusted, TooLarge)):
                        vanished = True
                        continue
                    read.append(path)  # refused, folded away
                    trusted, data = False, b""
                target = known
                if fresh is not None and _written_ns(name) >= self._opened_ns:
                    target = {}  # this run's (its other workers') or a concurrent run's
                if not trusted or not self._read_pack(data, target):
                    self.rejected += 1
                if target is not known:
                    known.update(target)
                    fresh.update(target)  # type: ignore[union-attr]
            if not vanished:
                break
        return known, read

    def _read_pack(self, data: bytes, known: dict[str, dict]) -> bool:
        """Add a pack's entries to ``known``; False when the pack as a whole is refused (too
        large, damaged, another layout). A damaged line is counted and skipped."""
        if len(data) > _MAX_PACK_BYTES:
            return False
        lines = data.split(b"\n")
        try:
            head = orjson.loads(lines[0])
        except orjson.JSONDecodeError:
            head = None
        if not isinstance(head, dict) or head.get("format") != FORMAT:
            return False
        if head.get("versions") != self.versions:
            return True  # written by another version: stale, folded away later
        for line in lines[1:]:
            if not line:
                continue
            entry = _entry(line)
            if entry is None:
                self.rejected += 1
                continue
            known[entry[0]] = entry[1]
        return True

    def _write_pack(self, entries: dict[str, dict]) -> bool:
        head = orjson.dumps({"format": FORMAT, "versions": self.versions})
        body = b"".join(orjson.dumps({"key": k, "facts": f}) + b"\n" for k, f in entries.items())
        tmp = None
        try:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=".part")
            with os.fdopen(fd, "wb") as fh:
                fh.write(head + b"\n" + body)
            name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}{PACK_SUFFIX}"
            os.replace(tmp, self.dir / name)
            tmp = None
            return True
        except OSError:
            self.write_errors += 1
            return False
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    def _fold(self) -> None:
        """Merge every pack into one: write the merged pack, then delete the ones read."""
        fresh: set[str] = set()
        known, read = self._read_all(fresh)
        if len(known) > MAX_ENTRIES:
            # what this run used, and what was written since it began (by its other --jobs
            # workers, forked with the same opening time, or by a concurrent run)
            known = {k: v for k, v in known.items() if k in self._used or k in fresh}
        if not self._write_pack(known):
            return
        for path in read:
            try:
                os.unlink(path)
            except OSError:
                pass  # folded by another run at the same time


def _written_ns(name: str) -> int:
    """When a pack was written, from its name (``_write_pack``: the time in ns first)."""
    head = name.split("-", 1)[0]
    return int(head) if head.isdigit() else 0


def _entry(line: bytes) -> tuple[str, dict] | None:
    """(key, facts) from a pack line, or None when it is not a whole, expected entry."""
    try:
        doc = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict):
        return None
    key, facts = doc.get("key"), doc.get("facts")
    if not isinstance(key, str) or len(key) != 64 or not isinstance(facts, dict):
        return None
    if facts.get("clean") is not True and _scan_value(facts) is None:
        return None
    return key, facts


def _scan_value(facts: dict) -> tuple[str | None, bool, str | None] | None:
    """A scan entry's ``(name override, library flag, root id)``, None when malformed."""
    scan = facts.get("scan")
    if not isinstance(scan, list) or len(scan) != 3:
        return None
    override, library, rid = scan
    if not (override is None or isinstance(override, str)) or not isinstance(library, bool):
        return None
    if not (rid is None or isinstance(rid, str)):
        return None
    return override, library, rid


def _trusted(st: os.stat_result) -> bool:
    """Owned by this user (or root) and not writable by group or others."""
    owner_ok = st.st_uid in (os.getuid(), 0) if hasattr(os, "getuid") else True
    return owner_ok and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def open_facts(cache_dir: str | Path | None = None, enabled: bool = True) -> SchemaFacts | None:
    """The cache under ``cache_dir`` (default: ``default_cache_dir()``), None when off."""
    if not enabled:
        return None
    return SchemaFacts(Path(cache_dir) if cache_dir else default_cache_dir())
