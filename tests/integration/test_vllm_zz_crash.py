"""A vLLM engine that dies gives a bounded, explained failure, never a hang.

Named ``zz`` so it runs after the other vLLM tests: it crashes the session's only vLLM server
(SIGKILL of its EngineCore process, as the OOM killer would) instead of starting a second
one. A later test that asks for ``vllm_server`` gets it restarted on the same port.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from schemaops.devserver.env import DevServerError
from schemaops.devserver.launcher import group_members
from schemaops.devserver.vllm import SERVED_MODEL_NAME, VllmServer

pytestmark = pytest.mark.vllm

EXIT_WITHIN_S = 60.0


def engine_core_pids(server: VllmServer) -> list[int]:
    """The EngineCore process(es) of the server's group (vLLM retitles them)."""
    pids = []
    for pid in group_members(server.pid or -1):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if title.startswith(b"VLLM::EngineCore"):
            pids.append(pid)
    return pids


def test_engine_crash_is_bounded_and_explained(vllm_server: VllmServer) -> None:
    if vllm_server.pid is None:
        pytest.skip("server started outside this session (SCHEMAOPS_VLLM_URL): not ours to kill")
    engines = engine_core_pids(vllm_server)
    assert engines, "no VLLM::EngineCore process in the server's group"
    t0 = time.monotonic()
    for pid in engines:
        os.kill(pid, signal.SIGKILL)

    # A client gets an answer or a refused connection at once, not a hang.
    body = {"model": SERVED_MODEL_NAME, "messages": [{"role": "user", "content": "x"}]}
    try:
        resp = httpx.post(vllm_server.url + "/v1/chat/completions", json=body, timeout=30)
        assert resp.status_code >= 500, resp.text
        assert "EngineCore" in resp.text or "Engine" in resp.text, resp.text
    except httpx.TransportError:
        pass  # the API server already went down: connection refused/reset

    # vLLM takes its API server down with the engine: the dev server is gone, not half-up.
    while vllm_server.is_running() and time.monotonic() - t0 < EXIT_WITHIN_S:
        time.sleep(0.5)
    assert not vllm_server.is_running(), f"API server still up {EXIT_WITHIN_S:.0f}s after"

    # The dev-server layer explains it with the server's own log tail.
    with pytest.raises(DevServerError) as err:
        vllm_server.wait_ready(timeout=5)
    message = str(err.value)
    assert "vLLM dev server on port" in message and "exited with code" in message
    assert "EngineCore" in message or "died" in message.lower(), message

    # And `--status` no longer lists it (its stale pid file is dropped).
    cmd = [sys.executable, "-m", "schemaops.cli", "dev-server", "--status", "--engine", "vllm"]
    out = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert vllm_server.port not in [s["port"] for s in json.loads(out.stdout)["servers"]]
