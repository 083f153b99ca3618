"""``check --target`` says what it knows (issue 33 items 10 and 29).

- 10: ``patternProperties`` beside ``additionalProperties: false`` for Gemini was
  ``accepted_ignored`` with ``/patternProperties`` as residual, while Gemini keeps
  ``additionalProperties: false`` and so refuses every key the patterns allowed: a narrowing,
  which ``lower --target gemini`` already called ``relaxed+narrowed``. Both now ask one
  function (``schemaops.providers.narrowing``);
- 29: a registry with problems exited 1 (the gate's code); the contract says 2.

The real CLI over real registry folders; no provider is called (offline).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.lower.targets import lower_for_target

runner = CliRunner()

PATTERN_CLOSED = {
    "type": "object",
    "properties": {"n": {"type": "string"}},
    "patternProperties": {"^x-": {"type": "integer"}},
    "additionalProperties": False,
    "required": ["n"],
}


def _registry(tmp_path: Path, **schemas: object) -> Path:
    reg = tmp_path / "reg"
    reg.mkdir()
    for name, schema in schemas.items():
        (reg / f"{name}.json").write_text(json.dumps(schema))
    return reg


def test_gemini_pattern_properties_beside_a_closed_object_is_a_narrowing(tmp_path: Path) -> None:
    reg = _registry(tmp_path, p=PATTERN_CLOSED)
    r = runner.invoke(app, ["check", "--target", "gemini", "--registry", str(reg), "--json"])
    assert r.exit_code == 0, r.output  # served: a narrowing does not fail the gate
    doc = json.loads(r.stdout)
    (res,) = doc["results"]
    assert res["verdict"] == "accepted_narrowed"
    assert [f["pointer"] for f in res["narrowed"]] == ["/patternProperties"]
    assert res["residual"] == []  # no output can break a pattern key: none can appear
    assert doc["counts"]["gemini"]["accepted_narrowed"] == 1
    # lower --target says the same of the same schema
    assert "narrowed" in lower_for_target(PATTERN_CLOSED, "gemini").lowered.exactness
    text = runner.invoke(app, ["check", "--target", "gemini", "--registry", str(reg)])
    assert "accepted_narrowed" in text.output and "1 accepted narrower" in text.output


def test_open_pattern_properties_stay_a_residual(tmp_path: Path) -> None:
    """Without ``additionalProperties: false`` a dropped ``patternProperties`` lets pattern
    keys through unchecked: a residual, as before (lower: relaxed, not narrowed)."""
    schema = {**PATTERN_CLOSED}
    del schema["additionalProperties"]
    reg = _registry(tmp_path, p=schema)
    r = runner.invoke(app, ["check", "--target", "gemini", "--registry", str(reg), "--json"])
    (res,) = json.loads(r.stdout)["results"]
    assert res["verdict"] == "accepted_ignored" and res["narrowed"] == []
    assert [f["pointer"] for f in res["residual"]] == ["/patternProperties"]
    assert lower_for_target(schema, "gemini").lowered.exactness == "relaxed"


@pytest.mark.parametrize("target", ["openai", "anthropic", "gemini"])
@pytest.mark.parametrize("more", [[], ["--json"], ["--backend", "xgrammar"]])
def test_a_registry_with_problems_is_an_input_error(
    tmp_path: Path, target: str, more: list[str]
) -> None:
    reg = _registry(tmp_path, bad={"type": "objectx"})
    r = runner.invoke(app, ["check", "--target", target, "--registry", str(reg), *more])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert r.exit_code == 2, r.output
    assert "problem(s) in registry" in r.output and "bad.json" in r.output
