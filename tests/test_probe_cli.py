"""``schemaops probe`` on faults: bad input, a dead server, a 500, a timeout.

TEST DOUBLES: ``_Faulty`` below is a plain ``http.server`` stand-in, not SGLang. It exists only
for faults a real server cannot produce on demand (every request a 500, an answer that never
comes). Every verdict a real server can give is tested against the real dev server in
tests/integration/test_probe.py.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest
from cli_support import free_port, run_cli
from http_double import QuietJsonHandler


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return run_cli("probe", *args, timeout=timeout, cwd=None)


_free_port = free_port


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--server", "127.0.0.1:30000"], "not an http(s) URL"),
        (["--server", "http://127.0.0.1:99999"], "not a valid URL"),
        (["--server", "http://127.0.0.1:1", "--paths", "nope"], "unknown path"),
    ],
)
def test_bad_input_exits_2_cleanly(args: list[str], needle: str) -> None:
    r = _cli(*args)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr


def test_dead_server_exits_2_fast_without_printing_the_password() -> None:
    url = f"http://admin:hunter2secret@127.0.0.1:{_free_port()}"
    t0 = time.monotonic()
    r = _cli("--server", url, "--json")
    assert time.monotonic() - t0 < 60
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    assert doc["error"] and doc["paths"] == []
    assert "hunter2secret" not in r.stdout + r.stderr
    assert "***@127.0.0.1" in doc["server"]
    assert "Traceback" not in r.stderr


class _Faulty(QuietJsonHandler):
    """TEST DOUBLE: healthy-looking SGLang discovery, then a fault on every generation."""

    mode = "500"
    backend = "xgrammar"

    _json = QuietJsonHandler.send_json

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/server_info":
            self._json(200, {"version": "0.5.23", "grammar_backend": self.backend})
        elif self.path == "/v1/models":
            self._json(200, {"data": [{"id": "m", "owned_by": "sglang"}]})
        else:
            self._json(200, {})

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.mode == "hang":
            time.sleep(5)
        self._json(500, {"error": {"message": "internal boom"}})


@pytest.fixture()
def faulty() -> Iterator[type[_Faulty]]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Faulty)
    srv.daemon_threads = True
    _Faulty.url = f"http://127.0.0.1:{srv.server_address[1]}"  # type: ignore[attr-defined]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield _Faulty
    srv.shutdown()
    srv.server_close()
    _Faulty.mode = "500"
    _Faulty.backend = "xgrammar"


def test_a_500_everywhere_is_error_with_the_servers_message_and_exit_2(
    faulty: type[_Faulty],
) -> None:
    r = _cli("--server", faulty.url, "--paths", "generate.json_schema", "--json")  # type: ignore[attr-defined]
    assert r.returncode == 2, r.stderr  # nothing could be probed
    doc = json.loads(r.stdout)
    (path,) = doc["paths"]
    assert path["verdict"] == "error" and "internal boom" in path["reason"]
    assert "no path could be probed" in doc["error"] and "internal boom" in r.stderr


def test_a_timeout_is_bounded_and_explained(faulty: type[_Faulty]) -> None:
    faulty.mode = "hang"
    t0 = time.monotonic()
    r = _cli(
        "--server",
        faulty.url,  # type: ignore[attr-defined]
        "--paths",
        "generate.regex",
        "--timeout",
        "1",
        "--json",
    )
    assert time.monotonic() - t0 < 30
    assert r.returncode == 2, r.stderr
    (path,) = json.loads(r.stdout)["paths"]
    assert path["verdict"] == "error" and "within 1 s" in path["reason"]


def test_hostile_server_facts_are_printed_escaped(faulty: type[_Faulty]) -> None:
    faulty.backend = "\x1b[2J\x1b]0;pwned\x07xgrammar"
    url = faulty.url  # type: ignore[attr-defined]
    r = _cli("--server", url, "--paths", "generate.json_schema")
    assert "\x1b" not in r.stdout, r.stdout
    r = _cli("--server", url, "--paths", "generate.json_schema", "--json")
    shown = json.loads(r.stdout)["server_facts"]["grammar_backend"]
    assert "\x1b" not in shown and "\x07" not in shown and "\\x1b" in shown
