"""``schemaops warm`` for vLLM without a vLLM server: the plan's cache keys, the latch
pre-check (real xgrammar/llguidance/outlines_core through ``engines.vllm``), what
``/metrics`` says, a dead server and a server that is neither engine.

The live half (a real vLLM 0.32 dev server) is tests/integration/test_vllm_warm.py.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cli_support import run_cli

from schemaops.engines.vllm import metrics_ranks, metrics_start
from schemaops.errors import InputError
from schemaops.registry import load_registry
from schemaops.warm import WarmOptions, plan_from_registry
from schemaops.warm.latch import line, order, precheck
from schemaops.warm.plan import response_format_item, structured_outputs_item
from schemaops.warm.run import WarmSettings, check

REPO = Path(__file__).resolve().parents[1]
PLAIN = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
UNIQUE = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
PATTERN = {
    "type": "object",
    "properties": {"b": {"type": "string"}},
    "patternProperties": {"^x": {"type": "integer"}},
}


def test_object_shares_the_response_format_key_a_string_has_its_bytes() -> None:
    reg = load_registry(REPO / "schemas")
    rf = plan_from_registry(reg, "openai")
    so = plan_from_registry(reg, "openai", schema_field="structured_outputs")
    ss = plan_from_registry(reg, "openai", schema_field="structured_outputs_string")
    by = {s.name: s for s in reg}
    for a, b, c in zip(rf, so, ss, strict=True):
        assert a.key == b.key == json.dumps(by[a.name].bundled())  # vLLM: json.dumps(dict)
        assert a.identity == b.identity  # one cache entry: warmed once
        assert c.fragment == {"structured_outputs": {"json": by[a.name].wire("native")}}
        assert c.key == by[a.name].wire("native") != a.key  # exact bytes: another entry


def test_a_reordered_string_is_another_key() -> None:
    obj = structured_outputs_item("s", {"b": 1, "a": 2})
    same = structured_outputs_item("s", None, as_string=json.dumps({"b": 1, "a": 2}))
    other = structured_outputs_item("s", None, as_string=json.dumps({"a": 2, "b": 1}))
    assert obj.identity == same.identity != other.identity


def test_precheck_names_what_auto_routes_away_from_xgrammar_before_sending() -> None:
    items = [
        response_format_item("unique", UNIQUE),
        response_format_item("pattern", PATTERN),
        response_format_item("plain", PLAIN),
    ]
    notes = {n["schema"]: n for n in precheck(items, "auto")}
    assert set(notes) == {"unique", "pattern"}
    assert notes["pattern"]["routes_to"] == "outlines" and not notes["pattern"]["rejected"]
    assert "compiles it with xgrammar anyway" in notes["pattern"]["latched"]
    assert "patternProperties together with properties is NOT enforced" in line(notes["pattern"])
    assert notes["unique"]["rejected"] and "HTTP 400" in notes["unique"]["latched"]
    # the latch is chosen: what xgrammar serves goes first
    assert [it.name for it in order(items, "auto")] == ["plain", "unique", "pattern"]


def test_precheck_under_a_fixed_backend_lists_its_refusals_only() -> None:
    items = [response_format_item("unique", UNIQUE), response_format_item("plain", PLAIN)]
    notes = precheck(items, "xgrammar")
    assert [n["schema"] for n in notes] == ["unique"]
    assert notes[0]["latched"].startswith("HTTP 400 from xgrammar")
    assert [it.name for it in order(items, "xgrammar")] == ["unique", "plain"]  # no latch
    assert precheck(items[1:], "guidance") == []


METRICS = """\
# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.79605663283e+09
vllm:num_requests_running{engine="0",model_name="default"} 0.0
vllm:num_requests_running{engine="1",model_name="default"} 0.0
vllm:kv_cache_usage_perc{engine="1",model_name="default"} 0.0
"""


def test_metrics_give_the_dp_ranks_and_the_start_time() -> None:
    assert metrics_ranks(METRICS) == 2
    assert metrics_ranks("process_start_time_seconds 1\n") is None
    assert metrics_start(METRICS) == pytest.approx(1.79605663283e09)
    assert metrics_start("") is None


def _settings(**kw: object) -> WarmSettings:
    opts = WarmOptions(servers=["http://127.0.0.1:1"], engine=kw.pop("engine", "auto"))  # type: ignore[arg-type]
    return WarmSettings(options=opts, registry=REPO / "schemas", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"engine": "tgi"}, "unknown engine"),
        ({"engine": "sglang", "schema_field": "structured_outputs"}, "vLLM's"),
        ({"schema_field": "structured_outputs", "tools": "named", "api_auto": True}, "--tools"),
        ({"vllm_backend": "lmfe"}, "unknown vLLM backend"),
    ],
)
def test_contradictory_settings_are_usage_errors(kw: dict, says: str) -> None:
    with pytest.raises(InputError, match=says):
        check(_settings(**kw))


def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli("warm", "--no-progress", *args, timeout=120, cwd=REPO)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("engine", ["auto", "vllm"])
def test_a_dead_server_is_a_bounded_explained_failure(engine: str) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    t0 = time.monotonic()
    res = _cli("-s", url, "--engine", engine, "--json", "--retries", "1", "--backoff", "0.05")
    assert time.monotonic() - t0 < 60
    assert res.returncode == 1, res.stderr
    doc = json.loads(res.stdout)
    assert doc["servers"][0]["ready"] is False
    assert "not reachable or not ready" in doc["servers"][0]["error"]
    assert "Traceback" not in res.stderr


def test_an_unknown_engine_is_exit_2() -> None:
    res = _cli("-s", "http://127.0.0.1:1", "--engine", "tgi")
    assert res.returncode == 2 and "tgi" in res.stderr


@pytest.fixture()
def static_server(tmp_path: Path) -> Iterator[str]:
    """A real HTTP server that is neither SGLang nor vLLM: Python's static file server,
    ready (/health is a file) but with no /server_info and no /v1/models."""
    (tmp_path / "health").write_text("ok")
    handler = partial(SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.parametrize("engine", ["auto", "vllm"])
def test_a_server_that_is_neither_engine_is_exit_2(static_server: str, engine: str) -> None:
    res = _cli("-s", static_server, "--engine", engine)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert ("neither SGLang" if engine == "auto" else "does not answer like vLLM") in res.stderr
    assert "Traceback" not in res.stderr


def test_registry_export_gives_each_paths_key_as_warm_sends_it() -> None:
    from schemaops.strings import sha256_hex

    res = subprocess.run(
        [sys.executable, "-m", "schemaops", "registry", "export", "get_order", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    keys = json.loads(res.stdout)["key_sha256_by_path"]
    reg = load_registry(REPO / "schemas")
    plans = {
        "response_format": plan_from_registry(reg, "openai"),
        "vllm:structured_outputs.json object": plan_from_registry(
            reg, "openai", schema_field="structured_outputs"
        ),
        "vllm:structured_outputs.json string (native wire sent)": plan_from_registry(
            reg, "openai", schema_field="structured_outputs_string"
        ),
        "sglang:/generate json_schema": plan_from_registry(reg, "native"),
    }
    assert set(keys) == set(plans)
    for path, items in plans.items():
        (item,) = [it for it in items if it.name == "get_order"]
        assert keys[path] == sha256_hex(item.key), path
