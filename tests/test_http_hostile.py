"""Hostile server bodies stay bounded in ``warm`` and ``probe`` (issue 22 #12): JSON nested
100,000 deep on every path either command reads, and a malformed ``/metrics`` start time.

TEST DOUBLE: ``_Hostile`` is a plain ``http.server`` stand-in that answers like SGLang 0.5.23
(or, with ``vllm``, like vLLM 0.32: no ``/server_info``, ``owned_by: vllm``, ``/metrics``),
except on the routes a test overrides. No real server sends a 100,000-deep JSON body or a start
time of ``1.2.3`` on demand; these bodies are what a broken proxy or a hostile endpoint can.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from cli_support import run_cli
from http_double import QuietJsonHandler

DEEP = b"[" * 100_000 + b"]" * 100_000  # valid JSON, 100,000 levels
GENERATE = {"text": "{", "meta_info": {"finish_reason": {"type": "length", "length": 1}}}
CHAT = {"choices": [{"index": 0, "message": {"content": "{"}, "finish_reason": "length"}]}
METRICS = (
    "# TYPE vllm:num_requests_running gauge\n"
    'vllm:num_requests_running{engine="0",model_name="m"} 0.0\n'
    "process_start_time_seconds {start}\n"
)


class _Hostile(QuietJsonHandler):
    """Healthy answers unless ``routes`` maps the path to a raw body (status 200)."""

    routes: dict[str, bytes] = {}
    vllm = False
    start = "1700000000.5"

    def _route(self) -> None:
        if self.command == "POST":
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?")[0]
        if path in self.routes:
            self.send_raw(200, self.routes[path])
        elif path in ("/ready", "/health"):
            self.send_json(200, {})
        elif path == "/server_info" and not self.vllm:
            self.send_json(200, {"version": "0.5.23", "grammar_backend": "xgrammar"})
        elif path == "/v1/models":
            owner = "vllm" if self.vllm else "sglang"
            self.send_json(200, {"data": [{"id": "m", "owned_by": owner}]})
        elif path == "/version" and self.vllm:
            self.send_json(200, {"version": "0.32.0"})
        elif path == "/metrics" and self.vllm:
            self.send_raw(200, METRICS.format(start=self.start).encode(), "text/plain")
        elif path == "/generate" and not self.vllm:
            self.send_json(200, GENERATE)
        elif path == "/v1/chat/completions":
            self.send_json(200, CHAT)
        else:
            self.send_json(404, {"detail": "Not Found"})

    do_GET = do_POST = _route  # noqa: N815


@pytest.fixture()
def hostile() -> Iterator[type[_Hostile]]:
    handler = type("Hostile", (_Hostile,), {"routes": {}})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    handler.url = f"http://127.0.0.1:{srv.server_address[1]}"  # type: ignore[attr-defined]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield handler
    srv.shutdown()
    srv.server_close()


def _registry(tmp_path: Path) -> Path:
    reg = tmp_path / "reg"
    reg.mkdir()
    (reg / "orders.json").write_text(json.dumps({"type": "object"}))
    return reg


def _json_run(*args: str) -> tuple[dict, int]:
    r = run_cli(*args, "--json", cwd=None)
    assert "Traceback" not in r.stderr and "RecursionError" not in r.stderr, r.stderr[-3000:]
    return json.loads(r.stdout), r.returncode


WARM = ["--retries", "0", "--timeout", "20"]


@pytest.mark.parametrize(
    ("api", "deep_path"),
    [("native", "/generate"), ("openai", "/v1/chat/completions")],
)
def test_warm_reports_a_deep_answer_as_failed(
    hostile: type[_Hostile], tmp_path: Path, api: str, deep_path: str
) -> None:
    """The old client caught ValueError only: RecursionError, a traceback, no report."""
    hostile.routes = {deep_path: b'{"text": "x", "meta_info": ' + DEEP + b"}"}
    if deep_path != "/generate":
        hostile.routes = {deep_path: b'{"choices": ' + DEEP + b"}"}
    url = hostile.url  # type: ignore[attr-defined]
    doc, code = _json_run(
        "warm", "--server", url, "-r", str(_registry(tmp_path)), "--api", api, *WARM
    )
    assert code == 1
    (row,) = doc["results"]
    assert row["status"] == "failed" and "nested deeper than 128 levels" in row["error"], row


@pytest.mark.parametrize("info_path", ["/server_info", "/v1/models"])
def test_warm_takes_a_deep_info_answer_as_no_information(
    hostile: type[_Hostile], tmp_path: Path, info_path: str
) -> None:
    hostile.routes = {info_path: DEEP}
    url = hostile.url  # type: ignore[attr-defined]
    api = ["--api", "openai"] if info_path == "/v1/models" else []  # it reads the model name
    doc, code = _json_run("warm", "--server", url, "-r", str(_registry(tmp_path)), *api, *WARM)
    assert code in (0, 1) and doc["results"], doc


def test_probe_reports_deep_answers_as_errors(hostile: type[_Hostile]) -> None:
    hostile.routes = {"/server_info": DEEP, "/generate": DEEP}
    url = hostile.url  # type: ignore[attr-defined]
    doc, code = _json_run("probe", "--server", url, "--paths", "generate.json_schema")
    # /server_info said nothing: an OpenAI-compatible server, whose /generate answered garbage
    (path,) = doc["paths"]
    assert path["verdict"] == "error" and "nested deeper than 128 levels" in path["reason"]
    assert code == 2


def test_probe_judges_a_deep_chat_answer(hostile: type[_Hostile]) -> None:
    """A 200 chat body nested deeper than any answer: error, with the reason."""
    hostile.routes = {"/v1/chat/completions": b'{"choices": ' + DEEP + b"}"}
    url = hostile.url  # type: ignore[attr-defined]
    doc, _ = _json_run("probe", "--server", url, "--paths", "response_format.json_schema")
    (path,) = doc["paths"]
    assert path["verdict"] == "error" and "nested deeper" in path["reason"]


@pytest.mark.parametrize("start", ["1.2.3", "1e5e5", "+"])
def test_warm_on_vllm_survives_a_malformed_start_time(
    hostile: type[_Hostile], tmp_path: Path, start: str
) -> None:
    """``process_start_time_seconds 1.2.3`` matched the start-time pattern and made
    ``float()`` raise after the schemas were warmed: a ValueError traceback and no report.
    Now it is no start time (the restart check has nothing to compare) and the run reports."""
    hostile.vllm, hostile.start = True, start
    hostile.routes = {"/version": DEEP}  # a /metrics neighbour, too deep: no version
    url = hostile.url  # type: ignore[attr-defined]
    doc, code = _json_run("warm", "--server", url, "-r", str(_registry(tmp_path)), *WARM)
    assert doc["engine"] == "vllm" and doc["results"], doc
    assert code in (0, 1)
