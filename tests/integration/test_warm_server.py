"""schemaops warm against the real SGLang 0.5.23 dev server (shared session server).

Each test uses heavy schemas with its own index range, so no test sees another's cache
entries (the session server is shared with other areas' tests).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import httpx
import pytest
from warm_support import (
    cli,
    fresh_cold_ms,
    generate_ms,
    heavy,
    heavy_registry,
    rows_by_schema,
    warm_json,
)

from schemaops.registry import load_registry
from schemaops.registry.model import canonical_text, openai_text
from schemaops.warm import WarmOptions, plan_from_registry, report, warm
from schemaops.warm.measure import flush_cache

pytestmark = pytest.mark.integration


# Kept apart from test_vllm_warm.EXPECTED (vLLM's answers): each engine's own facts.
# What SGLang 0.5.23 with xgrammar answers for each shipped schema on /generate. A schema
# added to (or changed in) schemas/ must be added here with the status it really gets.
SHIPPED_STATUS = {
    "cancel_subscription": "warmed",
    "create_ticket": "warmed",
    "get_order": "warmed",
    "issue_refund": "warmed",
    "kb_search": "warmed",
    "schedule_callback": "warmed",
    "search_orders": "warmed",
    "tool_call": "warmed",
    "update_profile": "warmed",
    # the shipped tool set, warmed by default with tool_choice required (warm.toolsets)
    "support_agent.tools[sglang required]": "warmed",
}


def test_warm_shipped_registry(sglang_url: str, registry_dir: Path) -> None:
    """Every shipped schema gets exactly the status the server gives it, with evidence."""
    rc, doc = warm_json("--server", sglang_url, "--registry", str(registry_dir))
    reg = load_registry(registry_dir)
    rows = rows_by_schema(doc)
    assert set(rows) == {s.name for s in reg} | {"support_agent.tools[sglang required]"}
    assert (
        doc["servers"][0]["version"] == "0.5.23"
        and doc["servers"][0]["grammar_backend"] == "xgrammar"
    )
    assert {name: row["status"] for name, row in rows.items()} == SHIPPED_STATUS, doc["results"]
    for row in rows.values():
        assert row["cold_ms"] is not None and row["error"] is None and row["attempts"] == 1
        assert row["probe_ms"] is not None and row["proof"] is not None, row
    assert rc == 0


def test_heavy_warm_then_again_then_flush(sglang_url: str, tmp_path: Path) -> None:
    """Warm: cold >> probe. Again: already cached (cold ~ probe). After /flush_cache: cold again."""
    reg = heavy_registry(tmp_path, 100, 6)
    rc1, first = warm_json("--server", sglang_url, "-r", str(reg))
    assert rc1 == 0 and first["summary"]["warmed"] == 6
    assert first["summary"]["proof"]["hit"] >= 4, first["results"]
    cold1 = statistics.median(r["cold_ms"] for r in first["results"])
    probe1 = statistics.median(r["probe_ms"] for r in first["results"])
    assert probe1 < cold1 / 2

    rc2, again = warm_json("--server", sglang_url, "-r", str(reg))
    cold2 = statistics.median(r["cold_ms"] for r in again["results"])
    assert rc2 == 0 and cold2 < cold1 / 2  # nothing compiled: it was cached

    flush_cache(sglang_url)  # retried: it answers 400 while requests are still running
    rc3, flushed = warm_json("--server", sglang_url, "-r", str(reg))
    cold3 = statistics.median(r["cold_ms"] for r in flushed["results"])
    assert rc3 == 0 and cold3 > 2 * cold2  # cold again: the flush emptied the grammar cache
    assert flushed["summary"]["proof"]["hit"] >= 4
    print(
        f"median cold {cold1:.0f} ms, probe {probe1:.0f} ms; "
        f"rewarm {cold2:.0f} ms; after flush {cold3:.0f} ms"
    )


def test_invalid_schema_reported_others_warmed(sglang_url: str, tmp_path: Path) -> None:
    reg = heavy_registry(tmp_path, 200, 2)
    bad = {"type": "object", "properties": {"code": {"type": "string", "pattern": "(?<=x)y"}}}
    (reg / "lookbehind.json").write_text(json.dumps(bad))
    rc, doc = warm_json("--server", sglang_url, "-r", str(reg))
    assert rc == 1
    rows = rows_by_schema(doc)
    assert rows["lookbehind"]["status"] == "invalid" and rows["lookbehind"]["attempts"] == 1
    assert rows["lookbehind"]["error"].startswith("HTTP 400: Failed to compile json grammar")
    assert "Lookbehind is not supported" in rows["lookbehind"]["error"]
    status, _ = generate_ms(sglang_url, load_registry(reg).get("lookbehind").wire("native"))
    assert status == 400  # a verdict: cached as invalid, the same answer forever
    assert [rows[n]["status"] for n in ("heavy_200", "heavy_201")] == ["warmed", "warmed"]
    r = cli(
        "warm", "--server", sglang_url, "-r", str(reg), "--no-progress"
    )  # the table, for humans
    assert r.returncode == 1 and "invalid" in r.stdout and "Lookbehind" in r.stdout


def test_flush_between_warm_and_probe_is_never_a_hit(sglang_url: str, tmp_path: Path) -> None:
    """The cache emptied after the warm requests and before the probes: every probe compiles
    again, so no proof may say ``hit``, even with the cold requests sent all at once (each
    shared the server with the others) and each probe sent alone."""
    reg = heavy_registry(tmp_path, 1000, 6)
    items = plan_from_registry(load_registry(reg))
    opts = WarmOptions(servers=[sglang_url], concurrency=len(items))
    answered = {"n": 0}

    def progress(event: str, n: int) -> None:
        if event == "advance":
            answered["n"] += n
            if answered["n"] == len(items):  # the last warm answer; no probe sent yet
                flush_cache(sglang_url)

    runs, wall = warm(items, opts, progress)
    doc = report.document(items, runs, opts, wall)
    proofs = [r["proof"] for r in doc["results"]]
    assert doc["summary"]["warmed"] == len(items)  # the probes compiled them again
    assert "hit" not in proofs, doc["results"]
    assert proofs.count("miss") >= len(items) // 2, doc["results"]
    print(
        "after flush:",
        proofs,
        [(r["cold_ms"], r["cold_share_ms"], r["probe_ms"]) for r in doc["results"]],
    )


def test_openai_path_key_is_json_dumps_of_the_schema(sglang_url: str, tmp_path: Path) -> None:
    """Warming via response_format caches json.dumps(schema): a /generate sending exactly
    that string (the registry's wire("openai")) is already warm."""
    reg = heavy_registry(tmp_path, 300, 2)
    rc, doc = warm_json("--server", sglang_url, "-r", str(reg), "--api", "openai")
    assert rc == 0 and doc["summary"]["warmed"] == 2
    hits = []
    for i in (300, 301):
        status, ms = generate_ms(sglang_url, openai_text(heavy(i)))
        assert status == 200
        hits.append(ms)
    # what the same request costs when the key is not cached: a never-sent schema
    assert max(hits) < fresh_cold_ms(sglang_url, 350, 2) / 2, hits


def test_tools_named_warms_what_the_application_sends(sglang_url: str, tmp_path: Path) -> None:
    reg = heavy_registry(tmp_path, 400, 2)
    rc, doc = warm_json(
        "--server", sglang_url, "-r", str(reg), "--api", "openai", "--tools", "named"
    )
    assert rc == 0, doc["results"]
    tools = [
        {"type": "function", "function": {"name": f"heavy_{i}", "parameters": heavy(i)}}
        for i in (400, 401)
    ]
    app_request = {  # what the agent sends: all tools, one named
        "model": "default",
        "messages": [{"role": "user", "content": "Hi"}],
        "tools": tools,
        "tool_choice": {"type": "function", "function": {"name": "heavy_400"}},
        "max_tokens": 1,
    }
    ms = []
    for _ in range(2):
        r = httpx.post(sglang_url + "/v1/chat/completions", json=app_request, timeout=600)
        assert r.status_code == 200, r.text
        ms.append(r.elapsed.total_seconds() * 1000)
    assert rows_by_schema(doc)["heavy_400"]["status"] == "warmed"
    # the application's first request is already warm: against the same request naming a tool
    # that was never warmed, measured now (not warm's cold figure, taken before the host's
    # load could change)
    cold_tool = {"type": "function", "function": {"name": "heavy_450", "parameters": heavy(450)}}
    ref = dict(app_request, tools=[*tools, cold_tool])
    ref["tool_choice"] = {"type": "function", "function": {"name": "heavy_450"}}
    r = httpx.post(sglang_url + "/v1/chat/completions", json=ref, timeout=600)
    assert r.status_code == 200 and r.elapsed.total_seconds() * 1000 > 1.5 * ms[0]


def test_from_log_warms_each_byte_variant(sglang_url: str, tmp_path: Path) -> None:
    s = heavy(500)
    variants = [canonical_text(s), json.dumps(s), json.dumps(s, indent=1)]
    log = tmp_path / "requests.jsonl"
    log.write_text(
        "\n".join(
            json.dumps({"text": "x", "sampling_params": {"json_schema": v}}) for v in variants * 2
        )
        + "\n"
    )
    r = cli("registry", "drift", str(log), "--json", "-r", str(tmp_path / "none"))
    drift = json.loads(r.stdout)
    assert r.returncode == 1 and drift["drifting"] == 1 and drift["cache_entries"] == 3
    rc, doc = warm_json("--server", sglang_url, "--from-log", str(log))
    assert rc == 0 and doc["summary"]["rows"] == 3
    assert all(row["seen"] == 2 and row["status"] == "warmed" for row in doc["results"])
    direct = []
    for v in variants:  # every variant is its own entry, and each is now warm
        status, ms = generate_ms(sglang_url, v)
        assert status == 200
        direct.append(ms)
    assert max(direct) < fresh_cold_ms(sglang_url, 550, 2) / 2, direct
