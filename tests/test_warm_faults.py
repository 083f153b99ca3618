"""Faults a real SGLang server cannot produce on demand: 5xx storms, garbage and endless
bodies, a byte a second, a hostile ``/server_info``, hostile text and echoed credentials.

TEST DOUBLES: this module's servers are stand-ins written for these tests (plain
``http.server`` on 127.0.0.1), not SGLang. They exist only because a real server cannot be
made to misbehave in these ways on demand. Everything a real server can do (200, 400
verdicts, restarts, flush) is tested against the real dev server in
``tests/integration/test_warm_*.py``.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_support import run_cli
from http_double import QuietJsonHandler

from schemaops.http.retry import RetryPolicy
from schemaops.warm import WarmOptions, report, warm
from schemaops.warm.plan import native_item, response_format_item

REPO = Path(__file__).resolve().parents[1]


class _Storm(QuietJsonHandler):
    """/health 200; /generate answers 503 for the first ``fail_first`` requests, then 200."""

    fail_first = 0
    calls: list[str] = []

    _send = QuietJsonHandler.send_json

    def do_GET(self) -> None:  # noqa: N802
        if self.path in ("/health", "/server_info"):  # /server_info: it stands in for SGLang
            self._send(200, {"version": "0.5.23"} if self.path == "/server_info" else {})
        else:
            self._send(404, {"detail": "Not Found"})

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).calls.append(self.path)
        if len(type(self).calls) <= type(self).fail_first:
            self._send(503, {"error": {"message": "storm"}})
        else:
            self._send(200, {"text": "x", "meta_info": {}})


@contextmanager
def _serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[None]:
    """Serve ``handler`` on 127.0.0.1 in a thread; its ``url`` is set while it runs."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    handler.url = f"http://127.0.0.1:{srv.server_address[1]}"  # type: ignore[attr-defined]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture()
def storm() -> Iterator[type[_Storm]]:
    handler = type("Storm", (_Storm,), {"calls": [], "fail_first": 0})
    with _serving(handler):
        yield handler


def _opts(url: str, retries: int) -> WarmOptions:
    policy = RetryPolicy(retries=retries, base_s=0.01, cap_s=0.05)
    return WarmOptions(servers=[url], policy=policy, probe=False, baseline_samples=0)


def test_5xx_storm_is_ridden_out_with_retries(storm: type[_Storm]) -> None:
    storm.fail_first = 3
    items = [native_item("s", "json", '{"type":"object"}')]
    opts = _opts(storm.url, retries=4)
    runs, wall = warm(items, opts)
    doc = report.document(items, runs, opts, wall)
    row = doc["results"][0]
    assert row["status"] == "warmed" and row["attempts"] == 4
    assert report.exit_code(doc) == 0


def test_endless_5xx_fails_within_the_retry_bound(storm: type[_Storm]) -> None:
    storm.fail_first = 10**6
    items = [native_item("s", "json", '{"type":"object"}')]
    opts = _opts(storm.url, retries=2)
    t0 = time.monotonic()
    runs, wall = warm(items, opts)
    assert time.monotonic() - t0 < 5
    doc = report.document(items, runs, opts, wall)
    row = doc["results"][0]
    assert row["status"] == "failed" and row["attempts"] == 3
    assert "HTTP 503: storm" in row["error"]
    assert report.exit_code(doc) == 1


# --- A configurable broken server ---------------------------------------------------------


