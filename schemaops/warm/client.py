"""A small async client for one SGLang (or OpenAI-compatible) server.

Modelled on httpx's own clarity: one object per server, a few verbs (``post``,
``get_json``, ``wait_ready``), and every network outcome turned into a value (``Attempt``)
instead of an exception, so the warm engine can decide what each outcome means
(``retry.Outcome``) and report it truthfully.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from schemaops.warm.retry import Outcome, RetryPolicy, classify_status

# Connection-level failures: the server is down, restarting or dropped the connection.
_CONNECTION_ERRORS = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
    httpx.PoolTimeout,
)


@dataclass
class Attempt:
    """One HTTP exchange: its outcome, status, wall time and the error text if any."""

    outcome: Outcome
    status: int | None
    elapsed_ms: float
    error: str | None = None
    body: Any = None


@dataclass
class Result:
    """The last attempt of a request plus how many were made (retries included)."""

    last: Attempt
    attempts: int
    history: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> Outcome:
        return self.last.outcome


def error_text(resp: httpx.Response) -> str:
    """The server's own message: SGLang's ``{"error": {"message"}}``, FastAPI's ``detail``."""
    try:
        data = resp.json()
    except ValueError:
        return resp.text.strip()[:2000] or f"HTTP {resp.status_code}"
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        for k in ("message", "detail", "error"):
            if data.get(k):
                v = data[k]
                return v if isinstance(v, str) else json.dumps(v)
    return json.dumps(data)[:2000]


class ServerUnavailable(Exception):
    """The server did not become ready (``/ready`` or ``/health`` 200) before the deadline."""


