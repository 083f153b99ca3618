"""``check --engine``: the routing rules of vLLM 0.32.0 and SGLang 0.5.23, and the gate on them.

Library-level (real xgrammar, llguidance, outlines_core; no server). The same predictions are
checked against the real dev servers in tests/integration/test_check_engine_servers.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shared_schemas import PATTERN, PATTERN_AND_PROPS, UNIQUE
from typer.testing import CliRunner

from schemaops.check.engine import run_engine_check
from schemaops.cli import app
from schemaops.engines import route


@pytest.mark.parametrize(
    ("schema", "engine", "backend", "served_by", "reason"),
    [
        # vLLM auto: xgrammar refuses uniqueItems, guidance then refuses it too -> 400
        (UNIQUE, "vllm", "auto", None, 'Unimplemented keys: ["uniqueItems"]'),
        (UNIQUE, "vllm", "xgrammar", None, "uniqueItems on an array"),
        # one patternProperties pattern alone: xgrammar takes it
        (PATTERN, "vllm", "auto", "xgrammar", "xgrammar accepts it"),
        # with properties: not xgrammar; patternProperties rules out guidance -> outlines
        (PATTERN_AND_PROPS, "vllm", "auto", "outlines", "patternProperties rules out guidance"),
        (PATTERN_AND_PROPS, "vllm", "xgrammar", None, "patternProperties together with"),
        # SGLang: the configured backend or its 400
        (UNIQUE, "sglang", "xgrammar", None, "keyword(s) uniqueItems would be ignored"),
        (UNIQUE, "sglang", "llguidance", None, 'Unimplemented keys: ["uniqueItems"]'),
        (PATTERN, "sglang", "xgrammar", "xgrammar", "configured"),
        (PATTERN, "sglang", "outlines", None, "patternProperties would be ignored"),
        (PATTERN_AND_PROPS, "sglang", "llguidance", "llguidance", "configured"),
    ],
)
def test_route(schema, engine, backend, served_by, reason) -> None:
    r = route(schema, engine, backend)
    assert r.served_by == served_by
    assert r.rejected is (served_by is None)
    assert reason in r.reason


def test_sglang_message_is_the_servers_own_wording() -> None:
    """SGLang 0.5.23 answers 'JSON Schema at #/properties/tags is not supported by ...'."""
    r = route(UNIQUE, "sglang", "xgrammar")
    assert r.reason == (
        "JSON Schema at #/properties/tags is not supported by xgrammar: "
        "keyword(s) uniqueItems would be ignored"
    )


def _registry(tmp_path: Path) -> Path:
    for name, schema in (("unique", UNIQUE), ("mixed", PATTERN_AND_PROPS), ("plain", PATTERN)):
        (tmp_path / f"{name}.json").write_text(json.dumps(schema))
    return tmp_path


def test_engine_gate_fails_rejected_schemas_and_reports_routes(tmp_path: Path) -> None:
    report = run_engine_check(_registry(tmp_path), "vllm")
    cases = {c.schema: c for c in report.cases}
    assert not report.passed
    assert [p.kind for p in cases["unique"].problems] == ["engine_rejects"]
    assert "HTTP 400" in cases["unique"].problems[0].message
    assert cases["plain"].result["engine_route"]["served_by"] == "xgrammar"
    assert report.settings["routes"] == {"xgrammar": ["plain"], "outlines": ["mixed"]}
    assert report.settings["latch"]  # mixed routes: the one-backend latch is reported
    assert report.settings["engine_pins"]["xgrammar"] == "0.2.8"
    assert set(report.settings["measured_with"]) == {"xgrammar", "llguidance", "outlines_core"}


def test_engine_gate_judges_the_latched_backend_not_autos_pick(tmp_path: Path) -> None:
    """trust #1: under vLLM auto with mixed routes the engine is latched on xgrammar (warm
    latches it so), which compiles the patternProperties+properties schema without enforcing
    it. The gate measures it on xgrammar and fails it; it used to measure it on outlines
    (auto's pick on a fresh engine) and pass it with a warning."""
    report = run_engine_check(_registry(tmp_path), "vllm")
    mixed = {c.schema: c for c in report.cases}["mixed"]
    assert report.settings["latched_backend"] == "xgrammar"
    route = mixed.result["engine_route"]
    assert (route["served_by"], route["compare_backend"], route["auto_route"]) == (
        "xgrammar",
        "xgrammar",
        "outlines",
    )
    assert not mixed.passed
    latch = [p for p in mixed.problems if p.kind == "engine_latch"]
    assert latch and "patternProperties together with properties" in latch[0].message
    assert "--backend outlines" in latch[0].fix


def test_a_fixed_backend_has_no_latch(tmp_path: Path) -> None:
    """With a fixed vLLM backend each schema keeps its route: no latch, no latch problem."""
    (tmp_path / "mixed.json").write_text(json.dumps(PATTERN_AND_PROPS))
    (tmp_path / "plain.json").write_text(json.dumps(PATTERN))
    report = run_engine_check(tmp_path, "vllm", "outlines")
    assert report.settings["latched_backend"] is None and report.settings["latch"] is None
    for case in report.cases:
        assert "auto_route" not in case.result["engine_route"]
        assert not [p for p in case.problems if p.kind == "engine_latch"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "check needs --backend (or --engine sglang|vllm)"),
        (["--engine", "tgi"], "unknown engine 'tgi'"),
    ],
)
def test_check_engine_usage_errors(args: list[str], message: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["check", "--registry", str(_registry(tmp_path)), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_check_engine_cli_json(tmp_path: Path) -> None:
    args = ["check", "--registry", str(_registry(tmp_path)), "--engine", "sglang", "--json", "-q"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1  # uniqueItems is a 400 on SGLang's xgrammar
    doc = json.loads(result.stdout)
    assert doc["backend"] == "sglang 0.5.23 (xgrammar)"
    routes = {c["schema"]: c["result"]["engine_route"]["served_by"] for c in doc["cases"]}
    assert routes == {"mixed": "xgrammar", "plain": "xgrammar", "unique": None}


def test_check_engine_text_names_pinned_and_measured_versions(tmp_path: Path) -> None:
    args = ["check", "--registry", str(_registry(tmp_path)), "--engine", "vllm", "-q"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    text = " ".join(result.output.split())  # rich wraps long lines
    assert "vllm 0.32.0 pins xgrammar 0.2.8, llguidance 1.7.6" in text
    assert "enforcement measured with xgrammar" in text
    assert "latch: vLLM 0.32 builds ONE grammar backend per engine" in text
