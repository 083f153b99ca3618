"""``check --engine``'s terminal report (issue 34 item 6): real lines, no literal ``\\n``;
``warning:`` only for what the user must act on, the engine's route said once as info."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli_support import REPO, run_cli


@pytest.fixture
def one_schema(tmp_path: Path) -> Path:
    """get_order (it refers to common.json) with its examples: a schema that passes."""
    reg = tmp_path / "schemas"
    reg.mkdir()
    for name in ("get_order.json", "get_order.examples.json", "common.json"):
        shutil.copy(REPO / "schemas" / name, reg / name)
    return reg


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_engine_report_has_real_lines_and_no_warning_on_a_pass(
    one_schema: Path, engine: str
) -> None:
    proc = run_cli("check", "--engine", engine, "--registry", str(one_schema), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "\\n" not in out  # the versions and grammar-cache lines are lines
    assert "PASS get_order" in out
    assert "warning:" not in out, out  # a route the user configured is nothing to act on
    assert "serves 1 schema(s) with" in out  # said once, as information
