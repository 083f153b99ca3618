"""``lower --target`` claims no more than it knows (issue 33 items 7, 8, 9, 10).

- 7: a ``$ref`` that finds its target through an ``$anchor`` or an embedded ``$id`` kept
  pointing at it after the provider's table dropped those as annotations: a traceback
  (``NoSuchAnchor``), or with ``--generate 0`` "lowered ... and proven", exit 0;
- 8: unproven cases counted as proven, and ``passed`` ignoring them;
- 9: the optional-to-required rewrite beside a kept ``anyOf`` of ``required`` alternatives
  served ``{"x": {"a": null, "b": null}}`` (``{"x": {}}`` to the application, refused by the
  original) with only ``null-means-absent`` rules;
- 10: the narrowing judgement (``patternProperties`` dropped beside ``additionalProperties:
  false``) is the providers' one function, so ``check --target`` and ``lower --target`` agree.

Real parts only: the provider tables, jsonschema, referencing, hypothesis-jsonschema.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.compare.instances import validator
from schemaops.lower.residual import check_residual
from schemaops.lower.target_run import lower_registry_target, prove_target
from schemaops.lower.targets import lower_for_target

runner = CliRunner()
TARGETS = ["openai", "anthropic", "gemini"]

ANCHORED = {
    "type": "object",
    "properties": {"a": {"$ref": "#item"}},
    "required": ["a"],
    "additionalProperties": False,
    "$defs": {"it": {"$anchor": "item", "type": "string"}},
}
EMBEDDED = {
    "$id": "https://example.com/root.json",
    "type": "object",
    "properties": {"a": {"$ref": "sub.json"}},
    "required": ["a"],
    "additionalProperties": False,
    "$defs": {"it": {"$id": "sub.json", "type": "string"}},
}


def _registry(tmp_path: Path, **schemas: dict) -> Path:
    reg = tmp_path / "reg"
    reg.mkdir()
    for name, schema in schemas.items():
        (reg / f"{name}.json").write_text(json.dumps(schema))
    return reg


# --- 7: refs through $anchor / embedded $id --------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("schema", [ANCHORED, EMBEDDED], ids=["anchor", "embedded-id"])
def test_a_ref_through_an_anchor_or_id_still_resolves_in_the_served_schema(
    schema: dict, target: str
) -> None:
    tl = lower_for_target(schema, target)
    assert tl.problems == [], tl.problems
    served = tl.lowered.served
    assert served["properties"]["a"] == {"$ref": "#/$defs/it"}
    # the served schema's refs resolve: a real validator answers (it raised NoSuchAnchor)
    v = validator(served)
    assert v.is_valid({"a": "x"}) and not v.is_valid({"a": 1})
    assert ("/properties/a/$ref", "ref-to-pointer", "exact") in {
        (r.pointer, r.rule, r.effect) for r in tl.lowered.rewrites
    }
    assert prove_target(tl, 5).ok


def test_a_ref_whose_served_target_changed_is_not_lowerable() -> None:
    """``b`` refers to property ``a``'s schema, which OpenAI's all-required rewrite makes
    accept null: the ref would accept null at ``b`` too, which nothing declares."""
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"$ref": "#/properties/a"}},
        "required": ["b"],
        "additionalProperties": False,
    }
    tl = lower_for_target(schema, "openai")
    assert any("points elsewhere" in p and "not lowerable" in p for p in tl.problems), tl.problems


def test_a_served_ref_into_a_removed_keyword_is_not_lowerable() -> None:
    schema = {
        "type": "object",
        "properties": {"b": {"$ref": "#/dependentSchemas/a"}},
        "required": ["b"],
        "additionalProperties": False,
        "dependentSchemas": {"a": {"type": "object"}},
    }
    tl = lower_for_target(schema, "openai")
    assert any("resolves to nothing" in p for p in tl.problems), tl.problems


def test_cli_on_an_anchored_schema_answers_without_a_traceback(tmp_path: Path) -> None:
    reg = _registry(tmp_path, anc=ANCHORED, sid=EMBEDDED)
    for target in TARGETS:
        r = runner.invoke(app, ["lower", "--target", target, "--registry", str(reg), "-q"])
        assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
        assert r.exit_code == 0, r.output
        assert "2 of 2 schema(s) lowered for" in r.output


# --- 8: unproven is not proven ----------------------------------------------------------------


def test_generate_0_proves_nothing_and_does_not_pass(tmp_path: Path) -> None:
    reg = _registry(tmp_path, anc=ANCHORED)
    rep = lower_registry_target(reg, "openai", generate=0)
    assert not rep.not_lowered and rep.unproven == ["anc"]
    assert rep.passed is False
    doc = rep.to_dict()
    assert doc["passed"] is False and doc["proven"] == 0 and doc["unproven"] == 1
    r = runner.invoke(
        app, ["lower", "--target", "openai", "--registry", str(reg), "--generate", "0", "-q"]
    )
    assert r.exit_code == 1, r.output
    assert "0 of 1 schema(s) lowered for openai and proven" in r.output
    assert "1 lowered but unproven" in r.output and "lower unproven" in r.output
    r = runner.invoke(app, ["lower", "--target", "openai", "--registry", str(reg), "-q"])
    assert r.exit_code == 0 and "1 of 1 schema(s) lowered for openai and proven" in r.output


# --- 9: presence read beside null-means-absent -----------------------------------------------


def _either(kw: str) -> dict:
    inner = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        kw: [{"required": ["a"]}, {"required": ["b"]}],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"x": inner},
        "required": ["x"],
        "additionalProperties": False,
    }


@pytest.mark.parametrize("kw", ["anyOf", "oneOf"])
def test_required_alternatives_beside_null_means_absent_go_to_the_residual(kw: str) -> None:
    schema = _either(kw)
    tl = lower_for_target(schema, "openai")
    assert tl.problems == []
    served_accepts = {"x": {"a": None, "b": None}}
    assert validator(tl.lowered.served).is_valid(served_accepts)
    z = tl.to_original(served_accepts)
    assert z == {"x": {}} and not validator(schema).is_valid(z)
    # the declared effect covers it: a widening at the applicator, its rule in the residual
    assert (f"/properties/x/{kw}", "widens") in {(r.pointer, r.effect) for r in tl.lowered.rewrites}
    rc = check_residual(schema, tl.check_rules, z)
    assert rc.flagged and not rc.uncovered
    assert check_residual(schema, tl.check_rules, {"x": {"a": "v"}}).ok
    assert prove_target(tl, 10).ok


def test_a_key_count_beside_null_means_absent_is_not_lowerable() -> None:
    """``maxProperties`` counts keys: served with every property present (null or not), it
    may refuse what the original accepts or accept what it refuses: no single effect."""
    from schemaops.lower.nullabsent import presence_reads

    node = {"properties": {"a": {}, "b": {}}, "maxProperties": 1, "anyOf": [{"not": {}}]}
    reads = presence_reads(node, {"a"}, node)
    assert "maxProperties" in reads.refuse and "anyOf/…/not" in reads.refuse
    assert presence_reads({"properties": {"a": {}}}, {"a"}, {}).refuse == []


# --- 10: one narrowing judgement --------------------------------------------------------------

PATTERN_CLOSED = {
    "type": "object",
    "properties": {"n": {"type": "string"}},
    "patternProperties": {"^x-": {"type": "integer"}},
    "additionalProperties": False,
    "required": ["n"],
}


def test_lower_and_check_target_share_the_narrowing_judgement() -> None:
    from schemaops.providers import judge_schema
    from schemaops.providers.narrowing import narrowings, pattern_keys_refused

    assert pattern_keys_refused(PATTERN_CLOSED, {"patternProperties"})
    assert not pattern_keys_refused({**PATTERN_CLOSED, "additionalProperties": True}, ["x"])
    assert not pattern_keys_refused({**PATTERN_CLOSED, "patternProperties": {}}, ["x"])
    found = judge_schema("p", PATTERN_CLOSED, "gemini").findings
    assert narrowings(PATTERN_CLOSED, found) == [
        ("/patternProperties", narrowings(PATTERN_CLOSED, found)[0][1])
    ]
    tl = lower_for_target(PATTERN_CLOSED, "gemini")
    assert tl.lowered.exactness == "relaxed+narrowed"
    # an empty patternProperties allowed no key: dropping it narrows nothing
    empty = {**PATTERN_CLOSED, "patternProperties": {}}
    assert "narrowed" not in lower_for_target(empty, "gemini").lowered.exactness
