"""What the lazy registry asks of an on-disk facts store (``audit/verdict/cache.py``'s
``SchemaFacts`` is the one implementation).

Why a protocol here: the registry remembers what it learnt about its files (a file found clean,
what the index read from it) across runs, but the store also keeps the audit's checker hints,
so it lives with the audit; the registry depends only on this interface, never on the audit.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

#: what the index read from a file: (name override, library flag, root ``$id``)
ScanFacts = tuple[str | None, bool, str | None]


@runtime_checkable
class FactsStore(Protocol):
    """Entries keyed by what derives them; a read that cannot be trusted is a miss."""

    def key(
        self, raw: bytes, path: Path, examples: bool, timeout: float, sidecar: bool = True
    ) -> str:
        """The key of a schema file's facts: its bytes (and its sidecar's, when examples
        count), the check settings and the fingerprint of the deriving code."""
        ...

    def get(self, key: str) -> dict | None:
        """The facts under ``key`` (None: none, or an entry that describes other bytes)."""
        ...

    def put(self, key: str, facts: dict[str, Any]) -> None:
        """Keep ``facts`` under ``key`` (written when the run ends)."""
        ...

    def scan_key(self, path: str, st: os.stat_result) -> str:
        """The key of a file's index entry: its path and the stat fields any write changes."""
        ...

    def scan_get(self, key: str) -> ScanFacts | None:
        """What the index read from a file unchanged since (None: a miss)."""
        ...

    def scan_put(self, key: str, st: os.stat_result, found: ScanFacts, now_ns: int) -> None:
        """Keep a file's index entry, unless it changed too recently to be told apart."""
        ...
