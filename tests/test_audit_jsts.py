"""The official JSON-Schema-Test-Suite (draft 2020-12) run through the audit's validation.

Every valid instance must be ``ok``; every invalid one a ``schema_violation`` whose keyword is
one the test's schema uses. The compiled fast path must agree with jsonschema everywhere.

Principled exclusions:
- ``optional/`` (not required by the spec) and tests that need remote refs
  (``http://localhost:1234``: the suite's remote server) are skipped: the audit never
  fetches a remote ``$ref`` (schemaops/registry/refs.py).
- The suite's required tests are written for the 2020-12 default where ``format`` is an
  annotation, so they run with format assertion off (``--no-format``); format assertion
  itself is tested in test_audit_classify.py.
- A ``false`` subschema fails with no keyword: the audit reports it as ``false``, which counts
  as "used" when the schema contains a ``false`` subschema.
- Patterns in ECMA-262-only syntax (``\\p{Letter}``) cannot be compiled by Python's ``re``
  (nor evaluated by jsonschema): the audit refuses such a schema (exit 2); skipped here.
- When the schema ``$ref``s a metaschema, the failing keyword may come from the metaschema;
  those keywords count as used.
"""

from __future__ import annotations

import json

import pytest
from corpus_paths import JSTS
from json_walk import walk

from schemaops.audit.verdict.classify import parse_output
from schemaops.audit.verdict.subset import Unsupported
from schemaops.audit.verdict.validate import SchemaChecker
from schemaops.errors import InputError

SUITE = JSTS / "tests" / "draft2020-12"
pytestmark = pytest.mark.corpus("json-schema-test-suite")
META_KEYWORDS = {
    "type",
    "enum",
    "minimum",
    "minLength",
    "anyOf",
    "$ref",
    "$dynamicRef",
    "items",
    "properties",
    "additionalProperties",
    "pattern",
    "required",
    "format",
    "propertyNames",
    "const",
    "uniqueItems",
    "oneOf",
    "allOf",
    "not",
}


def _cases() -> list:
    if not SUITE.is_dir():
        return []
    out = []
    for f in sorted(SUITE.glob("*.json")):
        for group in json.loads(f.read_text()):
            text = json.dumps(group["schema"])
            if "localhost:1234" in text:
                continue
            out.append(pytest.param(group, id=f"{f.stem}:{group['description'][:50]}"))
    return out


CASES = _cases()


def test_suite_present() -> None:
    assert SUITE.is_dir(), f"JSON-Schema-Test-Suite not found at {SUITE}"
    assert len(CASES) > 300


@pytest.mark.parametrize("group", CASES)
def test_suite_group(group: dict) -> None:
    schema = group["schema"]
    try:
        checker = SchemaChecker("t", schema, assert_format=False)
    except InputError as exc:
        # ECMA-262-only regex syntax (\p{Letter}) that Python's re cannot compile: jsonschema
        # cannot evaluate it either, so the audit refuses the schema with a clear message.
        assert "is not a 'regex'" in str(exc)
        pytest.skip(f"pattern not compilable by Python re: {exc}")
    used = {key for node in walk(schema) if isinstance(node, dict) for key in node}
    if any(node is False for node in walk(schema)):
        used.add("false")
    if any(isinstance(v, str) and "json-schema.org" in v and k == "$ref" for k, v in _refs(schema)):
        used |= META_KEYWORDS
    for test in group["tests"]:
        text = json.dumps(test["data"])
        value, failure = parse_output(text)
        assert failure is None, (test["description"], failure)
        outcome = checker.check(value)
        if checker.fast is not None:
            assert checker.fast(value) == checker.validator.is_valid(value), test["description"]
        if checker.tree is not None:  # the closure check (treecheck.py), where it can answer
            try:
                said = checker.tree(value)
            except Unsupported:  # a lazy subtree it cannot answer exactly: jsonschema does
                said = None
            if said is not None:
                assert said == checker.validator.is_valid(value), test["description"]
        if test["valid"]:
            assert outcome.category == "ok", (test["description"], outcome)
        else:
            assert outcome.category.startswith("schema_violation:"), (test["description"], outcome)
            keyword = outcome.category.split(":", 1)[1]
            assert keyword in used, (test["description"], keyword, sorted(used))


def _refs(node: object):
    if isinstance(node, dict):
        for k, v in node.items():
            yield k, v
            yield from _refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _refs(v)
