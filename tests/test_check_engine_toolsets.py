"""``check --engine sglang|vllm`` gates the registry's tool sets as that engine compiles them
(issue 35): real xgrammar, the Qwen2.5 tokenizer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from schemaops.check.engine import run_engine_check
from schemaops.cli import app

runner = CliRunner()


def _one_tool_registry(tmp_path: Path, registry_dir: Path) -> Path:
    reg = tmp_path / "reg"
    shutil.copytree(registry_dir, reg)
    for f in reg.glob("*.json"):  # keep one schema: the tool set's refs still resolve
        if f.name not in ("get_order.json", "common.json", "support_agent.tools.json"):
            f.unlink()
    tools = json.loads((reg / "support_agent.tools.json").read_text())[:1]
    (reg / "support_agent.tools.json").write_text(json.dumps(tools))
    return reg


def test_engine_check_gates_only_that_engines_derivation(tmp_path, registry_dir) -> None:
    reg = _one_tool_registry(tmp_path, registry_dir)
    rep = run_engine_check(
        reg, "vllm", compile_budget_ms=60_000.0, tool_choice=["required", "named:get_order"]
    )
    by = {c.schema: c for c in rep.cases}
    assert "get_order" in by
    assert "support_agent.tools[vllm required]" in by
    assert not any("[sglang" in n for n in by)
    named = by["support_agent.tools[vllm named:get_order]"]
    assert named.passed and named.result["engine_route"]["served_by"] == "xgrammar"
    assert by["support_agent.tools[vllm required]"].result["toolset"]["unknown_tool"] == "refused"
    # SGLang's named derivation nests get_order's $defs: it fails there, as check --backend says
    rep = run_engine_check(reg, "sglang", compile_budget_ms=60_000.0, tool_choice=["named"])
    assert not rep.passed
    assert not {c.schema: c for c in rep.cases}[
        "support_agent.tools[sglang named:get_order]"
    ].passed


def test_cli_engine_check_with_auto(tmp_path, registry_dir) -> None:
    reg = _one_tool_registry(tmp_path, registry_dir)
    args = ["check", "--engine", "sglang", "--registry", str(reg), "--json", "-q"]
    args += ["--tool-choice", "auto", "--tool-strict-level", "function"]
    r = runner.invoke(app, [*args, "--compile-budget-ms", "60000"])
    assert r.exit_code == 0, r.output
    names = [c["schema"] for c in json.loads(r.stdout)["cases"]]
    assert "support_agent.tools[sglang auto:qwen25]" in names
    assert not any("vllm" in n for n in names)
    r = runner.invoke(app, [*args[:-1], "sometimes"])
    assert r.exit_code == 2
