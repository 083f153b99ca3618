"""``check --fix`` with registry tool sets (``NAME.tools.json``), on the real xgrammar
backend (milliseconds per compile).

Before, ``check --fix`` gated schemas only: a tool set that failed ``check`` was dropped from
the verdict and ``--fix`` passed (exit 0) where ``check`` failed. Now tool sets are gated in
the same ``--tool-choice`` modes before and in ``--out``; ``lower`` rewrites no tool set, so
a tool that ``$ref``s a registry schema is judged over the lowered schema in ``--out``, a
tool whose inline parameters fail keeps the gate failing with what to do, and a tool set
whose ``$ref`` target could not be lowered is not written to ``--out`` (it would not load).
"""

from __future__ import annotations

import json
from pathlib import Path

from shared_schemas import LOOK, LOOK_EXAMPLES, TAGS, TAGS_EX
from test_lower_e2e import SHIPMENT, SHIPMENT_EXAMPLES, _cli, _registry

from schemaops.lower.fix import TOOLSET_ADVICE, fix_registry
from schemaops.registry import load_registry

PLAIN = {"type": "object", "properties": {"q": {"type": "string", "enum": ["a", "b"]}}}
PLAIN_EXAMPLES = {"valid": [{"q": "a"}], "invalid": [{"q": "c"}]}
#: a pattern xgrammar refuses to compile (lookbehind): no rewrite serves it
BEHIND = {"type": "object", "properties": {"c": {"type": "string", "pattern": "(?<=x)y"}}}


def _tools(reg: Path, params: dict[str, dict]) -> None:
    tools = [
        {"type": "function", "function": {"name": n, "description": n, "parameters": p}}
        for n, p in params.items()
    ]
    (reg / "agent.tools.json").write_text(json.dumps(tools, indent=1))


def _toolset_cases(report) -> dict[str, bool]:
    return {c.schema: c.passed for c in report.cases if "toolset" in c.result}


def test_a_failing_inline_tool_set_fails_the_fix_and_says_what_to_do(tmp_path: Path) -> None:
    reg = _registry(tmp_path, {"plain": (PLAIN, PLAIN_EXAMPLES)})
    _tools(reg, {"find": BEHIND, "plain": {"$ref": "plain.json"}})
    base = ("check", "--registry", str(reg), "-b", "xgrammar", "-q")
    out = tmp_path / "fixed"
    res = _cli(*base, "--fix", "--out", str(out), "--json")
    assert res.returncode == 1, res.stdout + res.stderr  # was 0: the tool set was not gated
    doc = json.loads(res.stdout)
    assert doc["before"]["passed"] is False  # check alone fails on it (the same gate)
    assert doc["passed"] is False and doc["not_lowered"] == [] and doc["stale"] == []
    failing = [c["schema"] for c in doc["after"]["cases"] if not c["passed"]]
    assert failing == ["agent.tools[sglang required]"]
    assert (out / "agent.tools.json").read_text() == (reg / "agent.tools.json").read_text()
    text = _cli(*base, "--fix", "--out", str(tmp_path / "again"))
    assert text.returncode == 1
    assert "tool sets failing in" in text.stdout and "NAME.json" in TOOLSET_ADVICE
    assert TOOLSET_ADVICE.split(":")[0] in text.stdout


def test_a_tool_set_refs_the_lowered_schema_in_out(tmp_path: Path) -> None:
    reg = _registry(tmp_path, {"tags": (TAGS, TAGS_EX), "plain": (PLAIN, PLAIN_EXAMPLES)})
    _tools(reg, {"tag": {"$ref": "tags.json"}, "plain": {"$ref": "plain.json"}})
    out = tmp_path / "fixed"
    rep = fix_registry(reg, "xgrammar", out, generate=5, tool_choice=["required"])
    failed = [c.schema for c in rep.before.failed]
    assert failed == ["tags", "agent.tools[sglang required]"]  # uniqueItems ignored by both
    assert rep.fixed == ["tags"] and rep.stale == [] and rep.toolsets_left_out == {}
    # in --out the tool set's parameters are the lowered tags (uniqueItems checked after
    # decoding), so the verdict is on what a deploy serves: it passes there
    assert _toolset_cases(rep.after) == {"agent.tools[sglang required]": True}
    served = load_registry(out).toolsets["agent"].request_tools()
    assert "x-schemaops-lowered-from" in json.dumps(served[0]["function"]["parameters"])
    assert rep.passed and "tool sets failing" not in rep.summary()


def test_a_lowered_conditional_root_stays_a_tools_parameters(tmp_path: Path) -> None:
    """Lowered for xgrammar, SHIPMENT's if/then/else becomes an ``anyOf`` of object branches
    at the root. It lost the root's ``type: object`` (exact as a schema, but no longer a
    tool's parameters as the registry requires them: the tool set was left out of ``--out``
    with ``not_object_schema``); the lowered root keeps it, so the tool set that ``$ref``s it
    is written and gated in ``--out``."""
    reg = _registry(tmp_path, {"shipment": (SHIPMENT, SHIPMENT_EXAMPLES)})
    _tools(reg, {"ship": {"$ref": "shipment.json"}})
    out = tmp_path / "fixed"
    rep = fix_registry(reg, "xgrammar", out, generate=5, tool_choice=["required"])
    assert rep.fixed == ["shipment"] and rep.toolsets_left_out == {}
    served = json.loads((out / "shipment.json").read_text())
    assert served["type"] == "object" and "anyOf" in served and "if" not in served
    assert (out / "agent.tools.json").is_file()
    assert _toolset_cases(rep.after) == {"agent.tools[sglang required]": True}
    assert rep.passed, rep.summary()


def test_a_tool_set_whose_ref_could_not_be_lowered_is_not_written(tmp_path: Path) -> None:
    reg = _registry(tmp_path, {"look": (LOOK, LOOK_EXAMPLES), "plain": (PLAIN, PLAIN_EXAMPLES)})
    _tools(reg, {"look": {"$ref": "look.json"}})
    out = tmp_path / "fixed"
    rep = fix_registry(reg, "xgrammar", out, generate=0, tool_choice=["required"])
    assert rep.not_lowered == ["look"] and not rep.passed
    assert list(rep.toolsets_left_out) == ["agent"]
    assert "look.json" in rep.toolsets_left_out["agent"]
    assert not (out / "agent.tools.json").exists() and (out / "plain.json").is_file()
    assert _toolset_cases(rep.after) == {} and rep.stale == []
    assert "tool set agent not written to" in rep.summary()
    assert rep.to_dict()["toolsets_left_out"] == rep.toolsets_left_out


def test_nothing_written_is_a_failed_gate_not_an_unusable_folder(tmp_path: Path) -> None:
    reg = _registry(tmp_path, {"look": (LOOK, LOOK_EXAMPLES)})
    _tools(reg, {"look": {"$ref": "look.json"}})
    out = tmp_path / "fixed"
    base = ("check", "--registry", str(reg), "-b", "xgrammar", "-q", "--fix", "--out", str(out))
    res = _cli(*base, "--json")
    assert res.returncode == 1, res.stdout + res.stderr  # was 2: "no schema files" in --out
    doc = json.loads(res.stdout)
    assert doc["not_lowered"] == ["look"] and list(doc["toolsets_left_out"]) == ["agent"]
    assert doc["after"]["schemas"] == 0 and "nothing could be written" in json.dumps(doc)
    assert doc["after"]["passed"] is False  # a gate over nothing passed nothing
