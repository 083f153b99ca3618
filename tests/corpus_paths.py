"""Where the repository and the shared corpora are, for test modules to import.

Test modules import these names from here, never ``from conftest import ...``: with
``tests/integration/conftest.py`` beside ``tests/conftest.py``, the module named ``conftest``
is whichever pytest imported last, so such an import breaks when the whole suite runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CORPORA = SHARED / "corpora"
JSB = CORPORA / "jsonschemabench"
JSTS = CORPORA / "json-schema-test-suite"


def jsb_schema_texts() -> Iterator[str]:
    """Every JSONSchemaBench schema's text, in file and line order (fails when the corpus is
    missing: a test over the corpus must not pass by reading nothing)."""
    if not JSB.is_dir():
        pytest.fail(f"corpus not found: {JSB}")
    for f in sorted(JSB.glob("*.jsonl")):
        with f.open(encoding="utf-8") as fh:
            for line in fh:
                yield json.loads(line)["json_schema"]
