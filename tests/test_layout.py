"""The test tree itself: pytest imports test files by basename (no ``__init__.py``), so two
files with one name under ``tests/`` and ``tests/integration/`` stop the whole run at
collection ("import file mismatch"), seen only in a full run. This fails at once instead."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_no_two_test_files_share_a_basename() -> None:
    names = Counter(p.name for p in TESTS.rglob("*.py") if p.name != "conftest.py")
    assert [n for n, k in names.items() if k > 1] == []
