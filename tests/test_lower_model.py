"""The exactness model of ``lower`` (issue 23, item 1): each rewrite declares its effect at
its pointer (``exact``, ``widens`` with a mandatory residual rule, ``narrows`` with what it
wrote), the case's label is derived from them, and a narrowing excuses refusals by the
served schema at its own pointers only."""

from __future__ import annotations

import copy

import pytest
from test_lower_passes import XGRAMMAR

from schemaops.compare.instances import validator
from schemaops.lower import check_residual, lower_schema
from schemaops.lower.model import Lowered, Rewrite, UncoveredWidening
from schemaops.lower.prove import differential, narrowing_marks, refused_only_by
from schemaops.lower.residual import ResidualRule


def test_a_widening_without_a_residual_rule_cannot_exist() -> None:
    widen = Rewrite("/maxLength", "residual", "widens", "moved")
    with pytest.raises(UncoveredWidening):
        Lowered("xgrammar", {"maxLength": 2}, {}, [widen], [])
    rule = ResidualRule("/maxLength", "maxLength", 2, "moved")
    assert Lowered("xgrammar", {"maxLength": 2}, {}, [widen], [rule]).exactness == "relaxed"
    with pytest.raises(UncoveredWidening):  # a residual rule no rewrite declares
        Lowered("xgrammar", {"maxLength": 2}, {}, [], [rule])
    with pytest.raises(ValueError):
        Rewrite("/pattern", "anchor pattern", "narrows", "says nothing of what it wrote")
    with pytest.raises(ValueError):
        Rewrite("/pattern", "anchor pattern", "narrower", "not an effect")


def test_the_label_is_derived_from_the_effects() -> None:
    exact = Rewrite("", "inline $ref", "exact", "")
    narrow = Rewrite("/pattern", "anchor pattern", "narrows", "", {"pattern": "^a$"})
    widen = Rewrite("/minLength", "residual", "widens", "")
    rule = ResidualRule("/minLength", "minLength", 1, "")
    assert Lowered("b", {}, {}, [exact]).exactness == "exact"
    assert Lowered("b", {}, {}, [exact, narrow]).exactness == "narrowed"
    assert Lowered("b", {}, {}, [narrow, widen], [rule]).exactness == "relaxed+narrowed"
    d = narrow.to_dict()
    assert d["effect"] == "narrows" and d["exact"] is False


# a recursive definition cannot be inlined: the $ref is kept, its sibling ignored by xgrammar
NODE = {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "kid": {"$ref": "#/$defs/node", "required": ["name"]},
            },
        }
    },
    "$ref": "#/$defs/node",
}


def test_a_kept_ref_with_ignored_siblings_is_a_widening_with_a_residual_rule() -> None:
    """Before: labelled ``narrowed`` with no residual rule (the proof then switched off its
    refused-by-served checks for the whole schema); what xgrammar serves is the ``$ref``
    alone, which accepts a ``kid`` without a ``name`` that the original refuses."""
    lw = lower_schema(NODE, XGRAMMAR, "xgrammar")
    assert lw.exactness == "relaxed"
    assert [(r.pointer, r.keyword) for r in lw.residual] == [
        ("/$defs/node/properties/kid/required", "required")
    ]
    assert lw.served["$defs"]["node"]["properties"]["kid"] == {"$ref": "#/$defs/node"}
    bad = {"name": "a", "kid": {"kid": {"name": "c"}}}
    assert validator(lw.served).is_valid(bad) and not validator(NODE).is_valid(bad)
    res = check_residual(NODE, lw.residual, bad)
    assert res.flagged and not res.uncovered
    assert differential(lw, 8, [{"name": "a", "kid": {"name": "b"}}]).failures == []


def test_keywords_a_union_ignores_go_to_the_residual_when_not_distributed() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^x": {"type": "integer"}},
        "anyOf": [{"properties": {"a": {"type": "string"}}}, {"required": ["b"]}],
    }
    # patternProperties beside branch properties do not merge exactly
    lw = lower_schema(schema, XGRAMMAR, "xgrammar")
    assert lw.exactness == "relaxed" and "anyOf" in lw.served
    assert {r.keyword for r in lw.residual} == {"type", "patternProperties"}
    res = check_residual(schema, lw.residual, {"a": "s", "x1": "no"})
    assert res.flagged and not res.uncovered


UUIDS = {
    "type": "object",
    "properties": {"id": {"type": "string", "format": "uuid"}, "note": {"type": "string"}},
    "required": ["id"],
}
BRACED = "{3f2b8c1e-9a4d-4e7b-8c21-5d6f7a8b9c0d}"  # a uuid to jsonschema, not to the pattern


def test_a_narrowing_excuses_refusals_at_its_own_pointer_only() -> None:
    """Before: any narrowing switched off the refused-by-served check for the whole schema,
    so a served schema that also refused valid outputs elsewhere passed the proof."""
    lw = lower_schema(UUIDS, XGRAMMAR | {"format.uuid": "ignored"}, "xgrammar")
    assert lw.exactness == "narrowed"
    marks = narrowing_marks(lw)
    served = validator(lw.served)
    assert refused_only_by(served, {"id": BRACED}, marks)
    assert differential(lw, 8).ok

    broken = Lowered(lw.backend, lw.original, copy.deepcopy(lw.served), lw.rewrites, lw.residual)
    broken.served["properties"]["note"]["maxLength"] = 0  # an undeclared narrowing
    bad = validator(broken.served)
    assert not refused_only_by(bad, {"id": BRACED, "note": "x"}, marks)
    diff = differential(broken, 8, [{"id": "3f2b8c1e-9a4d-4e7b-8c21-5d6f7a8b9c0d", "note": "x"}])
    assert not diff.ok and any("refused by" in f for f in diff.failures), diff.failures


