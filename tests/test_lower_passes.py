"""``schemaops.lower`` rewrite passes, format patterns and residual, without a backend.

The capability tables here are what ``probe_backend`` measured on the real libraries
(tests/test_lower_e2e.py re-measures the facts these tables rely on); the pass logic is
checked for exactness with jsonschema on generated and hand-picked instances.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemaops.compare.instances import validator
from schemaops.formats import conforms
from schemaops.lower import check_residual, lower_schema
from schemaops.lower.merge import NotExact, merge
from schemaops.lower.patterns import FORMAT_PATTERNS, anchored_search, is_anchored
from schemaops.lower.probes import PROBES
from schemaops.lower.prove import differential, mutations

# what probe_backend measured (xgrammar 0.2.9, outlines_core 0.2.14); only the keys used here
XGRAMMAR = {p.key: "enforced" for p in PROBES} | {
    "pattern.unanchored": "narrower",
    "format.date": "ignored",
    "format.date-time": "ignored",
    "array.uniqueItems": "ignored",
    "array.contains": "ignored",
    "object.dependentRequired": "ignored",
    "allOf": "ignored",
    "if": "ignored",
    "not": "ignored",
    "$ref.siblings": "ignored",
    "pattern.with_length": "ignored",
    "anyOf.siblings": "ignored",
    "object.required_unlisted": "ignored",
}
OUTLINES = (
    dict(XGRAMMAR)
    | {
        k: "ignored"
        for k in (
            "integer.minimum",
            "integer.maximum",
            "integer.exclusiveMinimum",
            "integer.exclusiveMaximum",
            "integer.multipleOf",
            "number.minimum",
            "number.maximum",
            "number.exclusiveMinimum",
            "number.exclusiveMaximum",
            "format.time",
            "object.minProperties",
            "object.maxProperties",
        )
    }
    | {"format.uuid": "narrower", "format.email": "narrower", "allOf": "narrower"}
)

# Not test_lower_e2e.SHIPMENT on purpose: a variant (weight up to 200, no date-time, no string
# lengths) lowered with the capability tables above; the assertions below are its own.
MIXED = {
    "title": "shipment",
    "type": "object",
    "properties": {
        "kind": {"type": "string", "enum": ["parcel", "letter"]},
        "weight_g": {"type": "integer", "minimum": 1, "maximum": 200},
        "price": {"type": "number", "exclusiveMinimum": 0, "maximum": 500},
        "ship_on": {"type": "string", "format": "date"},
        "tags": {
            "type": "array",
            "items": {"type": "string", "enum": ["fragile", "express", "insured"]},
            "uniqueItems": True,
            "maxItems": 3,
        },
        "ref": {"type": "string", "pattern": "[0-9]{3}"},
        "contact": {
            "allOf": [
                {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
                    "required": ["name"],
                    "additionalProperties": False,
                },
                {"required": ["email"]},
            ]
        },
    },
    "required": ["kind", "weight_g", "ship_on", "contact"],
    "additionalProperties": False,
    "if": {"properties": {"kind": {"const": "letter"}}, "required": ["kind"]},
    "then": {"properties": {"tags": {"maxItems": 1}}},
    "else": {"required": ["price"]},
}

GOOD = {
    "kind": "parcel",
    "weight_g": 120,
    "price": 9.5,
    "ship_on": "2028-02-29",
    "tags": ["fragile", "express"],
    "ref": "AB123",
    "contact": {"name": "Ana", "email": "a@b"},
}


# ---- format patterns: exactly schemaops.formats ----------------------------------------


def _date_strings() -> st.SearchStrategy[str]:
    y = st.sampled_from([0, 4, 100, 400, 1900, 2000, 2024, 2026, 2100, 9996])
    return st.builds(
        lambda y, m, d: f"{y:04d}-{m:02d}-{d:02d}", y, st.integers(0, 13), st.integers(0, 32)
    )


def _time_strings() -> st.SearchStrategy[str]:
    two = st.integers(0, 61).map(lambda v: f"{v:02d}")
    frac = st.sampled_from(["", ".5", ".123", "."])
    off = st.sampled_from(["Z", "z", "+01:00", "-08:00", "+24:00", "-23:60", "", "+1:00"])
    return st.builds(lambda h, m, s, f, o: f"{h}:{m}:{s}{f}{o}", two, two, two, frac, off)


@settings(max_examples=400, deadline=None)
@given(_date_strings())
def test_date_pattern_is_schemaops_formats(value: str) -> None:
    assert bool(re.search(FORMAT_PATTERNS["date"], value)) == conforms(value, "date")


@settings(max_examples=400, deadline=None)
@given(_time_strings())
def test_time_pattern_is_schemaops_formats(value: str) -> None:
    _exact_but_offset_leap_seconds(value, "time")


@settings(max_examples=400, deadline=None)
@given(_date_strings(), st.sampled_from(["T", "t", " ", ""]), _time_strings())
def test_date_time_pattern_is_schemaops_formats(d: str, sep: str, t: str) -> None:
    value = d + sep + t
    _exact_but_offset_leap_seconds(value, "date-time")


def _exact_but_offset_leap_seconds(value: str, fmt: str) -> None:
    """Never wider than schemaops.formats; narrower only for a leap second written at a
    non-zero offset (FORMAT_EXACT says so)."""
    served = bool(re.search(FORMAT_PATTERNS[fmt], value))
    if served:
        assert conforms(value, fmt), value
    elif conforms(value, fmt):
        assert ":60" in value and not value.endswith(("Z", "z", "+00:00", "-00:00")), value


@pytest.mark.parametrize(
    ("value", "fmt", "served"),
    [
        ("23:59:60Z", "time", True),
        ("23:59:60.5+00:00", "time", True),
        ("12:00:60Z", "time", False),  # was served before: any :60 passed
        ("23:59:60+01:00", "time", False),  # 22:59:60 UTC
        ("2026-12-31T23:59:60Z", "date-time", True),
        ("2026-12-03T12:00:60Z", "date-time", False),
    ],
)
def test_time_patterns_serve_leap_seconds_only_at_23_59_60_utc(
    value: str, fmt: str, served: bool
) -> None:
    assert bool(re.search(FORMAT_PATTERNS[fmt], value)) is served
    assert conforms(value, fmt) is served


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab@.\n -", max_size=8))
def test_email_pattern_is_schemaops_formats(value: str) -> None:
    assert bool(re.search(FORMAT_PATTERNS["email"], value)) == conforms(value, "email")


@settings(max_examples=200, deadline=None)
@given(st.uuids().map(str) | st.text(alphabet="0123456789abcdefABCDEF-{}", max_size=40))
def test_uuid_pattern_is_within_schemaops_formats(value: str) -> None:
    """Narrower, never wider: what the pattern accepts, schemaops.formats accepts."""
    if re.search(FORMAT_PATTERNS["uuid"], value):
        assert conforms(value, "uuid")


# ---- anchored search ---------------------------------------------------------------------

_PATTERNS = ["b[0-9]", "^ab", "ab$", "^a|b$", "(a|b)c", "[$^]x", "a\\$", "^x$", "a{2}", "^$"]


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(_PATTERNS), st.text(alphabet="abcx01$^\n", max_size=6))
def test_anchored_search_keeps_search_semantics(pattern: str, value: str) -> None:
    new = anchored_search(pattern)
    assert new is not None and is_anchored(new)
    assert bool(re.search(new, value)) == bool(re.search(pattern, value))


@pytest.mark.parametrize("pattern", ["(?i)abc", "(?ms)^a.b$", "(?i)a|b"])
def test_a_pattern_opening_with_global_flags_goes_to_the_residual(pattern: str) -> None:
    """Found by a mutation run over real schemas (2026-12-05): anchoring wrapped ``(?i)abc`` as
    ``^[\\s\\S]*(?:(?i)abc)[\\s\\S]*$``, which Python's ``re`` refuses (global flags not at the
    start) and xgrammar cannot compile, and the lowering still claimed ``exact``. Such a
    pattern cannot be anchored: it is left to the application, and served plus residual is
    the original on every instance."""
    assert anchored_search(pattern) is None
    schema = {"type": "string", "pattern": pattern}
    lw = _lower(schema, XGRAMMAR, "xgrammar")
    assert "pattern" not in lw.served
    assert [(r.pointer, r.keyword) for r in lw.residual] == [("/pattern", "pattern")]
    for value in ("a", "xABCx", "abc", "b", "a\nb", "A\nB", ""):
        original = re.search(pattern, value) is not None
        served = validator(lw.served).is_valid(value)
        assert (served and check_residual(schema, lw.residual, value).ok) == original


def test_anchoring_leaves_anchored_patterns_alone() -> None:
    assert anchored_search("^ORD-[0-9]{8}$") == "^ORD-[0-9]{8}$"
    assert not is_anchored("^a|b$") and not is_anchored("abc") and is_anchored("^a(b|c)$")


# ---- merge ---------------------------------------------------------------------------------


def test_merge_is_exact_on_instances() -> None:
    a = {
        "type": "object",
        "properties": {"a": {"type": "integer", "minimum": 0}, "b": {"type": "string"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    b = {"properties": {"a": {"maximum": 5}}, "required": ["b"]}
    m = merge(a, b)
    assert list(m["properties"]) == ["a", "b"]  # key order kept
    va, vb, vm = validator(a), validator(b), validator(m)
    seeds = [{"a": 3, "b": "x"}, {"a": 9, "b": "x"}, {"a": 3}, {"a": -1, "b": "y", "c": 1}]
    for seed in seeds:
        for x in [seed, *mutations(seed)]:
            assert vm.is_valid(x) == (va.is_valid(x) and vb.is_valid(x)), x


def test_merge_refuses_what_it_cannot_merge_exactly() -> None:
    with pytest.raises(NotExact):
        merge({"pattern": "^a"}, {"pattern": "b$"})
    with pytest.raises(NotExact):
        merge({"const": 1}, {"const": 2})
    with pytest.raises(NotExact):  # a key forbidden by one side, nothing else forbids it
        merge({"properties": {"a": False}}, {"properties": {"b": {}}})
    with pytest.raises(NotExact):
        merge({"patternProperties": {"^x": {}}}, {"properties": {"b": {}}})
    # forbidden by additionalProperties: false on one side stays forbidden (exact)
    m = merge({"properties": {"a": {}}, "additionalProperties": False}, {"properties": {"b": {}}})
    assert m == {"properties": {"a": {}}, "additionalProperties": False}


# ---- whole passes ------------------------------------------------------------------------


def _lower(schema, caps, backend):
    return lower_schema(schema, caps, backend)


def test_xgrammar_lowering_of_the_mixed_schema() -> None:
    lw = _lower(MIXED, XGRAMMAR, "xgrammar")
    rules = {(r.pointer, r.keyword) for r in lw.residual}
    assert rules == {("/properties/tags/uniqueItems", "uniqueItems")}
    applied = {r.rule for r in lw.rewrites}
    assert {"format -> pattern", "anchor pattern", "flatten allOf"} <= applied
    assert "if/then/else -> anyOf" in applied
    assert lw.exactness == "relaxed"
    served = lw.served
    assert "if" not in served and len(served["anyOf"]) == 2
    # property order (generation order) is the original's in every branch
    for branch in served["anyOf"]:
        assert list(branch["properties"]) == list(MIXED["properties"])
    assert validator(served).is_valid(GOOD)


def test_outlines_lowering_turns_integer_ranges_into_enums() -> None:
    lw = _lower(MIXED, OUTLINES, "outlines")
    weight = lw.served["anyOf"][0]["properties"]["weight_g"]
    assert weight == {"type": "integer", "enum": list(range(1, 201))}
    rules = {(r.pointer, r.keyword) for r in lw.residual}
    assert ("/properties/price/exclusiveMinimum", "exclusiveMinimum") in rules
    assert ("/properties/price/maximum", "maximum") in rules
    assert ("/properties/tags/uniqueItems", "uniqueItems") in rules


def test_multipleof_set_becomes_enum_and_large_ranges_stay_residual() -> None:
    small = {"type": "integer", "minimum": 0, "exclusiveMaximum": 50, "multipleOf": 10}
    lw = _lower(small, OUTLINES, "outlines")
    assert lw.served == {"type": "integer", "enum": [0, 10, 20, 30, 40]} and lw.exact
    big = {"type": "integer", "minimum": 0, "maximum": 100000}
    lw = _lower(big, OUTLINES, "outlines")
    assert lw.served == {"type": "integer"}
    assert {r.keyword for r in lw.residual} == {"minimum", "maximum"}


def test_enum_filter_makes_ignored_keywords_exact() -> None:
    schema = {"type": "integer", "enum": [1, 2, 3, 4], "not": {"const": 3}, "maximum": 3}
    lw = _lower(schema, OUTLINES, "outlines")
    assert lw.served == {"type": "integer", "enum": [1, 2]} and lw.exact


def test_if_then_else_without_finite_domain_goes_to_the_residual() -> None:
    schema = {
        "type": "object",
        "properties": {"k": {"type": "string"}, "n": {"type": "integer"}},
        "if": {"properties": {"k": {"const": "a"}}},
        "then": {"required": ["n"]},
    }
    lw = _lower(schema, XGRAMMAR, "xgrammar")
    assert "if" not in lw.served and "then" not in lw.served
    (rule,) = lw.residual
    assert rule.keyword == "if" and set(rule.covers) == {"/if", "/then"}
    res = check_residual(schema, lw.residual, {"k": "a"})
    assert res.flagged and not res.uncovered
    assert check_residual(schema, lw.residual, {"k": "b"}).ok


def test_if_then_else_rewrite_is_exact_on_instances() -> None:
    lw = _lower(MIXED, XGRAMMAR, "xgrammar")
    orig = validator(MIXED)
    served = validator(lw.served)
    letter = {**GOOD, "kind": "letter", "tags": ["fragile"]}
    for seed in (GOOD, letter, {**GOOD, "price": None}):
        for x in [seed, *mutations(seed, 200)]:
            if served.is_valid(x) and not orig.is_valid(x):
                res = check_residual(MIXED, lw.residual, x)
                assert res.flagged and not res.uncovered, x
            if orig.is_valid(x):
                assert served.is_valid(x), x


def test_residual_flags_a_dropped_keyword_inside_anyof_branches() -> None:
    lw = _lower(MIXED, XGRAMMAR, "xgrammar")
    dup = {**GOOD, "tags": ["fragile", "fragile"]}
    assert validator(lw.served).is_valid(dup)
    res = check_residual(MIXED, lw.residual, dup)
    assert [v.keyword for v in res.flagged] == ["uniqueItems"] and not res.uncovered
    assert res.flagged[0].instance_path == "/tags"


def test_residual_reports_what_no_rule_covers() -> None:
    res = check_residual(MIXED, [], {**GOOD, "tags": ["fragile", "fragile"]})
    assert not res.flagged and [v.keyword for v in res.uncovered] == ["uniqueItems"]


def test_ref_siblings_are_inlined_where_the_backend_ignores_them() -> None:
    schema = {
        "$defs": {"d": {"type": "integer"}},
        "type": "object",
        "properties": {"v": {"$ref": "#/$defs/d", "enum": [1, 2]}},
    }
    lw = _lower(schema, XGRAMMAR, "xgrammar")
    assert lw.served["properties"]["v"] == {"enum": [1, 2], "type": "integer"}
    recursive = {"$defs": {"n": {"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}}}}}
    assert _lower(recursive, XGRAMMAR, "xgrammar").served == recursive


def test_differential_on_the_mixed_schema() -> None:
    lw = _lower(MIXED, OUTLINES, "outlines")
    diff = differential(lw, 15, [GOOD], max_time_s=20)
    assert diff.ok, diff.failures
    assert diff.from_original and diff.from_served and diff.residual_flagged


def test_required_but_unlisted_properties_are_listed_exactly() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": {"type": "string"},
        "required": ["a", "b"],
    }
    lw = _lower(schema, XGRAMMAR | {"object.required_unlisted": "ignored"}, "xgrammar")
    assert list(lw.served["properties"]) == ["a", "b"] and lw.exact
    assert lw.served["properties"]["b"] == {"type": "string"}
    orig, served = validator(schema), validator(lw.served)
    for seed in ({"a": 1, "b": "x"}, {"a": 1, "b": 2, "c": "y"}):
        for x in [seed, *mutations(seed)]:
            assert orig.is_valid(x) == served.is_valid(x), x


def test_oneof_becomes_anyof_exactly_when_branches_are_disjoint() -> None:
    caps = XGRAMMAR | {"oneOf": "refused"}
    disjoint = {
        "oneOf": [
            {"type": "object", "properties": {"t": {"const": "a"}}, "required": ["t"]},
            {"type": "object", "properties": {"t": {"const": "b"}}, "required": ["t"]},
        ]
    }
    lw = _lower(disjoint, caps, "llguidance")
    assert "anyOf" in lw.served and "oneOf" not in lw.served and lw.exact
    overlapping = {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]}
    lw = _lower(overlapping, caps, "llguidance")
    assert "anyOf" in lw.served and [r.keyword for r in lw.residual] == ["oneOf"]
    res = check_residual(overlapping, lw.residual, 3)  # both branches match: oneOf fails
    assert res.flagged and not res.uncovered


def test_refine_learns_keywords_from_compile_errors() -> None:
    from schemaops.lower.passes import refine

    caps = refine(XGRAMMAR, "oneOf constraints are not supported. Enable 'coerce_one_of'")
    assert caps is not None and caps["oneOf"] == "refused"
    caps = refine({}, 'Unimplemented keys: ["dependencies"]')
    assert caps == {"keyword.dependencies": "refused"}
    schema = {"type": "object", "dependencies": {"a": ["b"]}}
    lw = _lower(schema, caps, "llguidance")
    assert lw.served == {"type": "object"}
    assert [r.keyword for r in lw.residual] == ["dependencies"]
    assert refine(caps, "some other error") is None


def test_keywords_beside_a_union_are_distributed_into_its_branches() -> None:
    # GeoJSON-like: required at the parent, properties in the oneOf branches (xgrammar drops
    # the parent's required beside a union)
    point = {"properties": {"type": {"enum": ["Point"]}, "coordinates": {"type": "array"}}}
    line = {"properties": {"type": {"enum": ["Line"]}, "coordinates": {"type": "array"}}}
    schema = {
        "title": "geometry",
        "type": "object",
        "required": ["type", "coordinates"],
        "oneOf": [point, line],
    }
    lw = _lower(schema, XGRAMMAR, "xgrammar")
    # the parent's type is in every branch and stays on the parent too (redundant where the
    # backend ignores it beside the union; an object root remains an object schema)
    assert lw.exact and set(lw.served) == {"title", "type", "oneOf"}
    assert lw.served["type"] == "object"
    for branch in lw.served["oneOf"]:
        assert branch["required"] == ["type", "coordinates"] and branch["type"] == "object"
    orig, served = validator(schema), validator(lw.served)
    for seed in ({"type": "Point", "coordinates": [1]}, {"type": "Line"}, {"coordinates": []}):
        for x in [seed, *mutations(seed)]:
            assert orig.is_valid(x) == served.is_valid(x), x


def test_a_backtracking_served_pattern_is_bounded_and_unproven() -> None:
    """A served pattern that backtracks catastrophically on an example (or a mutant of it)
    must not hang ``lower``: each instance's checks run under the watchdog, and one that runs
    out of time is a failure (unproven), never a pass."""
    import time

    from schemaops.lower.passes import Lowered
    from schemaops.lower.run import LowerCase, _split_examples

    hostile = "a" * 40 + "!"
    schema = {"type": "string", "pattern": "^(a+)+$"}
    lw = Lowered("xgrammar", original={"type": "string"}, served=schema)
    case = LowerCase("s", lw, "h")
    t0 = time.monotonic()
    _split_examples(case, [hostile], [])
    assert time.monotonic() - t0 < 15
    assert case.valid == [] and "unproven" in case.problems[0], case.problems

    t0 = time.monotonic()
    diff = differential(lw, n=0, examples=[hostile])
    assert time.monotonic() - t0 < 60
    assert any("unproven" in f for f in diff.failures), diff.failures


def test_schema_location_continues_at_the_ref_target() -> None:
    """jsonschema's ``absolute_schema_path`` walks through a ``$ref`` without naming it; the
    location of the failing keyword is in the ref's target, where a residual rule points
    (a walker swap once kept the path through the ref: the shipped ``issue_refund`` on
    outlines then had an exclusiveMinimum no residual rule covered)."""
    from schemaops.lower.residual import schema_location

    root = {
        "type": "object",
        "properties": {"amount": {"$ref": "#/$defs/money"}},
        "$defs": {"money": {"type": "object", "properties": {"amount": {"exclusiveMinimum": 0}}}},
    }
    path = ["properties", "amount", "properties", "amount", "exclusiveMinimum"]
    assert schema_location(root, path) == "/$defs/money/properties/amount/exclusiveMinimum"
    chained = {
        "properties": {"a": {"$ref": "#/$defs/b"}},
        "$defs": {"b": {"$ref": "#/$defs/c"}, "c": {"maximum": 1}},
    }
    assert schema_location(chained, ["properties", "a", "maximum"]) == "/$defs/c/maximum"
