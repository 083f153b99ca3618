"""Explanations located by jsonschema-rs (``audit/verdict/rsexplain.py``) against ``best_match``.

The report's keyword, path and message of a failed output were ``best_match`` over
``jsonschema``'s ``iter_errors``; ``rs_best_match`` must give exactly those three fields
wherever it answers (None hands the output to ``jsonschema``). Walked: every group of the
JSON-Schema-Test-Suite (2020-12 and draft 7, each test's data mutated) and a JSONSchemaBench
sample (every 5th schema, instances built from the schema's own values, mutated). The counts
of what it answered and what it handed back are printed (``-s``) for docs/findings.md.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from corpus_paths import JSB, suite_groups
from jsonschema.exceptions import best_match
from test_audit_rs_agreement import _instance, _mutations

from schemaops.audit.verdict.classify import parse_output
from schemaops.audit.verdict.rscheck import ascii_text
from schemaops.audit.verdict.rsexplain import rs_best_match
from schemaops.audit.verdict.validate import MESSAGE_LIMIT, SchemaChecker
from schemaops.errors import InputError
from schemaops.strings import pointer, truncate

D7 = "http://json-schema.org/draft-07/schema#"


def _oracle(checker: SchemaChecker, value: Any) -> tuple | None:
    schema, cls, fmt = checker._fast_args
    err = best_match(cls(schema, format_checker=fmt).iter_errors(value))
    if err is None:
        return None
    return (
        err.validator if err.validator is not None else "false",
        list(err.absolute_path),
        err.message,
    )


def _compare(schema: Any, instances: list[Any], stats: Counter, bad: list[str]) -> None:
    try:
        checker = SchemaChecker("t", schema)
    except InputError:
        return
    if checker.fast is None or checker._rs is None:
        stats["schemas_not_rs"] += 1
        return
    stats["schemas"] += 1
    schema_, cls, fmt = checker._fast_args
    worder = cls(schema_, format_checker=fmt)
    for inst in instances:
        try:
            text = json.dumps(inst)
        except (TypeError, ValueError):
            continue
        value, failure = parse_output(text)
        if failure is not None:
            continue
        try:
            if checker.fast(value):
                continue
            want = _oracle(checker, value)
        except RecursionError:
            continue
        if want is None:
            continue  # jsonschema-rs stricter: the checker asks jsonschema, which says ok
        if checker._rs_ascii and not ascii_text(value):
            stats["gated"] += 1  # the ASCII gate: the checker asks jsonschema alone
            continue
        stats["failures"] += 1
        got = rs_best_match(checker._rs, worder, schema_, value)
        # lazy vs eager: a message written when read is the one written at once
        later = rs_best_match(checker._rs, worder, schema_, value, lazy=True)
        if later is not None and callable(later[2]):
            stats["worded_later"] += 1
            later = (later[0], later[1], later[2]())
        if (later is None) != (got is None) or (later is not None and tuple(later) != got):
            bad.append(f"lazy {json.dumps(schema)[:160]} on {text[:80]}: {later} != {got}")
        # and the whole check (its WordedLater read as an example reads it) against best_match
        outcome = checker.check(value)
        seen = (outcome.category, outcome.path, outcome.message)
        expected = (
            f"schema_violation:{want[0]}",
            pointer(want[1]),
            truncate(want[2], MESSAGE_LIMIT),
        )
        if seen != expected:
            bad.append(f"check {json.dumps(schema)[:160]} on {text[:80]}: {seen} != {want}")
        if got is None:
            stats["handed_back"] += 1
            stats[f"handed_back:{want[0]}"] += 1
            continue
        stats["answered"] += 1
        stats[f"answered:{want[0]}"] += 1
        if tuple(got) != want:
            bad.append(f"{json.dumps(schema)[:160]} on {text[:80]}: {got} != {want}")


def _suite(stats: Counter, bad: list[str]) -> None:
    rng = random.Random(36)
    for _draft, group, schema in suite_groups(("draft2020-12", "draft7")):
        data = [t["data"] for t in group["tests"]]
        _compare(schema, [m for d in data for m in _mutations(d, rng)], stats, bad)


def _bench(stats: Counter, bad: list[str], every: int = 5) -> None:
    rng = random.Random(361)
    for f in sorted(Path(JSB).glob("*.jsonl")):
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines()):
            if i % every:
                continue
            try:
                schema = json.loads(json.loads(line)["json_schema"])
            except (ValueError, KeyError):
                continue
            if not isinstance(schema, dict):
                continue
            instances = [
                m for _ in range(2) for m in _mutations(_instance(schema, schema, rng), rng)
            ]
            _compare(schema, instances, stats, bad)


def _report(name: str, stats: Counter) -> None:
    print(f"\n{name}: " + ", ".join(f"{k}={v}" for k, v in sorted(stats.items())))


@pytest.mark.corpus("json-schema-test-suite")
def test_suite_explanations_equal_best_match() -> None:
    stats: Counter = Counter()
    bad: list[str] = []
    _suite(stats, bad)
    _report("suite", stats)
    assert not bad, f"{len(bad)} explanations differ from best_match: {bad[:5]}"
    assert stats["answered"] > 1_000, stats
    assert stats["worded_later"] > 1_000, stats  # the lazy messages were compared too


@pytest.mark.corpus("jsonschemabench")
def test_jsonschemabench_explanations_equal_best_match() -> None:
    stats: Counter = Counter()
    bad: list[str] = []
    _bench(stats, bad)
    _report("jsonschemabench", stats)
    assert not bad, f"{len(bad)} explanations differ from best_match: {bad[:5]}"
    assert stats["answered"] > 5_000, stats
    assert stats["worded_later"] > 5_000, stats
    # most failures of real schemas are located by jsonschema-rs
    assert stats["handed_back"] < stats["answered"], stats


# Shapes where jsonschema-rs's error list is not jsonschema's: each must be handed back (None)
# or answered exactly as best_match.
HARD = [
    ({"items": False}, [1, 2]),
    ({"prefixItems": [{"type": "string"}], "items": False}, [1, 2]),
    ({"properties": {"a": False}}, {"a": 1}),
    ({"contains": {"type": "string"}, "minContains": 2}, ["a", 1]),
    ({"propertyNames": {"maxLength": 2}}, {"abc": 1}),
    ({"unevaluatedProperties": False, "properties": {"a": {}}}, {"a": 1, "b": 2}),
    ({"required": ["a", "b"], "properties": {"x": {"type": "string"}}}, {"x": 1}),
    ({"allOf": [{"type": "string"}, {"type": "string"}]}, 1),
    ({"allOf": [{"type": "string"}, {"type": ["string", "null"]}]}, 1),
    ({"anyOf": [{"type": "string"}, {"minimum": 3}]}, 1),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, 1),
    ({"dependentRequired": {"a": ["b", "c"]}}, {"a": 1}),
    ({"$schema": D7, "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}, {"a": 1, "c": 1}),
    ({"if": {"type": "integer"}, "then": {"minimum": 3}, "else": {"type": "string"}}, 1),
    ({"$defs": {"a": {"type": "integer"}}, "properties": {"x": {"$ref": "#/$defs/a"}}}, {"x": "s"}),
    ({"multipleOf": 0.1}, 0.35),
    ({"pattern": "^\\d+$"}, "\u0663x"),
    ({"format": "email"}, "x"),
    # jsonschema-rs 0.61.2 drops an empty key from its locations and reads "0" as an index
    ({"patternProperties": {"^$": {"type": "integer"}}}, {"": 1.5}),
    ({"additionalProperties": {"type": "integer"}}, {"": {"": "x"}, "a": 1}),
    ({"properties": {"": {"type": "integer"}}, "required": ["b"]}, {"": "x", "b": 1}),
    ({"additionalProperties": {"type": "integer"}}, {"0": "x"}),
    (
        {"type": "object", "additionalProperties": False, "patternProperties": {"^a": {}}},
        {"b": 1, "c": 2},
    ),
    # a root $id (``root_id_only``): refs from its base, into the document, under anyOf too
    (
        {
            "$id": "https://example.com/s.json",
            "$defs": {"a": {"type": "integer"}},
            "properties": {"x": {"$ref": "#/$defs/a"}, "y": {"anyOf": [{"$ref": "#/$defs/a"}]}},
        },
        {"x": "s", "y": "t"},
    ),
    (
        {
            "$schema": D7,
            "$id": "https://example.com/s.json#",
            "definitions": {"a": {"enum": [1, 2]}},
            "properties": {"x": {"$ref": "#/definitions/a"}},
            "required": ["z"],
        },
        {"x": 3},
    ),
    (
        {"$schema": D7, "$id": "#top", "properties": {"x": {"$ref": "#top"}}, "type": "object"},
        {"x": 1},
    ),
    # ``best_match``'s descent into anyOf/oneOf read from jsonschema-rs's branch errors: a
    # unique least error, a tie (the applicator's own message), branches through $refs, a
    # nested oneOf, a deeper error, ``oneOf`` valid under two branches (left to jsonschema)
    ({"anyOf": [{"type": "string"}, {"type": "object", "required": ["a"]}]}, {"b": 1}),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, 1.5),
    (
        {
            "$defs": {"s": {"type": "string", "minLength": 3}, "n": {"type": "integer"}},
            "properties": {"x": {"oneOf": [{"$ref": "#/$defs/s"}, {"$ref": "#/$defs/n"}]}},
        },
        {"x": "ab"},
    ),
    (
        {"anyOf": [{"oneOf": [{"type": "integer"}, {"minimum": 3}]}, {"type": "string"}]},
        2.5,
    ),
    (
        {
            "anyOf": [
                {"properties": {"a": {"properties": {"b": {"enum": [1]}}}}},
                {"properties": {"a": {"type": "string"}}},
            ],
        },
        {"a": {"b": 2}},
    ),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, 5),
    # a ``false`` branch (its error has no keyword), a branch ``$ref``ing its sibling
    ({"anyOf": [False, {"type": "string"}]}, 1),
    ({"anyOf": [{"$ref": "#/anyOf/1"}, {"type": "string", "minLength": 2}]}, "a"),
]


def test_only_a_root_id_is_explained_by_jsonschema_rs() -> None:
    """A root ``$id`` keeps every subschema's base the document's; a nested ``$id``, an
    anchor, or an ``$id`` naming an anchor leaves the schema to ``jsonschema``."""
    from schemaops.audit.verdict.rsexplain import root_id_only

    assert root_id_only({"$id": "https://x/s.json", "type": "object"})
    assert root_id_only({"$id": "s.json#", "properties": {"a": {"type": "string"}}})
    assert not root_id_only({"type": "object"})  # no $id: ``no_ids`` says it
    assert not root_id_only({"$id": "https://x/s", "$defs": {"a": {"$id": "a"}}})
    assert not root_id_only({"$id": "https://x/s", "$defs": {"a": {"$anchor": "a"}}})
    assert not root_id_only({"$id": "#top"})
    assert not root_id_only({"$id": 5})


@pytest.mark.parametrize(("schema", "instance"), HARD)
def test_hard_shapes_answer_exactly_or_hand_back(schema: Any, instance: Any) -> None:
    checker = SchemaChecker("t", schema)
    assert checker.fast is not None
    want = _oracle(checker, instance)
    assert want is not None, "the case must fail in jsonschema"
    if checker._rs is not None:  # None: the schema itself is not explainable (an empty key)
        s, cls, fmt = checker._fast_args
        got = rs_best_match(checker._rs, cls(s, format_checker=fmt), s, instance)
        assert got is None or tuple(got) == want, (got, want)
    # and the checker reports best_match's fields either way
    c = checker.check(instance)
    assert (c.category, c.message) == (f"schema_violation:{want[0]}", want[2])