class ServerClient:
    """Requests to one server with the retry policy, plus readiness polling.

    ``down_events`` counts connection-level failures seen on this server: after one, the
    server may have restarted and lost every grammar it compiled, so the engine re-checks
    (``/server_info`` ``startup_time``) and re-warms instead of trusting earlier successes.

    ``gave_up`` is a circuit breaker: once one request exhausted its retries on connection
    errors, the server is taken as gone and later requests fail at once with that reason,
    so a dead server costs one retry budget, not one per schema.
    """

    def __init__(
        self,
        base_url: str,
        http: httpx.AsyncClient,
        *,
        timeout_s: float,
        policy: RetryPolicy,
        recover_s: float = 0.0,
        rng: random.Random | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = http
        self.timeout = httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))
        self.policy = policy
        self.recover_s = recover_s
        self.rng = rng or random.Random()
        self.down_events = 0
        self.gave_up: str | None = None
        self._ready_path = "/ready"
        self._recover_lock = asyncio.Lock()

    async def _once(
        self, method: str, path: str, body: Any, headers: dict[str, str], timeout: httpx.Timeout
    ) -> Attempt:
        t0 = time.perf_counter()
        try:
            resp = await self.http.request(
                method, self.base_url + path, json=body, headers=headers, timeout=timeout
            )
        except _CONNECTION_ERRORS as exc:
            self.down_events += 1
            return Attempt(
                Outcome.CONNECTION,
                None,
                _ms(t0),
                f"{type(exc).__name__}: {exc or 'connection failed'}",
            )
        except httpx.TimeoutException as exc:
            return Attempt(
                Outcome.TIMEOUT,
                None,
                _ms(t0),
                f"{type(exc).__name__}: no answer within {timeout.read:g} s",
            )
        outcome = classify_status(resp.status_code)
        if outcome is Outcome.OK:
            try:
                data = resp.json()
            except ValueError:
                data = resp.text
            return Attempt(outcome, resp.status_code, _ms(t0), None, data)
        return Attempt(
            outcome, resp.status_code, _ms(t0), f"HTTP {resp.status_code}: {error_text(resp)}"
        )

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        *,
        timeout_s: float | None = None,
    ) -> Result:
        """Send with retries on connection errors and 5xx/429; never on 400 or a timeout."""
        timeout = (
            self.timeout
            if timeout_s is None
            else httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))
        )
        if self.gave_up:
            return Result(Attempt(Outcome.CONNECTION, None, 0.0, self.gave_up), 0, [self.gave_up])
        history: list[str] = []
        retries = 0
        while True:
            att = await self._once(method, path, body, headers or {}, timeout)
            if att.error:
                history.append(att.error)
            if not self.policy.should_retry(att.outcome, retries):
                if att.outcome is Outcome.CONNECTION:
                    self.gave_up = (
                        f"server unreachable: {att.error} (after {retries + 1} attempt(s))"
                    )
                return Result(att, retries + 1, history)
            retries += 1
            await asyncio.sleep(self.policy.delay(retries, self.rng))
            if att.outcome is Outcome.CONNECTION and self.recover_s > 0:
                try:
                    await self.recover()
                except ServerUnavailable as exc:
                    self.gave_up = f"server unreachable: {exc}"
                    return Result(
                        Attempt(Outcome.CONNECTION, None, att.elapsed_ms, self.gave_up),
                        retries,
                        history,
                    )

    async def post(self, path: str, body: Any, headers: dict[str, str] | None = None) -> Result:
        return await self.request("POST", path, body, headers)

    async def get_json(self, path: str, *, timeout_s: float = 30.0) -> Any | None:
        """GET ``path`` and return its JSON, or ``None`` if it is missing or not JSON."""
        res = await self.request("GET", path, timeout_s=timeout_s)
        if res.outcome is not Outcome.OK or isinstance(res.last.body, str):
            return None
        return res.last.body

    async def probe_health(self) -> Attempt:
        """One readiness check without retries: 200 ready, 503 starting (or paused).

        SGLang 0.5.23's ``/ready`` answers at once; its ``/health`` runs a 1-token generation
        and sleeps at least a second before answering. Servers without ``/ready`` (404; vLLM,
        older SGLang) are asked ``/health`` from then on.
        """
        att = await self._once("GET", self._ready_path, None, {}, httpx.Timeout(10.0))
        if att.status == 404 and self._ready_path != "/health":
            self._ready_path = "/health"
            att = await self._once("GET", "/health", None, {}, httpx.Timeout(10.0))
        return att

    async def check_ready(self) -> None:
        """One readiness check, retried by the policy (connection errors, 503), or raise."""
        n = 0
        while True:
            att = await self.probe_health()
            if att.outcome is Outcome.OK:
                return
            if not self.policy.should_retry(att.outcome, n):
                break
            n += 1
            await asyncio.sleep(self.policy.delay(n, self.rng))
        hint = "is it running? pass --wait-ready SECONDS to wait for a starting server"
        raise ServerUnavailable(
            f"{self.base_url} not reachable or not ready: {att.error or f'HTTP {att.status}'} "
            f"after {n + 1} attempt(s); {hint}"
        )

    async def wait_ready(self, deadline_s: float, interval_s: float = 0.5) -> float:
        """Poll readiness until 200; return the seconds waited or raise ``ServerUnavailable``.

        The deadline is a wall-clock bound: a deploy hook must never hang forever on a server
        that will not come up.
        """
        t0 = time.monotonic()
        last = "no answer"
        while True:
            att = await self.probe_health()
            if att.outcome is Outcome.OK:
                return time.monotonic() - t0
            last = att.error or f"HTTP {att.status}"
            waited = time.monotonic() - t0
            if waited >= deadline_s:
                raise ServerUnavailable(
                    f"{self.base_url} not ready after {waited:.1f} s (last: {last})"
                )
            await asyncio.sleep(min(interval_s, max(0.0, deadline_s - waited)))

    async def recover(self) -> None:
        """After a connection error, wait (once for all waiting requests) for ``/health``."""
        async with self._recover_lock:
            att = await self.probe_health()
            if att.outcome is not Outcome.OK:
                await self.wait_ready(self.recover_s)


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 2)
