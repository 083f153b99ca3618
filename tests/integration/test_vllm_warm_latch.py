"""``schemaops warm`` chooses vLLM 0.32's ``auto`` latch on a real ``auto`` server.

OPT-IN (``SCHEMAOPS_VLLM_AUTO=1``), like test_vllm_auto_routes.py: it starts its own vLLM
server with the ``auto`` backend, and CI's suite runs a single vLLM server.

    SCHEMAOPS_VLLM_AUTO=1 .venv/bin/python -m pytest tests/integration/test_vllm_warm_latch.py

A registry whose FIRST schema auto routes to outlines: warm's pre-check names it (and the
guidance-routed one vLLM refuses) before sending anything, warms the xgrammar schema first,
and the engine stays on xgrammar (outlines_core never loaded in the EngineCore). Then, on a
fresh engine, the outlines schema warmed first latches the engine on outlines and the
xgrammar schema fails, as the pre-check said.
"""

from __future__ import annotations

import json
from pathlib import Path

from shared_schemas import PATTERN, PATTERN_AND_PROPS, UNIQUE
from test_vllm_auto_routes import engine_loaded_outlines
from vllm_fixtures import VLLM_AUTO_OPT_IN

from schemaops.devserver.vllm import VllmServer
from schemaops.http.retry import RetryPolicy
from schemaops.warm import WarmOptions
from schemaops.warm.run import WarmSettings, run_warm

pytestmark = VLLM_AUTO_OPT_IN


def _registry(tmp_path: Path, schemas: dict[str, dict]) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    for name, schema in schemas.items():
        (tmp_path / f"{name}.json").write_text(json.dumps({"title": name, **schema}))
    return tmp_path


def _warm(server: VllmServer, registry: Path) -> tuple[dict, list[str]]:
    opts = WarmOptions(
        servers=[server.url],
        timeout_s=120.0,
        probe=False,
        policy=RetryPolicy(retries=1, base_s=0.1),
        concurrency=2,
    )
    notes: list[str] = []
    doc, _ = run_warm(
        WarmSettings(options=opts, registry=registry, api_auto=True), notify=notes.append
    )
    return doc, notes


def test_warm_latches_xgrammar_on_purpose(auto_server: VllmServer, tmp_path: Path) -> None:
    reg = _registry(
        tmp_path, {"a_pattern_props": PATTERN_AND_PROPS, "b_unique": UNIQUE, "c_pattern": PATTERN}
    )
    doc, notes = _warm(auto_server, reg)
    pre = {e["schema"]: e for e in doc["vllm_precheck"]["schemas"]}
    assert set(pre) == {"a_pattern_props", "b_unique"} and len(notes) == 2
    assert pre["a_pattern_props"]["routes_to"] == "outlines"
    assert "compiles it with xgrammar anyway" in pre["a_pattern_props"]["latched"]
    assert pre["b_unique"]["rejected"] and "HTTP 400" in pre["b_unique"]["latched"]
    rows = {r["schema"]: r for r in doc["results"]}
    assert [r["schema"] for r in doc["results"]][0] == "c_pattern"  # xgrammar's went first
    assert rows["c_pattern"]["status"] == "warmed"
    assert rows["a_pattern_props"]["status"] == "warmed"  # compiled by xgrammar, as predicted
    assert rows["b_unique"]["status"] == "invalid"
    assert "uniqueItems" in rows["b_unique"]["error"]
    assert not engine_loaded_outlines(auto_server)  # the engine never built outlines


def test_outlines_first_breaks_xgrammar_as_predicted(
    auto_server: VllmServer, tmp_path: Path
) -> None:
    auto_server.restart()  # a fresh engine
    first, notes = _warm(auto_server, _registry(tmp_path / "a", {"a": PATTERN_AND_PROPS}))
    assert first["results"][0]["status"] == "warmed" and engine_loaded_outlines(auto_server)
    assert "latch the engine on outlines" in notes[0]  # predicted before it was sent
    later, _ = _warm(auto_server, _registry(tmp_path / "c", {"c": PATTERN}))
    (row,) = later["results"]
    assert row["status"] == "failed" and "HTTP 500" in row["error"], row
