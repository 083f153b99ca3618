"""Merging from a table of keyword groups (issue 23, item 2): interacting keywords are merged
as a group, exactly, or refused (kept, or moved to the residual), never key by key.

The capabilities are data: here a backend is made to report ``allOf`` as ignored, so the
passes flatten every ``allOf`` (today's xgrammar does too; llguidance enforces it), and each
case must keep ``served + residual == original`` on every instance."""

from __future__ import annotations

from typing import Any

import pytest
from test_lower_passes import XGRAMMAR

from schemaops.compare.instances import validator
from schemaops.lower import lower_schema
from schemaops.lower.merge import GROUPS, NotExact, merge
from schemaops.lower.oracle import Oracle

ALLOF_IGNORED = XGRAMMAR | {"allOf": "ignored"}

# (schema, instances): each merged key by key before, wider or narrower and called exact
CASES: list[tuple[dict[str, Any], list[Any]]] = [
    # items applies to every item in its branch, only after prefixItems once merged
    (
        {"allOf": [{"prefixItems": [True]}, {"items": {"maxLength": 3}}]},
        [["abcdef"], ["abc"], ["a", "abcdef"], []],
    ),
    (
        {
            "allOf": [
                {"prefixItems": [{"type": "string"}]},
                {"prefixItems": [True, {"type": "integer"}]},
            ]
        },
        [["a", 1], ["a", "b"], [1, 1]],
    ),
    # minContains counts what contains matches; inert without it in its own branch
    (
        {"allOf": [{"contains": {"type": "integer"}}, {"minContains": 2}]},
        [[1], [1, 2], ["a"]],
    ),
    (
        {"allOf": [{"contains": {"const": 1}}, {"contains": {"const": 2}}]},
        [[1], [2], [1, 2]],
    ),
    # then applies by the if beside it
    (
        {"allOf": [{"if": {"minimum": 5}}, {"then": {"multipleOf": 2}}]},
        [7, 8, 3],
    ),
    (
        {
            "allOf": [
                {"if": {"type": "integer"}, "then": {"minimum": 0}},
                {"if": {"type": "string"}, "then": {"minLength": 2}},
            ]
        },
        [-1, 1, "a", "ab"],
    ),
    # unevaluatedProperties sees every adjacent applicator once merged
    (
        {
            "allOf": [
                {"patternProperties": {"^x": True}, "unevaluatedProperties": False},
                {"properties": {"y": True}},
            ]
        },
        [{"y": 1}, {"x1": 1}, {"z": 1}, {}],
    ),
    (
        {"allOf": [{"properties": {"a": True}}, {"unevaluatedProperties": False}]},
        [{"a": 1}, {}, {"b": 1}],
    ),
    (
        {
            "allOf": [
                {"patternProperties": {"^a": {"type": "integer"}}},
                {"additionalProperties": False},
            ]
        },
        [{"a": 1}, {"ab": "x"}, {"b": 1}, {}],
    ),
    (
        {
            "allOf": [
                {"dependentSchemas": {"a": {"required": ["b"]}}},
                {"dependentRequired": {"a": ["c"]}},
            ]
        },
        [{"a": 1}, {"a": 1, "b": 1}, {"a": 1, "b": 1, "c": 1}],
    ),
    (
        {
            "allOf": [
                {"prefixItems": [{"type": "integer"}], "unevaluatedItems": False},
                {"items": True},
            ]
        },
        [[1], [1, 2], []],
    ),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_served_plus_residual_is_the_original_with_allof_ignored(case: int) -> None:
    schema, instances = CASES[case]
    lw = lower_schema(schema, ALLOF_IGNORED, "xgrammar")
    oracle = Oracle(lw)
    problems = [p for x in instances if (p := oracle.problem(x))]
    assert not problems, (lw.exactness, lw.served, [r.pointer for r in lw.residual], problems)


def test_the_abcdef_case_is_not_called_exact() -> None:
    schema = CASES[0][0]
    lw = lower_schema(schema, ALLOF_IGNORED, "xgrammar")
    assert not validator(schema).is_valid(["abcdef"])
    assert not (validator(lw.served).is_valid(["abcdef"]) and lw.exact)


def test_every_group_merges_on_one_side_and_refuses_on_both() -> None:
    sample = {
        "array items": ({"prefixItems": [True]}, {"items": False}),
        "contains": ({"contains": {"type": "integer"}}, {"maxContains": 1}),
        "conditional": ({"if": {"type": "integer"}}, {"else": False}),
        "object properties": ({"patternProperties": {"^a": True}}, {"additionalProperties": False}),
        "dependencies": ({"dependentSchemas": {"a": False}}, {"dependentRequired": {"b": ["c"]}}),
        "reference": ({"$ref": "#/$defs/a"}, {"$dynamicRef": "#b"}),
    }
    assert set(sample) == set(GROUPS)
    for name, (a, b) in sample.items():
        if name != "reference":
            assert merge(a, {"type": "array"}) == {**a, "type": "array"}, name
            assert merge(a, a) == a, name
        with pytest.raises(NotExact):
            merge(a, b)
    # the exact group rules: items alone on both sides; properties/additionalProperties
    assert merge({"items": {"minimum": 1}}, {"items": {"maximum": 3}}) == {
        "items": {"minimum": 1, "maximum": 3}
    }
    assert merge(
        {"properties": {"a": {"type": "integer"}}, "additionalProperties": False},
        {"properties": {"a": {"minimum": 0}}},
    ) == {"properties": {"a": {"type": "integer", "minimum": 0}}, "additionalProperties": False}
