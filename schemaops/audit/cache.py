"""On-disk cache of schema facts, so a daily audit over the same registry starts warm.

What is cached is data, never code: for each registry file found clean (no problem at all,
its sidecar examples included) one small JSON entry saying so. A hit lets the lazy registry
skip the metaschema check, the ref checks and the cycle search (and the checker its own
metaschema check), which are most of a schema's first-use cost. The fastcheck source is not
cached: it runs with compiled constants (regexes, format tests) that source text cannot
carry, and executing code read from a cache folder would need a trust check of its own.

Keying: sha256 over the schemaops, jsonschema and referencing versions, the example settings,
the file's bytes and its sidecar's bytes. Only files whose refs stay inside themselves are
cached (a file that refers to another depends on that file too). Checks that depend on the
rest of the registry (a duplicate ``$id``) run on every load.

Safety: entries are written to a temporary file in the same folder and renamed into place
(atomic on POSIX), so concurrent runs never see half an entry. An entry is used only if it is
a JSON object naming the same key and versions with the expected fields; anything else
(truncated, edited, another format) is ignored and rebuilt. On a shared machine an entry or
folder that other users can write is not trusted either. Any I/O error turns the cache off
for that lookup; the audit never fails because of its cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import orjson

FORMAT = 1  # entry layout; bump when it changes


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/schemaops/audit`` (``~/.cache/schemaops/audit`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / "schemaops" / "audit"


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    from schemaops import __version__

    parts = [f"schemaops={__version__}", f"format={FORMAT}"]
    for dist in ("jsonschema", "referencing", "jsonschema-specifications"):
        try:
            parts.append(f"{dist}={version(dist)}")
        except PackageNotFoundError:
            parts.append(f"{dist}=?")
    return ";".join(parts)


class SchemaFacts:
    """Facts about schema files, one JSON entry per key under ``root``."""

    def __init__(self, root: str | Path, versions: str | None = None) -> None:
        self.root = Path(root)
        self.versions = versions if versions is not None else _versions()
        self.hits = self.misses = self.rejected = self.write_errors = 0

    def key(self, raw: bytes, path: Path, examples: bool, timeout: float) -> str:
        """The entry key for a schema file's bytes (and its sidecar's, when examples count)."""
        from schemaops.registry.examples import sidecar_path

        h = hashlib.sha256()
        h.update(f"{self.versions};examples={examples};timeout={timeout!r}\0".encode())
        h.update(hashlib.sha256(raw).digest())
        side = b""
        if examples:
            try:
                side = sidecar_path(path).read_bytes()
            except FileNotFoundError:
                side = b""
            except OSError:
                side = os.urandom(16)  # unreadable now: never matches, never reused
        h.update(hashlib.sha256(side).digest())
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The facts stored under ``key``, or None (missing, corrupt, stale or untrusted)."""
        path = self._path(key)
        try:
            with open(path, "rb") as fh:
                if not _trusted(os.fstat(fh.fileno())) or not _trusted(os.stat(path.parent)):
                    self.rejected += 1
                    return None
                raw = fh.read(1 << 16)
        except OSError:
            self.misses += 1
            return None
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError:  # truncated, edited, not ours: rebuilt, never trusted
            doc = None
        facts = doc.get("facts") if isinstance(doc, dict) else None
        if (
            not isinstance(facts, dict)
            or doc.get("key") != key
            or doc.get("versions") != self.versions
            or facts.get("clean") is not True
        ):
            self.rejected += 1
            return None
        self.hits += 1
        return facts

    def put(self, key: str, facts: dict[str, Any]) -> None:
        """Store ``facts`` atomically (write a temporary file, rename it into place)."""
        path = self._path(key)
        doc = {"key": key, "versions": self.versions, "facts": facts}
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "wb") as fh:
                fh.write(json.dumps(doc).encode())
            os.replace(tmp, path)
            tmp = None
        except OSError:
            self.write_errors += 1
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


def _trusted(st: os.stat_result) -> bool:
    """Owned by this user (or root) and not writable by group or others."""
    owner_ok = st.st_uid in (os.getuid(), 0) if hasattr(os, "getuid") else True
    return owner_ok and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def open_facts(cache_dir: str | Path | None = None, enabled: bool = True) -> SchemaFacts | None:
    """The cache under ``cache_dir`` (default: ``default_cache_dir()``), None when off."""
    if not enabled:
        return None
    return SchemaFacts(Path(cache_dir) if cache_dir else default_cache_dir())
