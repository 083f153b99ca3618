"""The base of the tests' HTTP TEST DOUBLES (servers that produce, on demand, faults a real
server cannot: a 503 storm, a 500 on every generation, an auth gateway): no access log in
pytest's output, and JSON (or raw) answers with their length. One copy for every double."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler


class QuietJsonHandler(BaseHTTPRequestHandler):
    """``send_json``/``send_raw`` answers; ``log_message`` silenced."""

    def log_message(self, *args: object) -> None:  # keep pytest output clean
        pass

    def send_json(self, code: int, body: object) -> None:
        self.send_raw(code, json.dumps(body).encode())

    def send_raw(self, code: int, data: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
