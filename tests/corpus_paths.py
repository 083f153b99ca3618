"""Where the repository and the shared corpora are, for test modules to import.

Test modules import these names from here, never ``from conftest import ...``: with
``tests/integration/conftest.py`` beside ``tests/conftest.py``, the module named ``conftest``
is whichever pytest imported last, so such an import breaks when the whole suite runs."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CORPORA = SHARED / "corpora"
JSB = CORPORA / "jsonschemabench"
JSTS = CORPORA / "json-schema-test-suite"
