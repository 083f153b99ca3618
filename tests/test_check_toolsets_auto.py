"""``check`` on tool sets under ``tool_choice`` auto with a tool parser (issue 35): the
structural tag each engine builds (``engines/structural_tags.py``), compiled with the real
xgrammar/llguidance and walked on the real Qwen2.5 tokenizer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from schemaops.check.toolsets import toolset_cases
from schemaops.cli import app
from schemaops.registry import load_registry

runner = CliRunner()
SG, VL = "support_agent.tools[sglang auto:qwen25]", "support_agent.tools[vllm auto:hermes]"


def test_auto_is_unconstrained_by_default_and_says_what_would_constrain_it(registry_dir):
    reg = load_registry(registry_dir)
    cases, notes = toolset_cases(reg, "xgrammar", "qwen2.5", 60_000.0, 120.0, ["auto"])
    assert cases == []
    text = " ".join(notes)
    assert "SGLANG_TOOL_STRICT_LEVEL" in text and "--tool-strict-level" in text
    assert "strict" in text and "unconstrained" in text


def test_auto_under_a_strict_level_is_compiled_and_walked(registry_dir):
    reg = load_registry(registry_dir)
    cases, _ = toolset_cases(
        reg, "xgrammar", "qwen2.5", 60_000.0, 120.0, ["auto"], tool_strict_level=1
    )
    by = {c.schema: c for c in cases}
    for name in (SG, VL):
        c = by[name]
        assert c.passed, [p.text() for p in c.problems]
        ts = c.result["toolset"]
        assert ts["unknown_tool"] == "refused" and ts["tools"] == 5
        assert ts["arguments"] == {
            t: "any JSON (not strict)" for t in reg.toolset("support_agent").names
        }
        assert c.compile_ms and c.compile_ms > 0 and c.result["mask_us"]["mean"] is not None
        # one call per tool and a plain answer (auto allows text), each produced
        assert c.result["enforcement"]["valid"] == 6


def test_a_strict_tool_constrains_auto_and_its_arguments(tmp_path: Path, registry_dir: Path):
    reg_dir = tmp_path / "reg"
    shutil.copytree(registry_dir, reg_dir)
    f = reg_dir / "support_agent.tools.json"
    tools = json.loads(f.read_text())
    tools[-1]["function"]["strict"] = True  # kb_search
    f.write_text(json.dumps(tools))
    reg = load_registry(reg_dir)
    cases, _ = toolset_cases(reg, "xgrammar", "qwen2.5", 60_000.0, 120.0, ["auto"])
    by = {c.schema: c for c in cases}
    for name in (SG, VL):
        c = by[name]
        assert c.passed, [p.text() for p in c.problems]
        assert c.result["toolset"]["arguments"]["kb_search"] == "held to parameters (strict)"
        kws = c.result["enforcement"]["keywords"]
        assert kws["parameters:kb_search"]["enforced"] == 1  # its invalid example refused


def test_llguidance_refuses_the_closing_token_and_cannot_compile_vllms_tag(registry_dir):
    reg = load_registry(registry_dir)
    cases, _ = toolset_cases(
        reg, "llguidance", "qwen2.5", 60_000.0, 120.0, ["auto:hermes"], tool_strict_level=1
    )
    by = {c.schema: c for c in cases}
    sg = by["support_agent.tools[sglang auto:hermes]"]
    # SGLang's llguidance backend: the call's end is text, and llguidance does not let the
    # tokenizer's own </tool_call> token spell it
    assert sg.verdict == "rejects_valid" and not sg.passed
    assert sg.result["toolset"]["unknown_tool"] == "refused"
    vl = by["support_agent.tools[vllm auto:hermes]"]
    assert vl.status == "unsupported" and "backend_guidance.py" in vl.result["error"]


def test_cli_auto_with_a_strict_level(tmp_path: Path, registry_dir: Path) -> None:
    args = ["check", "--backend", "xgrammar", "--registry", str(registry_dir), "--json", "-q"]
    args += ["--tool-choice", "auto", "--tool-strict-level", "function"]
    r = runner.invoke(app, [*args, "--compile-budget-ms", "60000"])
    assert r.exit_code == 0, r.output
    names = [c["schema"] for c in json.loads(r.stdout)["cases"]]
    assert SG in names and VL in names
    r = runner.invoke(app, [*args[:-1], "bogus"])
    assert r.exit_code == 2


def test_required_under_a_tool_parser_is_a_tag_with_free_arguments(registry_dir):
    """With a structural-tag parser both engines compile required as a tag, not the JSON
    schema: a call is forced and the name is enforced, but non-strict arguments are free."""
    reg = load_registry(registry_dir)
    modes = ["required:qwen25", "required:hermes"]
    cases, notes = toolset_cases(reg, "xgrammar", "qwen2.5", 60_000.0, 120.0, modes)
    by = {c.schema: c for c in cases}
    assert set(by) == {
        "support_agent.tools[sglang required:qwen25]",
        "support_agent.tools[sglang required:hermes]",
        "support_agent.tools[vllm required:hermes]",
    }
    for c in by.values():
        assert c.passed, [p.text() for p in c.problems]
        kws = c.result["enforcement"]["keywords"]
        assert kws["unknown_tool"]["enforced"] == 1 and kws["no_tool_call"]["enforced"] == 1
        assert any("any JSON under this tag" in w for w in c.warnings)
    assert any("ships no tool parser 'qwen25'" in n for n in notes)  # vLLM has no qwen25


def test_named_under_a_tool_parser_walks_a_call_to_another_offered_tool(registry_dir):
    """``named:FN:PARSER``: a server with a tool parser compiles a named choice as a tag.
    SGLang 0.5.23's tag for a named choice holds every tool (``get_structure_constraint``
    gives the named function no tag of its own), so a call to another offered function is
    produced: the gate fails with ``accepts_other_tool``. vLLM 0.32's holds the named tool
    alone and refuses it."""
    reg = load_registry(registry_dir)
    cases, _ = toolset_cases(
        reg,
        "xgrammar",
        "qwen2.5",
        60_000.0,
        120.0,
        ["named:get_order:qwen25", "named:get_order:hermes"],
    )
    by = {c.schema: c for c in cases}
    sg = by["support_agent.tools[sglang named:get_order:qwen25]"]
    kinds = [p.kind for p in sg.problems]
    assert "accepts_other_tool" in kinds, kinds
    assert sg.result["toolset"]["other_tool"] == "accepted"
    vl = by["support_agent.tools[vllm named:get_order:hermes]"]
    assert vl.result["toolset"]["other_tool"] == "refused"
    assert "accepts_other_tool" not in [p.kind for p in vl.problems]
    # the named tool's own call is produced on both
    for c in (sg, vl):
        assert c.result["enforcement"]["valid"] >= 1
        assert c.result["toolset"]["unknown_tool"] == "refused"
