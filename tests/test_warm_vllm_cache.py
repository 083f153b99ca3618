"""``warm`` on vLLM when the server hides its DP size, says nonsense in /metrics, or its grammar
cache cannot hold the registry (trust #4, #8, #12's metric).

These use tests/vllm_double.py, a vLLM-like HTTP TEST DOUBLE: a real vLLM cannot be made on
demand to drop /metrics (a gateway), to print a malformed process_start_time_seconds, or to
cap its LRU at 3 MiB over schemas of a chosen size. The double's LRU charges what xgrammar's own
cache-enabled ``GrammarCompiler`` counts (``get_cache_size_bytes()``, the number vLLM's
``cache_limit_bytes`` is compared with), measured here with the real xgrammar on the real
tokenizer, independently of the code under test; the code's footprint must equal it.
Proof thresholds are chosen so the verdicts do not depend on load: where a miss must be seen,
a re-probe that paid a quarter of the 0.4 s compile is one; where hits must be seen, the
compile is 1 s and a hit may take up to half of it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner
from vllm_double import GOOD_METRICS, VllmState, vllm_double

from schemaops.cli import app
from schemaops.engines.capacity import xgrammar_footprint
from schemaops.engines.vllm import VLLM, MalformedMetric, metrics_start
from schemaops.http.retry import RetryPolicy
from schemaops.warm import WarmOptions
from schemaops.warm.engine import Cell, ServerRun
from schemaops.warm.plan import response_format_item
from schemaops.warm.prove import ProofPolicy
from schemaops.warm.report import document, exit_code, render
from schemaops.warm.run import WarmSettings, run_warm

HEAVY = [
    {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "pattern": "^[a-z]{1,30}$"}},
        "required": [f"p{i}"],
    }
    for i in range(4)
]
WIDE = ProofPolicy(min_compile_ms=25.0, hit_fraction=0.1, miss_fraction=0.25)


def _settings(url: str, registry: Path, proof: ProofPolicy = WIDE, **kw: object) -> WarmSettings:
    opts = WarmOptions(
        servers=[url],
        engine="vllm",
        concurrency=1,  # one request at a time: the send order is the order the double sees
        timeout_s=60.0,
        policy=RetryPolicy(0),
        proof=proof,
        baseline_samples=3,
        dp=kw.pop("dp", None),  # type: ignore[arg-type]
    )
    return WarmSettings(options=opts, registry=registry, api_auto=True, **kw)  # type: ignore[arg-type]


def _registry(tmp_path: Path, schemas: list[dict]) -> Path:
    reg = tmp_path / "reg"
    reg.mkdir()
    for i, schema in enumerate(schemas):
        (reg / f"s{i}.json").write_text(json.dumps(schema))
    return reg


def test_unknown_dp_size_is_said_and_not_ok(tmp_path: Path) -> None:
    """Fails on main before this: /metrics 404 made dp_size 1 and the run ok."""
    reg = _registry(tmp_path, HEAVY[:1])
    state = VllmState(metrics=None)
    with vllm_double(state) as url:
        doc, code = run_warm(_settings(url, reg), notify=lambda _m: None)
    server = doc["servers"][0]
    assert server["dp_size"] is None and "pass --dp-size N" in server["dp_unknown"]
    row = doc["results"][0]
    assert row["status"] == "warmed" and row["proof"] == "unproven"
    assert "number of vLLM DP engines is unknown" in row["note"]
    assert doc["ok"] is False and code == 1
    assert any("--dp-size" in why for why in doc["why_not_ok"])
    console = Console(record=True, width=200)
    render(doc, console)
    text = console.export_text()
    assert "dp_size unknown" in text and "not ok: " in text


@pytest.mark.parametrize("value", ["0", "257", "x"])
def test_dp_size_out_of_range_is_a_usage_error(value: str) -> None:
    result = CliRunner().invoke(app, ["warm", "--server", "http://127.0.0.1:9", "--dp-size", value])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_dp_size_given_addresses_every_engine(tmp_path: Path) -> None:
    reg = _registry(tmp_path, HEAVY[:1])
    state = VllmState(metrics=None)
    with vllm_double(state) as url:
        doc, code = run_warm(_settings(url, reg, dp=2), notify=lambda _m: None)
    assert doc["servers"][0]["dp_size"] == 2 and "dp_unknown" not in doc["servers"][0]
    ranks = {rank for key, rank in state.sent if key is not None}
    assert ranks == {"0", "1"}
    assert doc["results"][0]["status"] == "warmed" and code == 0, doc.get("why_not_ok")


@pytest.mark.parametrize("value", ["1.2.3", "nan", "inf", "x" * 5000])
def test_a_malformed_start_time_is_explained_not_a_traceback(value: str) -> None:
    page = GOOD_METRICS.replace("1.79605663283e+09", value)
    with pytest.raises(MalformedMetric, match="process_start_time_seconds is not a number") as e:
        metrics_start(page)
    assert len(str(e.value)) < 200
    assert metrics_start(GOOD_METRICS) == pytest.approx(1.79605663283e09)


def test_warm_reports_a_malformed_start_time_and_finishes(tmp_path: Path) -> None:
    """Fails on main before this: ValueError traceback after the schemas were warmed."""
    reg = _registry(tmp_path, HEAVY[:1])
    state = VllmState(metrics=GOOD_METRICS.replace("1.79605663283e+09", "1.2.3"))
    with vllm_double(state) as url:
        doc, code = run_warm(_settings(url, reg), notify=lambda _m: None)
    notes = doc["servers"][0]["notes"]
    assert len(notes) == 1 and "is not a number ('1.2.3')" in notes[0]
    assert "connection losses only" in notes[0]
    assert doc["results"][0]["status"] == "warmed" and code == 0


def test_ok_is_false_when_the_runs_own_proof_found_a_miss() -> None:
    """Fails on main before this: ok true (exit 0) with a probe miss in the summary."""
    item = response_format_item("s", HEAVY[0])
    run = ServerRun(url="http://h", ready=True, engine="sglang", base_ms={"openai": 5.0})
    run.cells[item.identity] = [Cell(status="warmed", cold_ms=900.0, probe_ms=880.0, proof="miss")]
    doc = document([item], [run], WarmOptions(servers=["http://h"]), 1.0)
    assert doc["summary"]["warmed"] == 1 and doc["summary"]["proof"]["miss"] == 1
    assert doc["ok"] is False and exit_code(doc) == 1
    assert "proof miss" in doc["why_not_ok"][0]


def _log(tmp_path: Path, counts: list[int]) -> Path:
    lines = []
    for schema, n in zip(HEAVY, counts, strict=True):
        rf = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        lines += [json.dumps(body | {"response_format": rf})] * n
    path = tmp_path / "requests.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _xgrammar_cache_growth(keys: list[str]) -> tuple[dict[str, int], int]:
    """What xgrammar's own LRU charges for each key compiled in this order (the growth of
    ``GrammarCompiler.get_cache_size_bytes()`` on a cache-enabled compiler, built as vLLM
    builds it: vllm/v1/structured_output/backend_xgrammar.py, ``cache_enabled=True``), and
    the cache's size at the end."""
    import xgrammar as xgr

    from schemaops.compare.core import make_backend

    info = make_backend("xgrammar", "qwen2.5").info  # type: ignore[attr-defined]
    compiler = xgr.GrammarCompiler(info, max_threads=8, cache_enabled=True, cache_limit_bytes=-1)
    sizes = {}
    for key in keys:
        before = compiler.get_cache_size_bytes()
        compiler.compile_json_schema(key, any_whitespace=True)
        sizes[key] = compiler.get_cache_size_bytes() - before
    return sizes, compiler.get_cache_size_bytes()


