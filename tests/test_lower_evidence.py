"""``lower`` claims only what holds (issue 23, item 3): no proof without evidence.

A differential with no instance on a side (hypothesis-jsonschema cannot use the schema, or
finds nothing valid), one that runs out of its deadline, a skipped one (``--generate 0``),
or an enforcement walk that walked nothing (``unchecked``) is ``unproven``: the case is not
labelled ``exact`` (nor ``relaxed``), and says why. ``const`` is a one-value ``enum``.
"""

from __future__ import annotations

import time

from test_lower_passes import MIXED, XGRAMMAR

from schemaops.compare.instances import validator
from schemaops.lower import check_residual, lower_schema
from schemaops.lower.model import Lowered, Rewrite
from schemaops.lower.prove import Differential, differential
from schemaops.lower.run import LowerCase, _judge_result

# hypothesis-jsonschema cannot follow a recursive $ref: a GenerationError on both sides
TREE = {
    "$defs": {"n": {"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}}}},
    "$ref": "#/$defs/n",
}


def test_a_generation_error_is_unproven_not_ok() -> None:
    served = {**TREE, "title": "served"}
    lw = Lowered("xgrammar", TREE, served, [Rewrite("", "test", "exact", "a rewrite")])
    diff = differential(lw, 5)
    assert diff.from_original == 0 and diff.from_served == 0
    assert not diff.failures and not diff.ok
    assert diff.unproven == [
        "no instance generated from the original schema",
        "no instance generated from the served schema",
    ]
    assert diff.to_dict()["ok"] is False


def test_the_served_original_needs_no_instances() -> None:
    lw = Lowered("xgrammar", TREE, TREE)
    assert differential(lw, 5).ok


def test_the_differential_has_a_deadline() -> None:
    """A 300k-value enum once ran the differential unbounded past 500 s; ``deadline_s``
    (``--timeout``) bounds generation and every instance and mutant."""
    big = {"type": "string", "enum": [f"v{i:06d}" for i in range(300_000)]}
    lw = lower_schema({**big, "maxLength": 7}, XGRAMMAR | {"string.maxLength": "ignored"}, "x")
    assert lw.rewrites  # implied maxLength dropped: not the identity
    t0 = time.monotonic()
    diff = differential(lw, 25, deadline_s=2.0)
    assert time.monotonic() - t0 < 120  # generous: unbounded before
    assert not diff.ok and any("deadline" in u for u in diff.unproven), diff.unproven
    nothing = differential(lw, 25, deadline_s=0.0)
    assert nothing.mutants == 0 and nothing.from_original == 0 and not nothing.ok


def _case(result: dict, diff: Differential | None) -> LowerCase:
    case = LowerCase("mixed", lower_schema(MIXED, XGRAMMAR, "xgrammar"), "h")
    _judge_result(case, result)
    case.diff = diff
    return case


def test_an_unchecked_walk_or_a_missing_differential_is_unproven() -> None:
    proven = Differential(from_original=5, from_served=5, mutants=40, served_accepts=20)
    ok = {"status": "ok", "enforcement": {"verdict": "enforced"}}
    case = _case(ok, proven)
    assert case.lowered_ok and case.exactness == "relaxed" and not case.unproven
    walked_nothing = _case({"status": "ok", "enforcement": {"verdict": "unchecked"}}, proven)
    d = walked_nothing.to_dict()
    assert d["lowered"] and d["exactness"] == "unproven" and d["claimed"] == "relaxed"
    assert d["unproven"] == ["the enforcement walk walked nothing (unchecked: no examples)"]
    skipped = _case(ok, None).to_dict()
    assert skipped["exactness"] == "unproven"
    assert skipped["unproven"] == ["no differential check (--generate 0)"]
    empty = _case(ok, Differential(unproven=["no instance generated from the served schema"]))
    assert empty.exactness == "unproven"


def test_const_is_a_one_value_enum() -> None:
    """``{"const": "2026-02-30", "format": "date"}`` accepts nothing; the format was dropped
    as "implied by enum" (xgrammar ignores format date), serving a schema that accepts
    ``"2026-02-30"`` labelled exact."""
    bad = {"const": "2026-02-30", "format": "date"}
    lw = lower_schema(bad, XGRAMMAR, "xgrammar")
    assert not validator(lw.served).is_valid("2026-02-30")
    assert "implied by enum" not in {r.rule for r in lw.rewrites}
    good = {"const": "2026-02-28", "format": "date"}
    lw = lower_schema(good, XGRAMMAR, "xgrammar")
    assert lw.served == {"const": "2026-02-28"} and lw.exact  # implied: checked
    for schema in (
        {"enum": ["2026-02-30"], "format": "date"},
        {"type": "string", "const": "abc", "maxLength": 2},
    ):
        lw = lower_schema(schema, XGRAMMAR | {"string.maxLength": "ignored"}, "xgrammar")
        for x in ("2026-02-30", "abc"):
            through, valid = validator(lw.served).is_valid(x), validator(schema).is_valid(x)
            res = check_residual(schema, lw.residual, x)
            assert through if valid else not through or (res.flagged and not res.uncovered)
