"""The relaxation ladder of ``lower`` (``schemaops.lower.relax``), without a backend: each step
moves its class of constraints from the served schema into the residual, with the reason, and
the residual covers everything the relaxed served schema lets through.

tests/test_lower_e2e.py climbs the ladder on real outlines (a compile that runs out of memory).
"""

from __future__ import annotations

from typing import Any

import pytest
from test_lower_passes import OUTLINES

from schemaops.compare.instances import validator
from schemaops.lower import check_residual, lower_schema
from schemaops.lower.prove import differential
from schemaops.lower.relax import LADDER, reason, triggered

# one of every class the ladder moves, next to constraints no step touches
TICKET = {
    "type": "object",
    "properties": {
        "subject": {"type": "string", "minLength": 5, "maxLength": 80},
        "labels": {
            "type": "array",
            "items": {"type": "string", "pattern": "^[a-z]{2,8}$"},
            "minItems": 1,
            "maxItems": 3,
        },
        "due": {"type": "string", "format": "date"},
        "priority": {"type": "integer", "minimum": 1, "maximum": 5},
        "kind": {"type": "string", "enum": ["bug", "question"]},
    },
    "required": ["subject", "kind"],
    "additionalProperties": False,
}
_OK: dict[str, Any] = {"subject": "Broken", "kind": "bug"}
VALID = [
    _OK,
    {**_OK, "labels": ["ui", "billing"], "due": "2028-02-29", "priority": 5},
]
# (instance, the step after which the served schema lets it through)
INVALID = [
    ({**_OK, "subject": "Hi"}, "string.length"),
    ({**_OK, "subject": "x" * 81}, "string.length"),
    ({**_OK, "labels": []}, "array.bounds"),
    ({**_OK, "labels": ["ab", "cd", "ef", "gh"]}, "array.bounds"),
    ({**_OK, "due": "2026-02-30"}, "format.pattern"),
    ({**_OK, "priority": 0}, None),  # outlines ignores integer bounds: enum until integer.enum
    ({**_OK, "priority": 6}, None),
    ({**_OK, "labels": ["UI"]}, "pattern"),
]
_RESULT = {"status": "oom", "error": "memory allocation of 2359312 bytes failed"}


def _steps(n: int) -> dict[str, str]:
    return {s.key: reason(s, "outlines", _RESULT) for s in LADDER[:n]}


def test_what_starts_the_ladder() -> None:
    assert triggered(_RESULT) and triggered({"status": "timeout", "compile_ms": None})
    # a walk that timed out after compiling, a refusal, an error: not a matter of size
    assert not triggered({"status": "timeout", "compile_ms": 812.0})
    assert not any(triggered({"status": s}) for s in ("ok", "unsupported", "error", "crash"))
    why = reason(LADDER[0], "outlines", _RESULT)
    assert "oom: memory allocation of 2359312 bytes failed" in why and "string.length" in why


def test_no_relaxation_without_steps() -> None:
    """Without ladder steps every class the ladder would move is still served (as itself or
    as its exact rewrite) and no residual rule says ``relaxed for compile``."""
    for relax in (None, {}):
        lw = lower_schema(TICKET, OUTLINES, "outlines", relax)
        assert not [r for r in lw.residual if r.reason.startswith("relaxed for compile")]
        props = lw.served["properties"]
        assert props["subject"]["minLength"] == 5 and props["subject"]["maxLength"] == 80
        assert props["labels"]["maxItems"] == 3 and props["labels"]["items"]["pattern"]
        assert props["due"]["pattern"].startswith("^") and "format" not in props["due"]
        assert props["priority"]["enum"] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("n", range(1, len(LADDER) + 1))
def test_each_step_moves_its_class_to_the_residual(n: int) -> None:
    steps = _steps(n)
    lw = lower_schema(TICKET, OUTLINES, "outlines", steps)
    props = lw.served["properties"]
    taken = set(steps)
    # what each step removes from the served schema, and the residual rule it leaves
    expect = {
        "string.length": {"/properties/subject/minLength", "/properties/subject/maxLength"},
        "array.bounds": {"/properties/labels/minItems", "/properties/labels/maxItems"},
        "format.pattern": {"/properties/due/format"},
        "integer.enum": {"/properties/priority/minimum", "/properties/priority/maximum"},
        "pattern": {"/properties/labels/items/pattern"},
    }
    relaxed = {r.pointer for r in lw.residual if r.reason.startswith("relaxed for compile")}
    assert relaxed == set().union(*(expect[k] for k in taken))
    for r in lw.residual:
        if r.pointer in relaxed:
            assert r.reason == next(steps[k] for k in taken if r.pointer in expect[k])
    assert ("minLength" in props["subject"]) is ("string.length" not in taken)
    assert ("maxItems" in props["labels"]) is ("array.bounds" not in taken)
    assert ("pattern" in props["due"]) is ("format.pattern" not in taken)
    assert ("enum" in props["priority"]) is ("integer.enum" not in taken)
    assert ("pattern" in props["labels"]["items"]) is ("pattern" not in taken)
    assert props["kind"] == {"type": "string", "enum": ["bug", "question"]}  # untouched
    assert lw.exactness.startswith("relaxed")

    served = validator(lw.served)
    for x in VALID:
        assert served.is_valid(x)
        assert check_residual(TICKET, lw.residual, x).ok
    for x, through_after in INVALID:
        if served.is_valid(x):  # let through: the residual must flag it, and nothing else
            assert through_after is None or through_after in taken, x
            res = check_residual(TICKET, lw.residual, x)
            assert res.flagged and not res.uncovered, (x, res)
        else:
            assert through_after not in taken, x


def test_the_fully_relaxed_schema_passes_the_differential() -> None:
    lw = lower_schema(TICKET, OUTLINES, "outlines", _steps(len(LADDER)))
    diff = differential(lw, 10, VALID)
    assert diff.ok, diff.failures
    assert diff.residual_flagged > 0


def test_a_compile_the_ladder_cannot_help_is_reported_precisely() -> None:
    from schemaops.lower.relax import Relaxation
    from schemaops.lower.run import LowerCase, _judge_result

    err = "worker died after 2.0 s (killed by signal SIGABRT): memory allocation of 9 bytes failed"
    climbed = LowerCase("ticket", lower_schema(TICKET, OUTLINES, "outlines", _steps(5)), "h")
    climbed.relaxations = [Relaxation(s.key, s.what, "oom", err, [], "oom") for s in LADDER]
    _judge_result(climbed, {"status": "oom", "error": err})
    assert climbed.problems == [
        f"the served schema does not compile on outlines (oom: {err}) after the relaxation "
        "ladder (string.length, array.bounds, format.pattern, integer.enum, pattern)"
    ]
    bare = LowerCase("kind", lower_schema({"enum": ["a", "b"]}, OUTLINES, "outlines"), "h")
    _judge_result(bare, {"status": "timeout", "error": "compile exceeded 120 s"})
    assert bare.problems == [
        "the served schema does not compile on outlines (timeout: compile exceeded 120 s) "
        "and no relaxation ladder step applies"
    ]
    assert not bare.lowered_ok and bare.to_dict()["relaxations"] == []
