"""Where the repository and the third-party corpora are, for test modules to import.

The corpora are found by ``schemaops.corpora.locate`` (``$SCHEMAOPS_CORPORA``, then
``../shared/corpora``, then the cache folder that ``python scripts/get_corpora.py`` fills). A
test that reads one is marked ``@pytest.mark.corpus("jsonschemabench")`` (or
``"json-schema-test-suite"``, or both): ``conftest.py`` skips it with one summary line when
that corpus is not at hand, and fails it when ``CI=true``. ``"json-schema-test-suite@pinned"``
asks for the suite at its pinned commit (a test that counts its cases), not the older copy
that python-jsonschema's sdist brings where GitHub is out of reach.

Test modules import these names from here, never ``from conftest import ...``: with
``tests/integration/conftest.py`` beside ``tests/conftest.py``, the module named ``conftest``
is whichever pytest imported last, so such an import breaks when the whole suite runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from schemaops import corpora

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
FOUND = corpora.locate()
_ABSENT = corpora.cache_dir() / "absent"
#: JSONSchemaBench's ``<Subset>.jsonl`` folder (a path that does not exist when not at hand)
JSB = FOUND.jsb or _ABSENT / corpora.JSB
#: the JSON-Schema-Test-Suite's root folder (``tests/<draft>/*.json`` below it)
JSTS = FOUND.jsts or _ABSENT / corpora.JSTS
#: a folder holding both (the ``corpora`` fixture); the first one found
CORPORA = FOUND.root or _ABSENT
HOW_TO_GET = (
    "run `python scripts/get_corpora.py` (pinned, checksummed downloads into the cache "
    "folder) or point SCHEMAOPS_CORPORA at a folder holding them"
)


def jsb_schema_texts() -> Iterator[str]:
    """Every JSONSchemaBench schema's text, in file and line order (fails when the corpus is
    missing: a test over the corpus must not pass by reading nothing)."""
    if not JSB.is_dir():
        pytest.fail(f"corpus not found: {JSB}")
    for f in sorted(JSB.glob("*.jsonl")):
        with f.open(encoding="utf-8") as fh:
            for line in fh:
                yield json.loads(line)["json_schema"]
