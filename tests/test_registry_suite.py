"""The official JSON-Schema-Test-Suite through the registry loader and ``Schema.validator``.

Every schema either loads or yields clear problems; remote refs (the suite expects a server
on localhost:1234) are reported, never fetched. Where a schema loads, the registry's
validator (self-contained form, offline ref registry) must agree with the suite on every
instance, except ``format.json``: the registry asserts formats on purpose (DESIGN.md).
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from schemaops.registry import load_schema_text, validate_schema_object

DRAFTS = ["draft2020-12", "draft7"]  # the drafts this copy of the suite ships


@pytest.mark.parametrize("draft", DRAFTS)
def test_suite_loads_and_validates(corpora, draft):
    root = corpora / "json-schema-test-suite" / "tests" / draft
    files = sorted(root.glob("*.json"))
    assert files, root
    problems_by: Counter = Counter()
    checked = mismatches = 0
    wrong: list = []
    for f in files:
        for case in json.loads(f.read_text()):
            schema = case["schema"]
            if isinstance(schema, dict) and "$schema" not in schema and draft == "draft7":
                # the suite's schemas rely on the folder's draft; say it as a file would
                uri = "http://json-schema.org/draft-07/schema#"
                schema = {"$schema": uri, **schema}
            problems = validate_schema_object(schema)
            if problems:
                for p in problems:
                    assert p["reason"], p
                    problems_by[(f.name, p["kind"])] += 1
                continue
            if f.name == "format.json":
                continue
            validator = load_schema_text(json.dumps(schema)).validator()
            for t in case["tests"]:
                checked += 1
                if validator.is_valid(t["data"]) != t["valid"]:
                    mismatches += 1
                    wrong.append((f.name, case["description"], t["description"]))
    assert checked > 500
    assert wrong == []
    # every problem is one of the expected, explained kinds
    kinds = {kind for _, kind in problems_by}
    assert kinds <= {"ref_remote", "ref_outside", "unknown_draft", "metaschema"}, problems_by
    remote_files = {name for name, kind in problems_by if kind == "ref_remote"}
    assert "refRemote.json" in remote_files