def test_a_misspelled_keyword_is_reported_not_passed_through_silently() -> None:
    """A root holding only ``AllOf`` (issue 23, item 5): JSON Schema ignores it, so the
    original accepts anything; lower says so instead of serving it without a word."""
    from schemaops.lower.run import LowerCase

    schema = {"AllOf": [{"type": "string"}], "properties": {"a": {"MinLength": 2}}}
    lw = lower_schema(schema, XGRAMMAR, "xgrammar")
    assert [n.split(" is not")[0] for n in lw.notes] == ["'AllOf'", "'MinLength'"]
    assert "did you mean 'allOf'?" in lw.notes[0]
    assert LowerCase("m", lw, "h").to_dict()["notes"] == lw.notes
    assert lower_schema({"allOf": [{"type": "string"}]}, XGRAMMAR, "xgrammar").notes == []
    kept = lower_schema({"$defs": {"a": {"$anchor": "x"}}, "$ref": "#x"}, XGRAMMAR, "xgrammar")
    assert kept.served == {"$defs": {"a": {"$anchor": "x"}}, "$ref": "#x"}
    assert kept.notes == ["served as it is: $ref '#x' is not a local JSON pointer"]


def test_a_residual_branch_covers_what_fails_behind_its_ref() -> None:
    """JSONSchemaBench ``vtestunit-schema`` (found by bench/lower_suite.py): an ``allOf``
    branch that is a ``$ref`` goes to the residual; the original's failure is located in the
    ref's target, which the rule covers when reached through the branch."""
    from schemaops.lower.oracle import Oracle

    schema = {
        "definitions": {
            "e": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"version": {"$ref": "#/definitions/v"}},
            },
            "v": {"type": "string"},
        },
        "type": "object",
        "oneOf": [
            {
                "allOf": [
                    {"properties": {"version": {"const": "1.0.0"}}},
                    {"$ref": "#/definitions/e"},
                ]
            }
        ],
    }
    lw = lower_schema(schema, XGRAMMAR, "xgrammar")
    x = {"version": "1.0.0", "zz_extra": 1}
    assert validator(lw.served).is_valid(x) and not validator(schema).is_valid(x)
    res = check_residual(schema, lw.residual, x)
    assert res.flagged and not res.uncovered, res
    assert Oracle(lw).problem(x) is None


def test_a_ref_into_a_rewritten_subschema_never_dangles() -> None:
    """A ``$ref`` may point inside a node the passes replace (JSONSchemaBench's
    vtestunit-schema: ``#/definitions/636d/full``, where ``636d`` holds only the non-keyword
    key ``full``, which the any-value pass turns into a union of the JSON types when the backend
    refuses annotation-only subschemas). The served schema kept a ref to nothing and could not
    even be evaluated; now such a schema is served as it is, with the reason. Found by
    ``bench/lower_suite.py --each`` (per-probe forcing on the JSONSchemaBench sample)."""
    from schemaops.compare.instances import validator
    from schemaops.lower.passes import lower_schema

    schema = {
        "$ref": "#/definitions/a/full",
        "definitions": {"a": {"full": {"type": "string", "maxLength": 3}}},
        "type": "object",
    }
    caps = {**XGRAMMAR, "schema.annotations_only": "refused"}
    lw = lower_schema(schema, caps, "xgrammar")
    served, original = validator(lw.served), validator(schema)
    for x in ("abc", "abcd", {"k": 1}, 3):  # evaluable (no PointerToNowhere), and the same
        assert served.is_valid(x) == original.is_valid(x), x
    assert any("a rewrite removed what #/definitions/a/full points to" in n for n in lw.notes)


_OLDER = [
    ({"properties": {"p": {"$ref": "#/definitions/a", "type": "string"}}}, "beside $ref"),
    ({"properties": {"t": {"items": [{"type": "string"}]}}}, "items array"),
    ({"dependencies": {"a": ["b"]}}, "dependencies"),
]


@pytest.mark.parametrize(
    ("schema", "said", "draft"),
    [(s, w, d) for s, w in _OLDER for d in ("draft-04", "draft-07")]
    + [
        (
            {"properties": {"n": {"minimum": 0, "exclusiveMinimum": True}}},
            "exclusiveMinimum",
            "draft-04",
        )
    ],
)
def test_a_construct_an_older_draft_reads_otherwise_is_served_as_it_is(
    schema: dict, said: str, draft: str
) -> None:
    """The passes read 2020-12: draft-07's ``{"$ref": R, "type": "string"}`` is ``R`` alone
    (siblings ignored) and was inlined as the conjunction with the rewrite called exact."""
    full = {
        "$schema": f"http://json-schema.org/{draft}/schema#",
        "definitions": {"a": {}},
        **schema,
    }
    lw = lower_schema(full, XGRAMMAR, "xgrammar")
    assert lw.served == full and lw.rewrites == []
    assert len(lw.notes) == 1 and said in lw.notes[0] and draft in lw.notes[0]
    plain = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
    assert not any(said in n for n in lower_schema(plain, XGRAMMAR, "xgrammar").notes)