class _Broken(QuietJsonHandler):
    """TEST DOUBLE: a server that misbehaves on purpose (``routes``: path -> behaviour).

    Each fault here (garbage or endless bodies, a byte a second, a hostile ``dp_size``, an
    echoed password, a lone surrogate in a message, a chat path 60x slower than /generate,
    a grammar cache flushed between warm and probe with compiles sharing the CPU) is one a
    real SGLang server cannot be made to produce on demand. Unrouted paths answer like a
    healthy SGLang: ``/ready`` 200, ``/server_info`` with version and backend, a 1-token
    ``/generate`` and chat completion.
    """

    protocol_version = "HTTP/1.1"
    routes: dict[str, Callable[[_Broken], None]] = {}
    auth: list[str | None] = []
    hits: dict[str, int] = {}

    def _route(self) -> None:
        path = self.path.split("?")[0]
        if self.command == "POST":
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
        cls = type(self)
        cls.auth.append(self.headers.get("Authorization"))
        cls.hits[path] = cls.hits.get(path, 0) + 1
        if path in cls.routes:
            cls.routes[path](self)
        elif path == "/ready":
            self.send_json(200, {})
        elif path == "/server_info":
            self.send_json(200, {"version": "0.5.23", "grammar_backend": "xgrammar"})
        elif path == "/generate":
            self.send_json(200, GOOD_GENERATE)
        elif path == "/v1/chat/completions":
            self.send_json(200, GOOD_CHAT)
        elif path == "/v1/models":
            self.send_json(200, {"data": [{"id": "m"}]})
        else:
            self.send_json(404, {"detail": "Not Found"})

    do_GET = do_POST = _route  # noqa: N815


GOOD_GENERATE = {"text": "{", "meta_info": {"finish_reason": {"type": "length", "length": 1}}}
GOOD_CHAT = {"choices": [{"index": 0, "message": {"content": "{"}, "finish_reason": "length"}]}


@pytest.fixture()
def broken() -> Iterator[type[_Broken]]:
    handler = type("Broken", (_Broken,), {"routes": {}, "auth": [], "hits": {}})
    with _serving(handler):
        yield handler


def _run(url: str, items: list | None = None, **kw: Any) -> dict[str, Any]:
    items = items or [native_item("s", "json", '{"type":"object"}')]
    kw.setdefault("policy", RetryPolicy(retries=1, base_s=0.01, cap_s=0.02))
    opts = WarmOptions(servers=[url], **kw)
    runs, wall = warm(items, opts)
    return report.document(items, runs, opts, wall)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, timeout=120, cwd=REPO)


def _one_schema_registry(tmp_path: Path) -> Path:
    reg = tmp_path / "reg"
    reg.mkdir()
    (reg / "orders.json").write_text(json.dumps({"type": "object"}))
    return reg


@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>OK</body></html>",
        b"{}",
        b'{"text": "x"}',
        json.dumps({"text": "", "meta_info": {"finish_reason": {"type": "abort"}}}).encode(),
    ],
)
def test_a_2xx_without_a_generate_answer_is_not_warmed(broken: type[_Broken], body: bytes) -> None:
    broken.routes["/generate"] = lambda h: h.send_raw(200, body)
    doc = _run(broken.url)
    row = doc["results"][0]
    assert row["status"] == "failed" and row["proof"] is None, row
    assert row["error"].startswith("HTTP 200 but") and row["attempts"] == 1
    assert report.exit_code(doc) == report.exit_code(doc, require_proof=True) == 1


def test_a_2xx_without_a_chat_completion_is_not_warmed(broken: type[_Broken]) -> None:
    broken.routes["/v1/chat/completions"] = lambda h: h.send_json(200, {"id": "chatcmpl"})
    doc = _run(broken.url, [response_format_item("s", {"type": "object"})], api="openai")
    row = doc["results"][0]
    assert row["status"] == "failed" and "not a chat completion" in row["error"], row


