"""The official JSON-Schema-Test-Suite through the registry loader and ``Schema.validator``.

Every schema either loads or yields clear problems; remote refs (the suite expects a server
on localhost:1234) are reported, never fetched. Where a schema loads, the registry's
validator (self-contained form, offline ref registry) must agree with the suite on every
instance. Nothing is skipped silently: every schema the loader refuses is counted against
an exact table, each entry with its reason, and ``format.json`` (where the suite treats
``format`` as an annotation and the registry asserts it) is checked in the one direction
that must hold: the registry may reject what the suite accepts, never the reverse.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from corpus_paths import JSTS

from schemaops.registry import load_schema_text, validate_schema_object

DRAFTS = ["draft2020-12", "draft7"]  # the drafts this copy of the suite ships

#: Every schema the loader refuses, per draft: (file, problem kind) -> number of schemas.
#: - ref_remote: the suite's remotes are served on localhost:1234; remote refs are never
#:   fetched, by design (each reason must name localhost:1234).
#: - unknown_draft: custom metaschemas, also on localhost:1234 (vocabulary.json).
#: - metaschema: ``\p{Letter}`` (Unicode property escapes) is not a regex Python's ``re``
#:   compiles, so ``format: regex`` in the metaschema rejects it (reported, not a crash).
EXPECTED_REFUSED = {
    "draft2020-12": {
        ("dynamicRef.json", "ref_remote"): 5,
        ("refRemote.json", "ref_remote"): 15,
        ("vocabulary.json", "unknown_draft"): 2,
        ("pattern.json", "metaschema"): 1,
        ("patternProperties.json", "metaschema"): 1,
    },
    "draft7": {("refRemote.json", "ref_remote"): 11},
}
#: format.json instances the suite calls valid (format is an annotation there) and the
#: registry rejects (it asserts formats): counted exactly, so a change either way shows.
#: draft7's copy only has instances the registry agrees with (non-strings, valid values).
FORMAT_STRICTER = {"draft2020-12": 17, "draft7": 0}
WHY = {
    "ref_remote": "localhost:1234",
    "unknown_draft": "localhost:1234",
    "metaschema": "is not a 'regex'",
}


@pytest.mark.parametrize("draft", DRAFTS)
@pytest.mark.corpus("json-schema-test-suite@pinned")
def test_suite_loads_and_validates(draft):
    root = JSTS / "tests" / draft
    files = sorted(root.glob("*.json"))
    assert files, root
    refused: Counter = Counter()  # (file, kind) -> schemas refused with that problem
    schemas = checked = format_stricter = 0
    wrong: list = []
    for f in files:
        for case in json.loads(f.read_text()):
            schemas += 1
            schema = case["schema"]
            if isinstance(schema, dict) and "$schema" not in schema and draft == "draft7":
                # the suite's schemas rely on the folder's draft; say it as a file would
                uri = "http://json-schema.org/draft-07/schema#"
                schema = {"$schema": uri, **schema}
            problems = validate_schema_object(schema)
            if problems:
                for p in problems:
                    assert WHY.get(p["kind"], "(unexpected kind)") in p["reason"], (f.name, p)
                refused.update({(f.name, p["kind"]) for p in problems})
                continue
            validator = load_schema_text(json.dumps(schema)).validator()
            for t in case["tests"]:
                checked += 1
                ok = validator.is_valid(t["data"])
                if ok == t["valid"]:
                    continue
                if f.name == "format.json" and t["valid"] and not ok:
                    format_stricter += 1  # the registry asserts formats on purpose
                    continue
                wrong.append((f.name, case["description"], t["description"]))
    assert wrong == []
    assert dict(refused) == EXPECTED_REFUSED[draft]
    loaded = schemas - sum(EXPECTED_REFUSED[draft].values())
    assert checked > 500 and loaded > 200, (checked, loaded)
    assert format_stricter == FORMAT_STRICTER[draft], format_stricter
