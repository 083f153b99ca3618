"""vLLM 0.32.0's ``auto`` routing and its one-backend latch, observed on a real ``auto`` server.

OPT-IN (``SCHEMAOPS_VLLM_AUTO=1``): it starts its own vLLM server with the ``auto`` backend
(twice: a fresh engine per first request), and CI's suite runs a single vLLM server. Run it
when the routing rules of ``schemaops/engines/vllm.py`` or the vLLM version change:

    SCHEMAOPS_VLLM_AUTO=1 .venv/bin/python -m pytest tests/integration/test_vllm_auto_routes.py

Which backend compiled a grammar is read from the EngineCore process: vLLM imports each
backend's library lazily, and outlines_core is not loaded in a fresh engine (xgrammar and
llguidance are, at start), so ``outlines_core`` appearing in the engine's memory maps after a
request means the engine built the outlines backend for it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
from shared_schemas import PATTERN, PATTERN_AND_PROPS, UNIQUE
from vllm_fixtures import VLLM_AUTO_OPT_IN

from schemaops.devserver.launcher import group_members
from schemaops.devserver.vllm import SERVED_MODEL_NAME, VllmServer
from schemaops.engines import route

pytestmark = VLLM_AUTO_OPT_IN


def ask(server: VllmServer, schema: dict[str, Any]) -> httpx.Response:
    rf = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}
    body = {
        "model": SERVED_MODEL_NAME,
        "messages": [{"role": "user", "content": "x"}],
        "max_tokens": 16,
        "temperature": 1.0,
        "seed": 1,
        "response_format": rf,
    }
    return httpx.post(server.url + "/v1/chat/completions", json=body, timeout=120)


def engine_loaded_outlines(server: VllmServer) -> bool:
    for pid in group_members(server.pid or -1):
        try:
            if not Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"VLLM::EngineCore"):
                continue
            maps = Path(f"/proc/{pid}/maps").read_text()
        except OSError:
            continue
        return re.search(r"site-packages/outlines_core/\S*\.so", maps) is not None
    raise AssertionError("no EngineCore process")


def test_first_request_to_outlines_latches_the_engine(auto_server: VllmServer) -> None:
    assert route(PATTERN_AND_PROPS, "vllm").served_by == "outlines"
    assert not engine_loaded_outlines(auto_server)
    assert ask(auto_server, PATTERN_AND_PROPS).status_code == 200
    assert engine_loaded_outlines(auto_server)  # the engine built the outlines backend

    predicted = route(UNIQUE, "vllm")
    resp = ask(auto_server, UNIQUE)
    assert predicted.rejected and resp.status_code == 400
    assert 'Unimplemented keys: [\\"uniqueItems\\"]' in resp.text  # guidance's refusal

    # auto routes PATTERN to xgrammar, but this engine compiles with outlines, which fails:
    assert route(PATTERN, "vllm").served_by == "xgrammar"
    resp = ask(auto_server, PATTERN)
    assert resp.status_code == 500, resp.text
    log = auto_server.log_path.read_text(errors="replace") if auto_server.log_path else ""
    assert "backend_outlines.py" in log and "Failed to compile grammar" in log


def test_first_request_to_xgrammar_latches_the_engine(auto_server: VllmServer) -> None:
    auto_server.restart()  # a fresh engine, same port
    assert ask(auto_server, PATTERN).status_code == 200
    assert not engine_loaded_outlines(auto_server)
    # auto routes PATTERN_AND_PROPS to outlines; this engine compiles it with xgrammar
    assert ask(auto_server, PATTERN_AND_PROPS).status_code == 200
    assert not engine_loaded_outlines(auto_server)