def _trickle(h: _Broken, parts: list[bytes], length: int | None, pause_s: float) -> None:
    """A 200 sent in ``parts``, ``pause_s`` apart, until the client hangs up."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    if length is None:
        h.close_connection = True
    else:
        h.send_header("Content-Length", str(length))
    h.end_headers()
    try:
        for part in parts:
            h.wfile.write(part)
            h.wfile.flush()
            time.sleep(pause_s)
    except OSError:
        pass


@pytest.mark.timeout(60)
def test_an_endless_body_is_cut_off(broken: type[_Broken]) -> None:
    chunk = b'{"text": "' + b"x" * 65536
    # no Content-Length: the body ends when the connection does; it stops at 64 MiB so that
    # a client without a cap still ends (the old one did, calling it warmed)
    broken.routes["/generate"] = lambda h: _trickle(h, [chunk] * 1024, None, 0.0)
    t0 = time.monotonic()
    doc = _run(broken.url, probe=False, baseline_samples=0)
    row = doc["results"][0]
    assert row["status"] == "failed" and "over 8 MiB" in row["error"], row
    assert time.monotonic() - t0 < 20


@pytest.mark.timeout(60)
def test_timeout_is_a_deadline_for_the_whole_request(broken: type[_Broken]) -> None:
    data = json.dumps(GOOD_GENERATE).encode()
    byte_by_byte = [data[i : i + 1] for i in range(len(data))]
    # a byte every 0.3 s: no single read ever waits 1 s
    broken.routes["/generate"] = lambda h: _trickle(h, byte_by_byte, len(data), 0.3)
    t0 = time.monotonic()
    doc = _run(broken.url, probe=False, baseline_samples=0, timeout_s=1.0)
    assert time.monotonic() - t0 < 6
    row = doc["results"][0]
    assert row["status"] == "timeout" and "within 1 s" in row["error"], row


@pytest.mark.timeout(60)
def test_server_info_honours_the_timeout(broken: type[_Broken]) -> None:
    def stuck(h: _Broken) -> None:
        time.sleep(6)
        h.send_json(200, {})

    broken.routes["/server_info"] = stuck
    t0 = time.monotonic()
    doc = _run(broken.url, probe=False, baseline_samples=0, timeout_s=1.0)
    assert time.monotonic() - t0 < 5
    assert doc["results"][0]["status"] == "warmed"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("dp_size", [100000, 0, -1, "two", 1.5, True, [2], {"n": 2}])
def test_an_unusable_dp_size_fails_the_server_with_a_reason(
    broken: type[_Broken], dp_size: object
) -> None:
    broken.routes["/server_info"] = lambda h: h.send_json(200, {"dp_size": dp_size})
    doc = _run(broken.url)
    err = doc["servers"][0]["error"]
    assert "dp_size" in err and "--dp" in err, err
    assert [r["status"] for r in doc["results"]] == ["failed"]
    assert broken.hits.get("/generate", 0) == 0  # not one request sent on a guess


def test_dp_flag_overrides_an_unusable_dp_size(broken: type[_Broken]) -> None:
    broken.routes["/server_info"] = lambda h: h.send_json(200, {"dp_size": 100000})
    doc = _run(broken.url, dp=2, probe=False)
    assert doc["servers"][0]["dp_size"] == 2 and doc["results"][0]["status"] == "warmed"


@pytest.mark.parametrize("info", [[1, 2], "SGLang", None, 7])
def test_a_server_info_that_is_not_an_object_is_no_information(
    broken: type[_Broken], info: object
) -> None:
    broken.routes["/server_info"] = lambda h: h.send_json(200, info)
    doc = _run(broken.url, probe=False)
    assert doc["servers"][0]["version"] is None and doc["servers"][0]["dp_size"] == 1
    assert doc["results"][0]["status"] == "warmed"


@pytest.mark.parametrize("models", [{"data": "m"}, [], {"data": [1]}, {"data": [{"id": 5}]}, "x"])
def test_an_odd_models_list_leaves_the_model_unset(broken: type[_Broken], models: object) -> None:
    broken.routes["/v1/models"] = lambda h: h.send_json(200, models)
    items = [response_format_item("s", {"type": "object"})]
    doc = _run(broken.url, items, api="openai", probe=False)
    assert doc["results"][0]["status"] == "warmed"


def test_rows_after_the_breaker_tripped_say_they_were_not_sent(broken: type[_Broken]) -> None:
    def hang_up(h: _Broken) -> None:
        h.close_connection = True  # no answer at all: the client sees a dropped connection

    broken.routes["/generate"] = hang_up
    items = [native_item(f"s{i}", "json", f'{{"title":"{i}"}}') for i in range(3)]
    doc = _run(broken.url, items, concurrency=1, probe=False, baseline_samples=0)
    errors = [r["error"] for r in doc["results"]]
    assert all("after 0 attempt" not in e for e in errors), errors
    assert all("(gave up after 2 attempt(s))" in e for e in errors), errors
    assert all(e.startswith("not sent: server unreachable") for e in errors[1:]), errors
    assert sum(r["attempts"] for r in doc["results"]) == 2  # one retry budget in all


def test_each_api_is_judged_against_its_own_baseline(broken: type[_Broken]) -> None:
    """Chat answers take 300 ms with or without a grammar, /generate 0 ms: nothing compiles,
    so there is nothing to prove, and a chat item must not be called a miss."""

    def slow_chat(h: _Broken) -> None:
        time.sleep(0.3)
        h.send_json(200, GOOD_CHAT)

    broken.routes["/v1/chat/completions"] = slow_chat
    items = [response_format_item("s", {"type": "object"})]
    doc = _run(broken.url, items, api="native")  # as with --from-log items of the chat API
    assert doc["results"][0]["proof"] == "unproven", doc["results"][0]
    assert doc["servers"][0]["baseline_ms_by_api"]["openai"] >= 250


class _SharedCompiles(_Broken):
    """TEST DOUBLE: a grammar cache whose compiles share one CPU fairly (processor sharing)
    or, with ``serial``, run one at a time, and ``/flush_cache``: a real server cannot be
    made to flush at an exact moment of a run, or to schedule its compiles either way, on
    demand in a unit test (``tests/integration/test_warm_server.py`` flushes a real one)."""

    work_s = 0.25
    serial = False
    cache: set[str] = set()
    compiling = 0
    lock = threading.Lock()
    one_at_a_time = threading.Lock()

    def _route(self) -> None:
        if self.path == "/flush_cache":
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            type(self).cache.clear()
            return self.send_json(200, {})
        if self.path != "/generate":
            return super()._route()
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        key = body["sampling_params"].get("json_schema")
        cls = type(self)
        if key is not None and key not in cls.cache and cls.serial:
            with cls.one_at_a_time:
                time.sleep(cls.work_s)
                cls.cache.add(key)
        elif key is not None and key not in cls.cache:
            with cls.lock:
                cls.compiling += 1
            left = cls.work_s
            while left > 0:  # progress at 1/k of the CPU while k compiles run
                time.sleep(0.005)
                left -= 0.005 / max(1, cls.compiling)
            with cls.lock:
                cls.compiling -= 1
                cls.cache.add(key)
        self.send_json(200, GOOD_GENERATE)

    do_GET = do_POST = _route  # noqa: N815


@pytest.fixture()
def shared_compiles() -> Iterator[type[_SharedCompiles]]:
    handler = type(
        "Shared",
        (_SharedCompiles,),
        {
            "cache": set(),
            "compiling": 0,
            "lock": threading.Lock(),
            "one_at_a_time": threading.Lock(),
        },
    )
    with _serving(handler):
        yield handler


@pytest.mark.timeout(120)
@pytest.mark.parametrize("serial", [False, True])
@pytest.mark.parametrize("flush", [False, True])
def test_a_cold_shared_with_concurrent_compiles_cannot_prove_a_recompile(
    shared_compiles: type[_SharedCompiles], flush: bool, serial: bool
) -> None:
    """Four compiles at once take 4x as long each (side by side), or 1x-4x (one after
    another); after a flush the probes, sent alone, each compile again in 1x. A probe that
    compiled must never read as a hit."""
    shared_compiles.serial = serial
    n = 4
    items = [native_item(f"s{i}", "json", f'{{"title":"s{i}"}}') for i in range(n)]
    opts = WarmOptions(servers=[shared_compiles.url], concurrency=n)
    done = {"n": 0}

    def progress(event: str, amount: int) -> None:
        if event == "advance":
            done["n"] += amount
            if flush and done["n"] == n:  # every warm request answered, no probe sent yet
                httpx.post(shared_compiles.url + "/flush_cache", timeout=10)

    runs, wall = warm(items, opts, progress)
    doc = report.document(items, runs, opts, wall)
    proofs = [r["proof"] for r in doc["results"]]
    if flush:
        assert "hit" not in proofs, doc["results"]
        assert proofs.count("miss") >= n // 2, doc["results"]
    elif serial:  # the first compiles got a small share of their wait: unproven, not wrong
        assert set(proofs) <= {"hit", "unproven"} and proofs.count("hit") >= n // 2, proofs
    else:
        assert proofs == ["hit"] * n, doc["results"]
    cold = [r["cold_ms"] for r in doc["results"]]
    share = [r["cold_share_ms"] for r in doc["results"]]
    assert all(s <= c / 3 for s, c in zip(share, cold, strict=True)), (cold, share)


# --- Terminal and JSON output of hostile text, and credentials ----------------------------


def test_markup_in_server_text_is_printed_not_interpreted(
    broken: type[_Broken], tmp_path: Path
) -> None:
    msg = {"error": {"message": "pattern [/v2/orders] [bold]rejected[/bold]"}}
    broken.routes["/generate"] = lambda h: h.send_json(400, msg)
    broken.routes["/server_info"] = lambda h: h.send_json(200, {"version": "[/]", "dp_size": 1})
    r = _cli("warm", "--server", broken.url, "-r", str(_one_schema_registry(tmp_path)))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    out = " ".join(r.stdout.split())
    assert "[/v2/orders]" in out and "[bold]rejected[/bold]" in out and "SGLang [/]" in out


def test_lone_surrogates_from_the_server_keep_json_valid(
    broken: type[_Broken], tmp_path: Path
) -> None:
    raw = b'{"error": {"message": "bad \\ud800 pattern"}}'  # valid JSON, unencodable text
    broken.routes["/generate"] = lambda h: h.send_raw(400, raw)
    broken.routes["/server_info"] = lambda h: h.send_raw(200, b'{"version": "\\udfff"}')
    reg = _one_schema_registry(tmp_path)
    r = _cli("warm", "--server", broken.url, "-r", str(reg), "--json")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    assert doc["results"][0]["error"] == "HTTP 400: bad \\ud800 pattern"
    r = _cli("warm", "--server", broken.url, "-r", str(reg))
    assert r.returncode == 1 and "Traceback" not in r.stderr and "bad \\ud800" in r.stdout


def test_credentials_in_the_server_url_are_used_but_never_printed(
    broken: type[_Broken], tmp_path: Path
) -> None:
    secret = "s3cretPW"
    url = broken.url.replace("http://", f"http://warmer:{secret}@")

    def echo(h: _Broken) -> None:  # a server that quotes the request it got
        h.send_json(400, {"error": {"message": f"cannot compile for {url}/generate"}})

    broken.routes["/generate"] = echo
    reg = _one_schema_registry(tmp_path)
    for extra in ([], ["--json"]):
        r = _cli("warm", "--server", url, "-r", str(reg), *extra)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
        assert secret not in r.stdout + r.stderr
        assert "***@127.0.0.1" in r.stdout
    assert "Basic " + base64.b64encode(f"warmer:{secret}".encode()).decode() in broken.auth
    dead = f"http://warmer:{secret}@127.0.0.1:{_free_port()}"
    for extra in ([], ["--json"]):
        r = _cli("warm", "--server", dead, "-r", str(reg), "--retries", "0", *extra)
        assert r.returncode == 1 and secret not in r.stdout + r.stderr
        assert "***@127.0.0.1" in r.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
