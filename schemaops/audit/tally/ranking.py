"""Counts in report order, the same in every process.

Why its own module: the statistics (``stats``) and the diagnoses (``diagnose``) both rank
counters for the report, and ``stats`` merges diagnoses, so the ranking cannot live in either
without an import cycle.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


def ranked(counts: Counter, n: int | None = None) -> list[tuple[Any, int]]:
    """``most_common`` with ties in a fixed order (by key), not in order of first insertion:
    a report is then the same whether one process or several workers counted (``routing``)."""
    return sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))[:n]