def test_a_registry_over_the_cache_is_warned_ordered_reproved_and_not_ok(tmp_path: Path) -> None:
    """Fails on main before this: the footprint was ``memory_size_bytes`` (552,548 bytes a
    schema, 2.1 MiB in all), not what xgrammar's cache counts (3.6 MiB: the first patterned
    schema also fills xgrammar's shared rule-level cache), so a 3 MiB LRU "fit" the registry
    and the earliest warmed was evicted."""
    keys = [json.dumps(s) for s in HEAVY]
    counts = [5, 1, 9, 3]  # --from-log counts: s1 least used, s2 most
    by_count = [keys[i] for i in sorted(range(4), key=lambda i: counts[i])]
    sizes, cache_total = _xgrammar_cache_growth(by_count)  # in send order
    measured = xgrammar_footprint({k: k for k in by_count}, "qwen2.5", 120)
    assert measured.bytes_by_schema == sizes and measured.total_bytes == cache_total
    assert 3 * 2**20 < cache_total  # the registry is over 3 MiB in xgrammar's own unit
    assert sum(sizes[k] for k in by_count[1:]) <= 3 * 2**20  # the last three fit
    state = VllmState(cap_bytes=3 * 2**20, sizes=sizes)
    said: list[str] = []
    log = _log(tmp_path, counts)
    with vllm_double(state) as url:
        settings = _settings(url, tmp_path / "none", from_log=log, cache_mb=3)
        doc, code = run_warm(settings, notify=said.append)
    # measured before sending, and said
    cache = doc["grammar_cache"]
    assert cache["footprint_bytes"] == cache_total
    assert cache["fits"] is False and "VLLM_XGRAMMAR_CACHE_MB=" in cache["fix"]
    assert any(line.startswith("grammar cache:") and "evict" in line for line in said)
    # warmed least used first: the most used are the most recent in the LRU
    first_sends = list(dict.fromkeys(k for k, _ in state.sent if k is not None))
    assert first_sends == by_count
    assert keys[2] in state.cache  # the most used schema is held at the end
    # the re-probe of the earliest warmed found it evicted: not ok, eviction named
    rows = {r["schema"]: r for r in doc["results"]}
    earliest = next(r for r in rows.values() if r["seen"] == 1)
    assert earliest["evicted"] is True and earliest["proof"] == "miss"
    assert "evicted after warming" in earliest["error"]
    assert doc["ok"] is False and code == 1
    assert any("evicted from the grammar cache" in why for why in doc["why_not_ok"])


