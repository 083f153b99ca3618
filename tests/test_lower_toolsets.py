"""``lower --target T`` on a tool set (issue 35): each tool lowered and proven like a schema,
one request fragment in the provider's shape, request-wide rules on the whole set.

No mocks: the tools are the shipped ``support_agent`` set and ones openai-python's
``pydantic_function_tool`` builds; the proof is ``lower``'s own differential against the
original parameters; the re-judge is ``check --target``'s entry point on the written folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.lower.target_run import lower_registry_target
from schemaops.providers import check_targets

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()
openai_tools = pytest.importorskip("openai.lib._tools")

OPTIONAL = {
    "type": "object",
    "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["q"],
}


class Lookup(BaseModel):
    """Look one thing up."""

    key: str


def _write(tmp_path: Path, tools: list, name: str = "agent") -> Path:
    reg = tmp_path / "reg"
    reg.mkdir(exist_ok=True)
    (reg / f"{name}.tools.json").write_text(json.dumps(tools))
    return reg


def _fn(name: str, params: dict) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": params}}


@pytest.mark.parametrize("target", ["openai", "anthropic", "gemini"])
def test_each_tool_lowered_proven_and_the_request_in_the_providers_shape(
    tmp_path: Path, target: str
) -> None:
    reg = _write(tmp_path, [_fn("search", OPTIONAL), openai_tools.pydantic_function_tool(Lookup)])
    out = tmp_path / "out"
    rep = lower_registry_target(reg, target, out=out, generate=5)
    (tc,) = rep.toolsets
    assert tc.lowered_ok and tc.proven, tc.all_problems + tc.unproven
    search, lookup = tc.tools
    assert search.diff is not None and search.diff.ok
    # OpenAI serves the optional 'limit' as required with null (relaxed: null means absent)
    # and closes the object (narrowed); Anthropic only closes it; Gemini takes it as it is.
    # Every provider takes Lookup as openai-python sends it.
    label = {"openai": "relaxed+narrowed", "anthropic": "narrowed", "gemini": "exact"}[target]
    assert tc.tool_verdict(search) == label
    assert tc.tool_verdict(lookup) == "exact"
    assert tc.verdict == label
    req = tc.request()
    if target == "openai":
        fns = [t["function"] for t in req["tools"]]
        assert all(f["strict"] is True for f in fns)
        assert fns[0]["parameters"]["required"] == ["q", "limit"]
    elif target == "anthropic":
        assert [t["name"] for t in req["tools"]] == ["search", "Lookup"]
        assert all(t["strict"] is True and "input_schema" in t for t in req["tools"])
    else:
        (decl,) = req["tools"]
        assert [d["name"] for d in decl["functionDeclarations"]] == ["search", "Lookup"]
        assert all("parametersJsonSchema" in d for d in decl["functionDeclarations"])
    written = json.loads((out / ".lower" / "agent.tools.request.json").read_text())
    assert written == req
    # the folder is a registry check --target re-judges: the served tool set is accepted
    hosted = check_targets(out, [target])
    assert [ts.verdict for ts in hosted.toolsets] == ["accepted"], hosted.to_dict()["toolsets"]


def test_openai_additional_properties_narrowing_is_said(tmp_path: Path) -> None:
    reg = _write(tmp_path, [_fn("search", OPTIONAL)])
    (tc,) = lower_registry_target(reg, "anthropic", generate=5).toolsets
    rules = {(r.rule, r.effect) for r in tc.tools[0].tl.lowered.rewrites}
    assert ("additional-properties-false", "narrows") in rules


def test_too_many_functions_is_refused_and_nothing_served(tmp_path: Path) -> None:
    p = {"type": "object", "properties": {}, "additionalProperties": False}
    reg = _write(tmp_path, [_fn(f"f{i}", p) for i in range(129)])
    out = tmp_path / "out"
    r = runner.invoke(
        app,
        ["lower", "--target", "openai", "--registry", str(reg), "--out", str(out), "--json"],
    )
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    (ts,) = doc["toolsets"]
    assert ts["verdict"] == "refused" and not ts["lowered"]
    assert any("openai.max-functions" in p for p in ts["problems"])
    assert "1 tool set(s) cannot be lowered for openai: agent" in r.stderr
    assert not (out / "agent.tools.json").exists()
    assert (out / ".lower" / "agent.tools.json").exists()


def test_generate_0_serves_the_tool_set_unproven(tmp_path: Path) -> None:
    reg = _write(tmp_path, [_fn("search", OPTIONAL)])
    r = runner.invoke(
        app,
        ["lower", "agent", "--target", "openai", "--registry", str(reg), "--generate", "0"],
    )
    assert r.exit_code == 1, r.output
    assert "tool set agent: ok [unproven]" in r.stdout
    assert "tool set(s) lowered for openai without proof: agent" in r.stderr
    assert "0 of 0" not in r.stderr and "; )" not in r.stderr  # only what was unproven


def test_shipped_support_agent_lowers_for_gemini(tmp_path: Path) -> None:
    rep = lower_registry_target(REPO / "schemas", "gemini", name="support_agent", generate=3)
    assert rep.cases == []  # NAME names the tool set: no schema is lowered
    (tc,) = rep.toolsets
    assert tc.lowered_ok and tc.proven, tc.all_problems + tc.unproven
    assert [c.name for c in tc.tools] == [
        f"support_agent.tools[{n}]"
        for n in ("get_order", "search_orders", "create_ticket", "issue_refund", "kb_search")
    ]
    # Gemini drops pattern/minLength/...: each is a residual rule the application checks
    assert tc.tool_verdict(tc.tools[0]) == "relaxed"
    assert any(r.keyword == "pattern" for r in tc.tools[0].tl.lowered.residual)


def test_a_call_is_checked_against_the_tools_residual(tmp_path: Path) -> None:
    params = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1}, "tag": {"type": "string"}},
        "required": ["n"],
    }
    reg = _write(tmp_path, [_fn("count", params)])
    (anth,) = lower_registry_target(reg, "anthropic", generate=5).toolsets
    assert anth.proven, anth.all_problems + anth.unproven
    # Anthropic is not sent the minimum: a call with n 0 is served, the residual flags it
    bad = anth.check_call("count", {"n": 0})
    assert bad["known"] and not bad["ok"]
    assert [v["keyword"] for v in bad["flagged"]] == ["minimum"] and not bad["uncovered"]
    assert anth.check_call("count", {"n": 2, "tag": "x"})["ok"]
    assert anth.check_call("delete_all", {})["known"] is False
    # OpenAI serves the optional tag as required-with-null: null means absent
    (oai,) = lower_registry_target(reg, "openai", generate=5).toolsets
    got = oai.check_call("count", {"n": 2, "tag": None})
    assert got["ok"] and got["arguments"] == {"n": 2}
