"""``check`` on registry tool sets (issue 35): real xgrammar, the qwen2.5 tokenizer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from schemaops.check.gate import gate_items
from schemaops.check.toolsets import UNKNOWN_TOOL, toolset_cases, unknown_tool_outcome
from schemaops.cli import app
from schemaops.compare.run import Item
from schemaops.registry import load_registry

runner = CliRunner()


def test_required_and_named_on_xgrammar(registry_dir: Path) -> None:
    reg = load_registry(registry_dir)
    modes = ["required", "named:get_order", "named:kb_search", "auto"]
    cases, notes = toolset_cases(reg, "xgrammar", "qwen2.5", 60_000.0, 120.0, modes)
    by = {c.schema: c for c in cases}
    for engine in ("sglang", "vllm"):
        c = by[f"support_agent.tools[{engine} required]"]
        assert c.passed, [p.text() for p in c.problems]
        assert c.result["toolset"]["unknown_tool"] == "refused"
        assert c.result["toolset"]["tools"] == 5
        assert c.result["enforcement"]["valid"] == 5  # one call per tool, each produced
    # SGLang's named constraint nests get_order's parameters without their $defs: the
    # grammar does not compile (a real finding, with the fix in a warning)
    bad = by["support_agent.tools[sglang named:get_order]"]
    assert not bad.passed and bad.result["toolset"]["unknown_tool"] == "unchecked"
    assert any("inline those definitions" in w for w in bad.warnings)
    assert by["support_agent.tools[sglang named:kb_search]"].passed
    vl = by["support_agent.tools[vllm named:get_order]"]
    assert vl.passed and vl.result["toolset"]["unknown_tool"].startswith("not generated")
    assert notes and "unconstrained" in notes[0]


def test_unknown_tool_outcome_sees_a_grammar_that_lets_any_name_through() -> None:
    loose = {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "parameters": {"type": "object"}},
            "required": ["name", "parameters"],
        },
    }
    call = [{"name": UNKNOWN_TOOL, "parameters": {}}]
    item = Item("loose", json.dumps(loose), [], [call])
    (case,) = gate_items([item], "xgrammar", "qwen2.5", 60_000.0, 120.0)
    assert unknown_tool_outcome(case.result) == "accepted"


def test_cli_gate_on_tool_sets(tmp_path: Path, registry_dir: Path) -> None:
    reg = tmp_path / "reg"
    shutil.copytree(registry_dir, reg)
    r = runner.invoke(
        app, ["check", "--backend", "xgrammar", "--registry", str(reg), "--tool-choice", "bogus"]
    )
    assert r.exit_code == 2 and "--tool-choice 'bogus'" in r.output
    for f in reg.glob("*.json"):  # keep one schema: the tool set's refs still resolve
        if f.name not in ("get_order.json", "common.json", "support_agent.tools.json"):
            f.unlink()
    tools = json.loads((reg / "support_agent.tools.json").read_text())[:1]
    (reg / "support_agent.tools.json").write_text(json.dumps(tools))
    args = ["check", "--backend", "xgrammar", "--registry", str(reg), "--json", "-q"]
    r = runner.invoke(app, [*args, "--compile-budget-ms", "60000"])
    assert r.exit_code == 0, r.output
    names = [c["schema"] for c in json.loads(r.stdout)["cases"]]
    assert "support_agent.tools[sglang required]" in names
    r = runner.invoke(app, [*args, "--tool-choice", "named:get_order"])
    assert r.exit_code == 1  # SGLang's named derivation does not compile (see above)
