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
from typing import Any

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


#: the JSON-Schema-Test-Suite's draft folders -> the ``$schema`` a group of that folder is read
#: with (the suite's schemas rarely say it themselves)
SUITE_DIALECTS = {
    "draft4": "http://json-schema.org/draft-04/schema#",
    "draft6": "http://json-schema.org/draft-06/schema#",
    "draft7": "http://json-schema.org/draft-07/schema#",
    "draft2019-09": "https://json-schema.org/draft/2019-09/schema",
    "draft2020-12": "https://json-schema.org/draft/2020-12/schema",
}


def suite_groups(drafts: tuple[str, ...] | None = None) -> Iterator[tuple[str, dict, Any]]:
    """(draft folder, group, schema) for every group of the suite's ``drafts`` (every draft
    folder it holds, ``optional/`` included, when None), in file order (drafts in the order
    given), leaving out a group whose schema names the suite's remote server
    (``localhost:1234``: a remote ``$ref`` is never fetched); ``schema`` is the group's with
    its folder's ``$schema`` added where an object has none. Fails when the suite is missing."""
    tests = JSTS / "tests"
    if not tests.is_dir():
        pytest.fail(f"corpus not found: {JSTS}")
    if drafts is None:
        files = sorted(tests.rglob("*.json"))
    else:
        files = [f for d in drafts for f in sorted((tests / d).rglob("*.json"))]
    for f in files:
        draft = f.relative_to(tests).parts[0]
        uri = SUITE_DIALECTS.get(draft)
        if uri is None:
            continue
        for group in json.loads(f.read_text(encoding="utf-8")):
            schema = group["schema"]
            if "localhost:1234" in json.dumps(schema):
                continue
            if isinstance(schema, dict) and "$schema" not in schema:
                schema = {"$schema": uri, **schema}
            yield draft, group, schema
