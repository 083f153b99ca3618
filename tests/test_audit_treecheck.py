"""The closure check (``audit/verdict/treecheck.py``) and the skipping explainer
(``audit/verdict/explain.py``).

Their equality with ``jsonschema`` is tested differentially (``test_audit_differential.py``,
``test_audit_jsts.py``, ``test_audit_classify.py``); these tests pin what they are for: a
schema's first output needs no ``jsonschema`` call when it is valid, and explaining a failure
descends only into the failing subtrees, with the same category, path and message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from corpus_paths import JSB
from jsonschema.exceptions import best_match
from spies import calls_to

from schemaops.audit.verdict.validate import SchemaChecker

ITEM = {
    "type": "object",
    "properties": {"sku": {"type": "string", "pattern": "^[A-Z]+$"}, "n": {"type": "integer"}},
    "required": ["sku", "n"],
    "additionalProperties": False,
}
SCHEMA = {
    "type": "object",
    "properties": {
        "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
        "note": {"type": "string"},
        "tags": {"type": "array", "prefixItems": [{"type": "string"}], "items": {"enum": [1]}},
        "either": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/item"}]},
    },
    "allOf": [{"required": ["items"]}],
    "additionalProperties": {"$ref": "#/$defs/item"},
    "$defs": {"item": ITEM},
}
V = "schema_violation:"
GOOD_ITEMS = [{"sku": "AB", "n": i} for i in range(50)]


def test_first_valid_output_needs_no_jsonschema(monkeypatch: pytest.MonkeyPatch) -> None:
    checker = SchemaChecker("s", SCHEMA)
    assert checker.tree is not None and not checker.fast_path

    def refuse(*a: Any, **k: Any) -> Any:
        raise AssertionError("jsonschema called for a valid output")

    monkeypatch.setattr(type(checker.validator), "iter_errors", refuse)
    monkeypatch.setattr(type(checker._explainer), "iter_errors", refuse)
    assert checker.check({"items": GOOD_ITEMS, "note": "x"}).category == "ok"


@pytest.mark.parametrize(
    ("value", "category", "path"),
    [
        (
            {"items": [*GOOD_ITEMS, {"sku": "ab", "n": 1}]},
            "schema_violation:pattern",
            "/items/50/sku",
        ),
        ({"items": GOOD_ITEMS, "note": 5}, "schema_violation:type", "/note"),
        ({"items": GOOD_ITEMS, "x": {"sku": "A"}}, "schema_violation:required", "/x"),
        ({"items": GOOD_ITEMS, "tags": [1, 2]}, V + "enum", "/tags/1"),
        (
            {"items": GOOD_ITEMS, "either": {"sku": "A", "n": "1"}},
            V + "type",
            "/either/n",
        ),
        ({"note": "x"}, "schema_violation:required", ""),
    ],
)
def test_explaining_descends_only_into_failing_subtrees(
    value: Any, category: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    checker = SchemaChecker("s", SCHEMA)
    plain = best_match(checker.validator.iter_errors(value))
    cls = type(checker._explainer)
    descents = calls_to(monkeypatch, cls, "descend")
    got = checker.check(value)
    assert (got.category, got.path) == (category, path)
    assert got.category == f"schema_violation:{plain.validator}"
    assert got.message == plain.message
    assert len(descents) < 10  # the 50 valid items are never walked by jsonschema


D4 = "http://json-schema.org/draft-04/schema#"
D7 = "http://json-schema.org/draft-07/schema#"
LEGACY_EDGES = [
    ({"$schema": D4, "type": "integer"}, [1, 1.0, True, "1"]),
    ({"$schema": D7, "type": "integer"}, [1, 1.0, 1.5, True]),
    ({"$schema": D4, "minimum": 1, "exclusiveMinimum": True}, [1, 1.5, 0]),
    ({"$schema": D4, "maximum": 1, "exclusiveMaximum": False}, [1, 2]),
    ({"$schema": D7, "exclusiveMinimum": 1}, [1, 2]),
    ({"$schema": D4, "const": 1}, [1, 2]),  # draft-04 has no const: ignored
    ({"$schema": D7, "prefixItems": [{"type": "string"}]}, [[1], ["a"]]),  # not draft-7
    (
        {"$schema": D7, "definitions": {"s": {"type": "string"}}, "$ref": "#/definitions/s"},
        ["a", 1],
    ),
    (  # draft-7: the siblings of $ref are ignored (maxLength here)
        {
            "$schema": D7,
            "definitions": {"s": {"type": "string"}},
            "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 1}},
        },
        [{"a": "long"}, {"a": 1}],
    ),
    ({"$schema": D7, "items": {"type": "string"}, "additionalItems": False}, [["a", "b"], [1]]),
    ({"$schema": D7, "items": False}, [[], [1]]),
]


@pytest.mark.parametrize(("schema", "values"), LEGACY_EDGES)
def test_legacy_drafts_follow_their_own_rules(schema: dict, values: list) -> None:
    checker = SchemaChecker("s", schema)
    assert checker.tree is not None
    for value in values:
        assert checker.tree(value) == checker.validator.is_valid(value), (schema, value)
        got = checker.check(value)
        plain = best_match(checker.validator.iter_errors(value))
        keyword = None if plain is None else plain.validator or "false"  # a false schema
        want = "ok" if plain is None else f"schema_violation:{keyword}"
        assert got.category == want, (schema, value)


def test_draft4_string_id_and_item_tuples_stay_on_jsonschema() -> None:
    assert SchemaChecker("s", {"$schema": D4, "id": "http://x/y", "type": "string"}).tree is None
    assert SchemaChecker("s", {"$schema": D7, "items": [{"type": "string"}]}).tree is None
    named_id = {"$schema": D4, "properties": {"id": {"type": "string"}}}  # a property "id"
    assert SchemaChecker("s", named_id).tree is not None


@pytest.mark.corpus("jsonschemabench")
def test_explain_equals_best_match_on_the_platform_workload() -> None:
    """The bench's platform workload generator (``bench/audit_many_schemas.py``: generated
    valid instances, mutated invalid ones) over a seeded sample of JSONSchemaBench: every
    invalid output's keyword, path and message equal plain ``best_match``."""
    import importlib.util
    import json
    import random
    import signal

    from schemaops.audit.verdict.classify import parse_output
    from schemaops.audit.verdict.explain import explain
    from schemaops.errors import InputError

    repo = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location(
        "audit_many_schemas", repo / "bench" / "audit_many_schemas.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # type: ignore[union-attr]
    rows = []
    for f in sorted(JSB.glob("*.jsonl")):
        rows += [json.loads(line)["json_schema"] for line in f.open(encoding="utf-8")]
    rng = random.Random(15)
    old = signal.signal(signal.SIGALRM, bench._on_alarm)
    compared = 0
    try:
        for text in rng.sample(rows, 400):
            try:
                schema = json.loads(text)
                checker = SchemaChecker("s", schema)
            except (ValueError, InputError):
                continue
            if checker.tree is None:
                continue
            valid = bench.valid_instances(schema, checker.validator)
            for out in bench.invalid_texts(schema, checker.validator, valid, rng):
                value, failure = parse_output(out)
                if failure is not None or checker.validator.is_valid(value):
                    continue
                plain = best_match(checker.validator.iter_errors(value))
                got = explain(checker._explainer, checker.tree, value)
                fields = (got.validator, list(got.absolute_path), got.message)
                assert fields == (plain.validator, list(plain.absolute_path), plain.message)
                compared += 1
    finally:
        signal.signal(signal.SIGALRM, old)
    assert compared > 300


def test_lazy_subtrees_compile_on_first_use_and_fall_back_exactly() -> None:
    """A lazy tree compiles a property's subtree only when an output has that property. A
    subtree it cannot answer exactly (``multipleOf`` is not in the subset) breaks the whole
    tree on first use: that output and every later one get jsonschema's own verdict."""
    from schemaops.audit.verdict.classify import parse_output
    from schemaops.audit.verdict.subset import Unsupported
    from schemaops.audit.verdict.treecheck import compile_tree

    schema = {
        "type": "object",
        "required": ["a"],
        "properties": {
            "a": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}},
            "odd": {"type": "integer", "multipleOf": 7},
        },
    }
    checker = SchemaChecker("lazy", schema)
    tree = checker.tree
    assert tree is not None and compile_tree(*checker._fast_args) is None  # eager: refused
    a_schema = schema["properties"]["a"]
    n_schema = a_schema["properties"]["n"]
    assert tree.of(n_schema) is None  # under a lazy child: not even known yet
    assert tree({"a": {"n": 1}}) and not tree({"a": {"n": 4}})
    assert tree.of(n_schema) is not None  # compiled by that call, reachable for explain
    assert checker.check(parse_output('{"a": {"n": 9}}')[0]).path == "/a/n"
    assert not tree.broken
    with pytest.raises(Unsupported):
        tree({"a": {}, "odd": 8})
    assert tree.broken and tree.of(a_schema) is None
    for text, category in (
        ('{"a": {}, "odd": 8}', "schema_violation:multipleOf"),
        ('{"a": {}, "odd": 14}', "ok"),
        ('{"a": {"n": 5}, "odd": 14}', "schema_violation:maximum"),
    ):
        assert checker.check(parse_output(text)[0]).category == category, text
    assert checker.tree is None  # jsonschema alone from now on
