"""A vLLM-like HTTP TEST DOUBLE for ``warm``: faults a real vLLM server cannot produce on demand.

It answers like vLLM 0.32 where warm looks (``/server_info`` 404, ``/v1/models`` owned_by
vllm, ``/version``, ``/health``, chat completions) and lets a test choose what a real
server would need minutes and gigabytes for, or cannot do at all: a ``/metrics`` that is
missing (a gateway exposing only ``/v1``) or malformed, and a grammar cache that is an LRU
capped in bytes (vLLM's ``VLLM_XGRAMMAR_CACHE_MB``) over schemas whose sizes the test sets
(the real xgrammar footprints, measured by the test). A compile costs ``compile_s`` of
sleep; a cached key answers at once. It records every chat request in order.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

from http_double import QuietJsonHandler

GOOD_METRICS = (
    "process_start_time_seconds 1.79605663283e+09\n"
    'vllm:num_requests_running{engine="0",model_name="m"} 0.0\n'
)


@dataclass
class VllmState:
    """What the double serves and what it saw."""

    metrics: str | None = GOOD_METRICS  # None: /metrics is 404 (a gateway)
    compile_s: float = 0.4
    cap_bytes: int | None = None  # None: unbounded
    sizes: dict[str, int] = field(default_factory=dict)  # key -> bytes (default 1)
    cache: OrderedDict[str, int] = field(default_factory=OrderedDict)
    sent: list[tuple[str | None, str | None]] = field(default_factory=list)  # (key, rank)
    compiles: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def lookup(self, key: str) -> bool:
        """True on a hit; on a miss: compile (sleep), insert, evict the least recent past
        the cap. The LRU is xgrammar's, as vLLM builds it (cache_limit_bytes)."""
        with self.lock:
            if key in self.cache:
                self.cache.move_to_end(key)
                return True
        time.sleep(self.compile_s)
        with self.lock:
            self.compiles.append(key)
            self.cache[key] = self.sizes.get(key, 1)
            while self.cap_bytes is not None and sum(self.cache.values()) > self.cap_bytes:
                if len(self.cache) == 1:
                    break
                self.cache.popitem(last=False)
        return False


def _handler(state: VllmState) -> type[QuietJsonHandler]:
    class Handler(QuietJsonHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path == "/v1/models":
                self.send_json(200, {"data": [{"id": "m", "owned_by": "vllm"}]})
            elif self.path == "/version":
                self.send_json(200, {"version": "0.32.0"})
            elif self.path == "/health":
                self.send_raw(200, b"", "text/plain")
            elif self.path == "/metrics" and state.metrics is not None:
                self.send_raw(200, state.metrics.encode(), "text/plain")
            else:
                self.send_json(404, {"detail": "Not Found"})

        def do_POST(self) -> None:  # noqa: N802
            body: Any = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            rf = body.get("response_format") or {}
            schema = (rf.get("json_schema") or {}).get("schema")
            key = json.dumps(schema) if schema is not None else None
            if key is None and body.get("tools") and body.get("tool_choice") not in (None, "none"):
                # the server derives a key from the tools and the choice
                key = "tools\n" + json.dumps([body["tools"], body["tool_choice"]])
            with state.lock:
                state.sent.append((key, self.headers.get("X-Data-Parallel-Rank")))
            if key is not None:
                state.lookup(key)
            choice = {"index": 0, "message": {"role": "assistant", "content": "{"}}
            self.send_json(200, {"choices": [choice | {"finish_reason": "length"}]})

    return Handler


@contextmanager
def vllm_double(state: VllmState) -> Iterator[str]:
    """Serve ``state`` on a free loopback port; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
