"""A real API-key gateway on 127.0.0.1 for the ``--api-key`` / ``--header`` tests.

It does what an authenticating reverse proxy in front of SGLang or vLLM does: every request
(readiness checks included) must carry ``Authorization: Bearer KEY`` and each required
header, else HTTP 401 with a JSON error that **echoes what was sent** (the worst case for
secrets: the client must scrub it); an authorised request is forwarded to ``upstream`` (a
real dev server) and its answer returned; without an upstream only ``/ready`` and ``/health``
answer 200, anything else 404.
``seen`` records each request's path and whether it was authorised.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer

import httpx
from http_double import QuietJsonHandler


@dataclass
class Gateway:
    url: str
    seen: list[tuple[str, bool]] = field(default_factory=list)


@contextmanager
def gateway(
    key: str,
    headers: dict[str, str] | None = None,
    upstream: str | None = None,
    open_paths: tuple[str, ...] = (),
) -> Iterator[Gateway]:
    """``open_paths`` need no credentials (vLLM's ``--api-key`` guards only ``/v1``)."""
    required = {"Authorization": f"Bearer {key}", **(headers or {})}
    gw = Gateway("")
    client = httpx.Client(base_url=upstream, timeout=600) if upstream else None

    class Handler(QuietJsonHandler):
        _send = QuietJsonHandler.send_raw

        def _handle(self, method: str) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
            ok = self.path in open_paths or all(
                self.headers.get(k) == v for k, v in required.items()
            )
            gw.seen.append((self.path, ok))
            if not ok:
                sent = {k: self.headers.get(k) for k in required}
                msg = {"error": {"message": f"invalid credentials: got {sent}"}}
                self._send(401, json.dumps(msg).encode())
                return
            if client is None:  # its own readiness answers, then nothing behind it
                ready = self.path in ("/ready", "/health")
                self._send(200 if ready else 404, b"{}" if ready else b'{"detail": "Not Found"}')
                return
            resp = client.request(
                method, self.path, content=body, headers={"Content-Type": "application/json"}
            )
            self._send(resp.status_code, resp.content, resp.headers.get("content-type", ""))

        def do_GET(self) -> None:  # noqa: N802
            self._handle("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._handle("POST")

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    gw.url = f"http://127.0.0.1:{srv.server_address[1]}"
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield gw
    finally:
        srv.shutdown()
        srv.server_close()
        if client is not None:
            client.close()