def test_a_registry_that_fits_is_ok_and_reproved_as_hits(tmp_path: Path) -> None:
    reg = _registry(tmp_path, HEAVY[:2])
    keys = [json.dumps(s) for s in HEAVY[:2]]
    # a 1 s compile and the default thresholds: a hit answers in well under 0.5 s
    state = VllmState(compile_s=1.0, cap_bytes=512 * 2**20, sizes=dict.fromkeys(keys, 600_000))
    with vllm_double(state) as url:
        doc, code = run_warm(_settings(url, reg, ProofPolicy()), notify=lambda _m: None)
    assert doc["grammar_cache"]["fits"] is True
    versions = doc["grammar_cache"]["versions"]  # the double reports vLLM 0.32.0 on /version
    assert versions["engine"]["xgrammar"] == VLLM.pins["xgrammar"]
    assert "/version" in versions["engine"]["source"]
    assert all(r["reprobe_ms"] is not None and not r.get("evicted") for r in doc["results"])
    assert doc["ok"] is True and code == 0, doc.get("why_not_ok")
    assert state.compiles == keys  # each compiled once: warming, probing, re-proving hit


def test_only_json_schemas_are_measured_and_the_rest_is_said_unknown(tmp_path: Path) -> None:
    """A regex grammar from a log is cached by vLLM too, but its size is not measured here:
    the verdict is unknown (None), never fits."""
    from schemaops.warm.cache import capacity
    from schemaops.warm.plan import WarmItem

    items = [
        response_format_item("a", HEAVY[0]),
        WarmItem("r", "openai", "regex", {"structured_outputs": {"regex": "[a-z]+"}}, "[a-z]+"),
    ]
    _send, decision = capacity(items, _settings("http://127.0.0.1:9", tmp_path))
    verdict = decision.cache["xgrammar"]
    assert verdict.footprint is not None and set(verdict.footprint.bytes_by_schema) == {"a"}
    assert verdict.footprint.unknown == {"r": "a regex grammar: not measured"}
    assert verdict.fits is None and "unknown for 1 schema" in verdict.reason


def _tools_settings(url: str, reg: Path, probe: bool) -> WarmSettings:
    settings = _settings(url, reg, ProofPolicy(), tools="named")
    settings.options.probe = probe
    return settings


def test_an_unknown_footprint_on_the_lru_is_unproven_without_a_reprobe(tmp_path: Path) -> None:
    """Fails on main before this: a tools key (the server derives it: its size is unknown)
    on vLLM's LRU with --no-probe was ok, exit 0, with nothing to catch an eviction."""
    reg = _registry(tmp_path, HEAVY[:1])
    state = VllmState(compile_s=1.0, cap_bytes=512 * 2**20)
    with vllm_double(state) as url:
        doc, code = run_warm(_tools_settings(url, reg, probe=False), notify=lambda _m: None)
    cache = doc["grammar_cache"]
    assert cache["fits"] is None and "the server derives this key" in str(cache["footprint"])
    assert "--no-probe" in cache["unproven"] and cache["reprobe"] is None
    assert doc["ok"] is False and code == 1
    assert any(w.startswith("grammar cache unproven:") for w in doc["why_not_ok"])


def test_an_unknown_footprint_is_ok_when_the_reprobe_proves_no_eviction(tmp_path: Path) -> None:
    reg = _registry(tmp_path, HEAVY[:1])
    state = VllmState(compile_s=1.0, cap_bytes=512 * 2**20)
    with vllm_double(state) as url:
        doc, code = run_warm(_tools_settings(url, reg, probe=True), notify=lambda _m: None)
    cache = doc["grammar_cache"]
    assert cache["fits"] is None and "unproven" not in cache
    assert "re-probe hit on every replica" in cache["reprobe"]
    assert doc["ok"] is True and code == 0, doc.get("why_not_ok")


def test_an_unknown_footprint_is_unproven_when_the_earliest_was_evicted(tmp_path: Path) -> None:
    """The same tools key, on an LRU so small that later keys evict it: the re-probe is a
    miss, so nothing is proven (and the eviction itself is reported)."""
    reg = _registry(tmp_path, HEAVY[:2])
    state = VllmState(compile_s=1.0, cap_bytes=1)  # one grammar at a time
    with vllm_double(state) as url:
        doc, code = run_warm(_tools_settings(url, reg, probe=True), notify=lambda _m: None)
    assert doc["grammar_cache"]["fits"] is None and "unproven" in doc["grammar_cache"]
    assert doc["ok"] is False and code == 1
