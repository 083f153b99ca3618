"""``check --target`` on tool sets (issue 35): each provider's strict tool calling.

The tool sets here are built from what the providers' own SDKs send (openai-python's
``pydantic_function_tool``, anthropic-sdk-python's ``transform_schema`` for a strict tool), so
a table that refuses an SDK's ordinary tool (a false 400) fails here; the request-wide rules
(function count, Anthropic's optional/union parameters summed over every strict tool) are
asserted at their limits, one past and one at.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import pytest
from pydantic import BaseModel, Field
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.providers import check_targets
from schemaops.providers.tools import judge_toolset, request_findings
from schemaops.registry import load_registry

runner = CliRunner()
openai_tools = pytest.importorskip("openai.lib._tools")
anthropic_transform = pytest.importorskip("anthropic.lib._parse._transform")


class GetWeather(BaseModel):
    """Weather for one city."""

    city: str
    units: str = Field(default="metric", description="metric or imperial")


class BookFlight(BaseModel):
    """Book a flight."""

    origin: str
    destination: str
    passengers: int
    note: Optional[str] = None  # noqa: UP045 (the spelling people write)


def _write(tmp_path: Path, tools: list, name: str = "agent") -> Path:
    reg = tmp_path / "reg"
    reg.mkdir(exist_ok=True)
    (reg / f"{name}.tools.json").write_text(json.dumps(tools))
    return reg


def _anthropic_tool(model: type[BaseModel], name: str) -> dict:
    """What an Anthropic strict tool carries (``transform_schema``), in the registry's
    OpenAI-style tool-set shape."""
    schema = anthropic_transform.transform_schema(model)
    return {
        "type": "function",
        "function": {"name": name, "description": model.__doc__, "parameters": schema},
    }


def test_openai_sdk_strict_tools_are_accepted(tmp_path: Path) -> None:
    tools = [openai_tools.pydantic_function_tool(m) for m in (GetWeather, BookFlight)]
    assert all(t["function"]["strict"] is True for t in tools)  # what the SDK sends
    rep = check_targets(_write(tmp_path, tools), ["openai"])
    (ts,) = rep.toolsets
    assert ts.verdict == "accepted", ts.to_dict()
    assert [t.schema for t in ts.tools] == [
        "agent.tools[GetWeather]",
        "agent.tools[BookFlight]",
    ]
    assert rep.passed


def test_anthropic_sdk_strict_tools_are_accepted(tmp_path: Path) -> None:
    tools = [_anthropic_tool(GetWeather, "get_weather"), _anthropic_tool(BookFlight, "book")]
    rep = check_targets(_write(tmp_path, tools), ["anthropic"])
    (ts,) = rep.toolsets
    assert ts.verdict == "accepted", ts.to_dict()


def test_a_tool_parameters_finding_points_into_the_tools_file(tmp_path: Path) -> None:
    params = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "n": {"type": "integer", "minimum": 1}},
        "required": ["q"],
    }
    tools = [
        {"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "search", "parameters": params}},
    ]
    rep = check_targets(_write(tmp_path, tools), ["openai", "anthropic"])
    by = {ts.target: ts for ts in rep.toolsets}
    search = by["openai"].tools[1]
    assert search.verdict == "refused"
    assert ("openai.all-required", "/1/function/parameters/properties/n") in {
        (f.rule.id, f.pointer) for f in search.refused
    }
    anth = {(f.rule.id, f.pointer) for f in by["anthropic"].tools[1].refused}
    assert ("anthropic.numeric-constraints", "/1/function/parameters/properties/n/minimum") in anth
    assert not rep.passed


def test_strict_false_in_the_file_is_residual_not_refusal(tmp_path: Path) -> None:
    tool = openai_tools.pydantic_function_tool(GetWeather)
    tool["function"]["strict"] = False
    (ts,) = check_targets(_write(tmp_path, [tool]), ["openai"]).toolsets
    assert ts.verdict == "accepted_ignored"
    (f,) = ts.tools[0].residual
    assert (f.rule.id, f.pointer) == ("openai.tool-not-strict", "/0/function/strict")


def _params(optional: int) -> dict:
    props = {f"p{i}": {"type": "string"} for i in range(optional)}
    return {"type": "object", "properties": props, "additionalProperties": False}


def test_anthropic_optional_limit_counts_across_the_tool_set(tmp_path: Path) -> None:
    # 5 tools of 5 optional parameters: 25 > 24 across the request; each alone is fine
    tools = [
        {"type": "function", "function": {"name": f"t{i}", "parameters": _params(5)}}
        for i in range(5)
    ]
    (ts,) = check_targets(_write(tmp_path, tools), ["anthropic"]).toolsets
    assert all(t.verdict == "accepted" for t in ts.tools)
    assert ts.verdict == "refused"
    assert [f.rule.id for f in ts.findings] == ["anthropic.max-optional"]
    # 4 x 6 = 24: at the limit, accepted
    assert not request_findings("anthropic", [_params(6)] * 4)


def test_function_counts_per_provider() -> None:
    p = {"type": "object", "properties": {}, "additionalProperties": False}
    assert not request_findings("openai", [p] * 128)
    assert [f.rule.id for f in request_findings("openai", [p] * 129)] == ["openai.max-functions"]
    assert [f.rule.effect for f in request_findings("openai", [p] * 129)] == ["refused"]
    assert not request_findings("anthropic", [p] * 20)
    (f,) = request_findings("anthropic", [p] * 21)
    assert (f.rule.id, f.rule.effect) == ("anthropic.max-strict-tools", "restricted")
    assert not request_findings("gemini", [p] * 128)
    (g,) = request_findings("gemini", [p] * 129)
    assert (g.rule.id, g.rule.effect) == ("gemini.max-declarations", "restricted")
    every = [*request_findings("openai", [p] * 129), f, g]
    assert all(x.rule.source.startswith("https://") for x in every)


def test_gemini_name_starting_with_a_digit_is_unproven(tmp_path: Path) -> None:
    p = {"type": "object", "properties": {"x": {"type": "string"}}}
    tools = [{"type": "function", "function": {"name": "1lookup", "parameters": p}}]
    reg = load_registry(_write(tmp_path, tools))
    ts = judge_toolset(reg.toolsets["agent"], "gemini")
    assert ts.verdict == "unproven"
    assert [f.rule.id for f in ts.tools[0].unproven] == ["gemini.tool-name-start"]


def test_cli_check_target_reports_tool_sets(tmp_path: Path) -> None:
    tools = [openai_tools.pydantic_function_tool(m) for m in (GetWeather, BookFlight)]
    tools += [{"type": "function", "function": {"name": "n", "parameters": _params(1)}}]
    reg = _write(tmp_path, tools)
    r = runner.invoke(app, ["check", "--target", "openai", "--registry", str(reg), "--json"])
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    (ts,) = doc["toolsets"]
    assert (ts["toolset"], ts["verdict"], ts["tools"]) == ("agent", "refused", 3)
    assert [x["verdict"] for x in ts["results"]] == ["accepted", "accepted", "refused"]
    assert {r["id"] for r in doc["tool_rules"]["openai"]} >= {"openai.max-functions"}
    text = runner.invoke(app, ["check", "--target", "openai", "--registry", str(reg)])
    assert text.exit_code == 1
    assert "agent.tools[n]" in text.stdout and "tool set agent (3 tools): refused" in text.stdout
    assert "(tool set, target) pair(s) refused: agent by openai" in text.stderr
    assert "refused by ;" not in text.stderr  # no schema was refused: none is counted
