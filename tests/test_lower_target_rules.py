"""``lower --target`` follows the providers' re-read tables (commits 2c8bda5, c9fb2f0, 233ee18).

- Azure (``azure.default``: a ``default`` below the root is refused) lowers a nested default
  by dropping it: an annotation, so exactly;
- Anthropic's counted-repeat rules (``pattern-large-quantifier``, refused above 1000;
  ``pattern-quantifier-range``, restricted from 101 to 1000) move the pattern to the residual,
  checked by the application after decoding;
- a ``restricted`` finding left in the served schema (Gemini's ``$ref`` siblings where no
  transform removes them) is what it is: the API's behaviour is unknown, so the schema is
  served with the label ``unproven`` (exit 1 ``lower unproven``), never called exact nor
  reported as "ignores".
- every help text and usage line names every provider target (``providers.TARGETS``).

Real parts only: the provider tables, jsonschema, hypothesis-jsonschema, the CLI.
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
from schemaops.providers import TARGETS, judge_schema

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]


def obj(props: dict, **kw: object) -> dict:
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
        **kw,
    }


def _registry(tmp_path: Path, **schemas: dict) -> Path:
    reg = tmp_path / "reg"
    reg.mkdir()
    for name, schema in schemas.items():
        (reg / f"{name}.json").write_text(json.dumps(schema))
    return reg


# --- azure.default ----------------------------------------------------------------------------

NESTED_DEFAULT = obj(
    {
        "a": {"type": "string", "default": "x"},
        "b": obj({"c": {"type": "integer", "default": 3}}),
    }
)


def test_azure_nested_default_is_dropped_exactly() -> None:
    assert judge_schema("d", NESTED_DEFAULT, "azure").verdict == "refused"  # the premise
    tl = lower_for_target(NESTED_DEFAULT, "azure")
    assert tl.problems == [], tl.problems
    served = tl.lowered.served
    assert "default" not in served["properties"]["a"]
    assert "default" not in served["properties"]["b"]["properties"]["c"]
    effects = {(r.pointer, r.rule, r.effect) for r in tl.lowered.rewrites}
    assert effects == {
        ("/properties/a/default", "drop-annotation", "exact"),
        ("/properties/b/properties/c/default", "drop-annotation", "exact"),
    }
    assert tl.lowered.residual == [] and tl.lowered.exactness == "exact"
    assert tl.verdict is not None and tl.verdict.verdict == "accepted"
    diff = prove_target(tl, 5)
    assert diff.ok and diff.from_original >= 1, diff.to_dict()


def test_azure_nested_default_via_the_cli_is_lowered_exact(tmp_path: Path) -> None:
    reg = _registry(tmp_path, d=NESTED_DEFAULT)
    args = ["lower", "--target", "azure", "--registry", str(reg), "--generate", "5"]
    r = runner.invoke(app, [*args, "--json", "-q"])
    assert r.exit_code == 0, r.output
    (case,) = json.loads(r.stdout)["cases"]
    assert case["lowered"] and case["exactness"] == "exact", case
    assert case["served_verdict"]["verdict"] == "accepted"


# --- Anthropic counted repeats ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "rule", "premise"),
    [
        ("^a{1,5000}$", "anthropic.pattern-large-quantifier", "refused"),
        ("^a{1,500}$", "anthropic.pattern-quantifier-range", "unproven"),
    ],
)
def test_anthropic_large_quantifier_moves_the_pattern_to_the_residual(
    pattern: str, rule: str, premise: str
) -> None:
    schema = obj({"a": {"type": "string", "pattern": pattern}})
    before = judge_schema("p", schema, "anthropic")
    assert before.verdict == premise and rule in {f.rule.id for f in before.findings}
    tl = lower_for_target(schema, "anthropic")
    assert tl.problems == [], tl.problems
    served = tl.lowered.served
    assert "pattern" not in served["properties"]["a"]
    # the served schema is accepted by the same table check --target uses
    assert judge_schema("p", served, "anthropic").verdict == "accepted"
    (res,) = tl.lowered.residual
    assert (res.pointer, res.keyword, res.value) == ("/properties/a/pattern", "pattern", pattern)
    # the differential against the original: instances generated from both sides, mutants,
    # and two the original refuses (they must reach the residual, which flags them)
    bad = [{"a": "b"}, {"a": "a" * 5001}]
    diff = prove_target(tl, 10, invalid=bad)
    assert diff.ok and not diff.failures, diff.to_dict()
    assert diff.residual_flagged >= len(bad)
    v_orig, v_served = validator(schema), validator(served)
    for x in bad:
        assert not v_orig.is_valid(x) and v_served.is_valid(x)
        assert not check_residual(schema, tl.check_rules, x).ok
    assert check_residual(schema, tl.check_rules, {"a": "aaa"}).ok


# --- restricted: unproven, not exact, not "ignores" ---------------------------------------------

DEFS = {"$defs": {"d": {"type": "string"}}}
#: a $ref beside anyOf: the ref-to-anyOf transform cannot run (the anyOf is taken), so
#: gemini.ref-siblings (restricted) is still there in the served schema
REF_WITH_ANYOF = obj({"a": {"$ref": "#/$defs/d", "anyOf": [{"enum": ["x", "y"]}]}}, **DEFS)


def test_restricted_finding_left_in_the_served_schema_is_unproven_not_a_problem() -> None:
    tl = lower_for_target(REF_WITH_ANYOF, "gemini")
    assert tl.verdict is not None and tl.verdict.verdict == "unproven"
    assert tl.problems == [], tl.problems
    assert any(
        "gemini.ref-siblings" in u and "restricts" in u and "effect unknown" in u
        for u in tl.unproven
    ), tl.unproven


def test_check_and_lower_gemini_on_a_ref_with_siblings(tmp_path: Path) -> None:
    reg = _registry(tmp_path, r=REF_WITH_ANYOF)
    c = runner.invoke(app, ["check", "--target", "gemini", "--registry", str(reg), "--json"])
    assert c.exit_code == 0, c.output  # unproven passes check's gate
    (res,) = json.loads(c.stdout)["results"]
    assert res["verdict"] == "unproven" and res["unproven"][0]["rule"] == "gemini.ref-siblings"

    out = tmp_path / "served"
    args = ["lower", "--target", "gemini", "--registry", str(reg), "--out", str(out)]
    r = runner.invoke(app, [*args, "--generate", "5", "--json", "-q"])
    assert r.exit_code == 1, r.output
    assert "lower unproven" in r.stderr and "documents a restriction" in r.stderr
    assert "--generate N > 0" not in r.stderr  # more instances prove nothing here
    doc = json.loads(r.stdout)
    assert doc["passed"] is False and doc["unproven"] == 1 and doc["not_lowered"] == 0
    (case,) = doc["cases"]
    assert case["lowered"] is True and case["exactness"] == "unproven", case
    assert case["served_verdict"]["verdict"] == "unproven"
    assert any("gemini.ref-siblings" in u for u in case["unproven"])
    assert (out / "r.json").exists()  # served, as an unproven lowering is

    t = runner.invoke(app, [*args[:-2], "--generate", "5", "-q"])
    assert t.exit_code == 1
    assert "restricts" in t.stdout and "ignores" not in t.stdout
    assert "[unproven]" in t.stdout and "[exact]" not in t.stdout


def test_unproven_served_verdict_is_not_proven_in_the_report(tmp_path: Path) -> None:
    reg = _registry(tmp_path, r=REF_WITH_ANYOF)
    rep = lower_registry_target(reg, "gemini", generate=5)
    (case,) = rep.cases
    assert case.lowered_ok and not case.proven and case.exactness == "unproven"
    assert rep.unproven == ["r"] and not rep.passed


# --- one list of targets ------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["lower", "--help"], ["check", "--help"]])
def test_help_names_every_provider_target(command: list[str]) -> None:
    r = runner.invoke(app, command, terminal_width=200)
    assert r.exit_code == 0
    text = " ".join(r.output.split())
    for t in TARGETS:
        assert t in text, (command, t)


def test_hosted_contract_usage_lines_name_every_target() -> None:
    lines = [
        ln
        for ln in (REPO / "docs/contracts/hosted.md").read_text().splitlines()
        if ln.startswith("schemaops ") and f"--target {TARGETS[0]}" in ln
    ]
    assert len(lines) >= 2, lines  # check --target and lower --target
    for ln in lines:
        assert "|".join(TARGETS) in ln, ln
    for doc in ("lower.md", "compare.md"):
        assert f"--target {'|'.join(TARGETS)}" in (REPO / "docs/contracts" / doc).read_text()
