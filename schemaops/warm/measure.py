"""Direct first-request measurements, independent of the warm engine.

Tests and ``bench/warm.py`` use these to check the engine's claims from outside: a plain
1-token request with a given key string (SGLang ``/generate``) or schema (a chat completion,
SGLang or vLLM), timed, and SGLang's ``/flush_cache`` with its retry (vLLM has none).
"""

from __future__ import annotations

import time
from typing import Any

import httpx


def first_request_ms(
    url: str, schema_text: str, *, rank: int | None = None, timeout: float = 600
) -> tuple[int, float]:
    """One 1-token ``/generate`` with ``schema_text`` as the key: ``(status, milliseconds)``."""
    body: dict[str, Any] = {
        "text": "Hi",
        "sampling_params": {"max_new_tokens": 1, "temperature": 0.0, "json_schema": schema_text},
    }
    if rank is not None:
        body["routed_dp_rank"] = rank
    t0 = time.perf_counter()
    r = httpx.post(url.rstrip("/") + "/generate", json=body, timeout=timeout)
    return r.status_code, (time.perf_counter() - t0) * 1000


def first_chat_ms(
    url: str, schema: Any, *, model: str = "default", timeout: float = 600
) -> tuple[int, float]:
    """One 1-token chat completion with ``schema`` as ``response_format`` (vLLM keys it by
    ``json.dumps`` of the object, as warm sends it): ``(status, milliseconds)``."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 1,
        "temperature": 0.0,
        "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}},
    }
    t0 = time.perf_counter()
    r = httpx.post(url.rstrip("/") + "/v1/chat/completions", json=body, timeout=timeout)
    return r.status_code, (time.perf_counter() - t0) * 1000


def flush_cache(url: str, attempts: int = 40, pause_s: float = 0.25) -> None:
    """``/flush_cache`` (grammar cache included); SGLang answers 400 while requests run."""
    for _ in range(attempts):
        if httpx.post(url.rstrip("/") + "/flush_cache", timeout=30).status_code == 200:
            return
        time.sleep(pause_s)
    raise RuntimeError(f"{url}/flush_cache kept refusing (requests still running?)")
