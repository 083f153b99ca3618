"""Faults a real SGLang server cannot produce on demand: a storm of 5xx answers.

TEST DOUBLE: this module's server is a stand-in written for these tests (a plain
``http.server`` on 127.0.0.1), not SGLang. It exists only because a real server cannot be
made to answer 503 for exactly N requests and then recover. Everything a real server can do
(200, 400 verdicts, restarts, flush) is tested against the real dev server in
``tests/integration/test_warm_*.py``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from schemaops.warm import WarmOptions, report, warm
from schemaops.warm.plan import native_item
from schemaops.warm.retry import RetryPolicy


class _Storm(BaseHTTPRequestHandler):
    """/health 200; /generate answers 503 for the first ``fail_first`` requests, then 200."""

    fail_first = 0
    calls: list[str] = []

    def log_message(self, *args: object) -> None:  # keep pytest output clean
        pass

    def _send(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        self._send(200, {}) if self.path == "/health" else self._send(404, {"detail": "Not Found"})

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).calls.append(self.path)
        if len(type(self).calls) <= type(self).fail_first:
            self._send(503, {"error": {"message": "storm"}})
        else:
            self._send(200, {"text": "x", "meta_info": {}})


@pytest.fixture()
def storm() -> Iterator[type[_Storm]]:
    handler = type("Storm", (_Storm,), {"calls": [], "fail_first": 0})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    handler.url = f"http://127.0.0.1:{srv.server_address[1]}"
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield handler
    srv.shutdown()
    srv.server_close()


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
