"""``dev-server --engine vllm`` option handling, without installing or starting anything.

The server itself is tested against a real vLLM in tests/integration/test_vllm_*.py; here
only what is decided before any install: the launch command, the structured-outputs config
vLLM will get, the requirement filter, and usage errors (exit 2, no traceback).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.devserver.vllm import VllmServer, default_backend, structured_outputs_config
from schemaops.devserver.vllm_env import VllmEnv
from schemaops.errors import InputError

REPO = Path(__file__).resolve().parents[1]


def test_default_is_compact_xgrammar_and_any_whitespace_is_vllms_own_default() -> None:
    assert default_backend(True) == "xgrammar"
    assert default_backend(False) == "auto"
    assert structured_outputs_config("xgrammar", True) == {
        "backend": "xgrammar",
        "disable_any_whitespace": True,
    }
    assert structured_outputs_config("guidance", True)["disable_any_whitespace"] is True
    assert structured_outputs_config("auto", False) == {"backend": "auto"}
    # outlines bounds whitespace itself; vLLM refuses disable_any_whitespace with it
    assert structured_outputs_config("outlines", True) == {"backend": "outlines"}


@pytest.mark.parametrize("backend", ["auto", "lm-format-enforcer"])
def test_compact_json_with_a_backend_vllm_refuses_it_for_is_a_usage_error(backend: str) -> None:
    with pytest.raises(InputError, match="--any-whitespace"):
        structured_outputs_config(backend, True)


def test_launch_command_binds_localhost_and_passes_the_config(tmp_path: Path) -> None:
    server = VllmServer(VllmEnv(tmp_path), port=12345, dp_size=2)
    cmd = server.command()
    assert cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert "--enforce-eager" in cmd
    assert cmd[cmd.index("--data-parallel-size") + 1] == "2"
    so = json.loads(cmd[cmd.index("--structured-outputs-config") + 1])
    assert so == {"backend": "xgrammar", "disable_any_whitespace": True}
    env = server._process_env()
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "1" and env["HF_HUB_OFFLINE"] == "1"
    assert env["VLLM_CPU_OMP_THREADS_BIND"].count("|") == 1  # one CPU group per DP rank


def test_a_users_structured_outputs_config_replaces_the_default(tmp_path: Path) -> None:
    mine = '{"backend":"guidance"}'
    server = VllmServer(VllmEnv(tmp_path), port=1, extra_args=["--structured-outputs-config", mine])
    cmd = server.command()
    assert cmd.count("--structured-outputs-config") == 1
    assert cmd[-2:] == ["--structured-outputs-config", mine]
    assert server.info()["structured_outputs_config"] is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "tgi"], "--engine must be sglang or vllm"),
        (["--engine", "vllm", "--grammar-backend", "llguidance"], "unknown vLLM grammar backend"),
        (["--engine", "vllm", "--grammar-backend", "auto"], "--any-whitespace"),
    ],
)
def test_usage_errors_exit_2_before_installing(
    args: list[str], message: str, tmp_path: Path
) -> None:
    result = CliRunner().invoke(app, ["dev-server", *args, "--cache-dir", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "vllm").exists()  # nothing was installed


def test_requirement_filter_drops_the_torch_family_and_extras() -> None:
    """Run the filter on this interpreter's own metadata (pip vendors ``packaging``)."""
    code = (
        "import runpy, sys\n"
        f"ns = runpy.run_path({str(REPO / 'schemaops/devserver/vllm_requirements.py')!r})\n"
        "print('\\n'.join(ns['runtime_requirements']('typer', {'rich'})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    names = [line.split("<")[0].split(">")[0].split("=")[0].strip() for line in out if line]
    assert "pydantic" in names
    assert "rich" not in names  # excluded by name
    assert "colorama" not in names  # its marker (Windows) is false here
    assert all(";" not in line for line in out)  # markers evaluated, not passed on
