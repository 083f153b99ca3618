"""A small async client for one SGLang (or OpenAI-compatible) server.

Modelled on httpx's own clarity: one object per server, a few verbs (``post``,
``get_json``, ``wait_ready``), and every network outcome turned into a value (``Attempt``)
instead of an exception, so the warm engine can decide what each outcome means
(``retry.AttemptOutcome``) and report it truthfully.

A broken server must not hold a warm run hostage: every exchange has a whole-request
deadline (connect, send, headers and body together, not per read, so a server dripping a
byte a second still ends at ``timeout_s``), and a body is read up to ``MAX_BODY_BYTES``
(a 1-token answer is a few kB; an endless body ends as ``failed``, not as a MemoryError).
A JSON body is parsed bounded in depth (``body.load_json``, ``MAX_DEPTH`` levels): no
server answer warm or probe reads nests deeper, and a 100,000-deep one would otherwise be a
RecursionError traceback in the parser (or later, in anything that walks it); it is a
``MALFORMED`` answer with that reason instead.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from schemaops.http.answer import clean
from schemaops.http.auth import Auth
from schemaops.http.body import MAX_DEPTH, TooDeep, load_json
from schemaops.http.redact import redactor
from schemaops.http.retry import AttemptOutcome, RetryPolicy, classify_status
from schemaops.http.urls import redact

# Connection-level failures: the server is down, restarting or dropped the connection.
_CONNECTION_ERRORS = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.RemoteProtocolError,
    httpx.ReadError,
    httpx.WriteError,
    httpx.PoolTimeout,
)
# SGLang's largest answer warm reads is /server_info (all server arguments, ~10-50 kB).
MAX_BODY_BYTES = 8 * 1024 * 1024

Check = Callable[[Any], "str | None"]


class _TooLarge(Exception):
    pass


class InFlight:
    """Our requests in flight on one server, and each one's share of it.

    A request's *share* is its wall time divided by the most requests of ours that were in
    flight at any moment of it (itself included): the time it can be credited with when the
    server splits its work among them. The proof of warmth compares a cold request measured
    under ``--concurrency`` with a probe sent alone; the cold's share, not its wall time, is
    what its own compile may be credited with. The estimate is exact for ``k`` equal
    compiles run side by side or one after another, and low otherwise, so it errs towards
    ``unproven``, never towards ``hit``.
    """

    def __init__(self) -> None:
        self._peaks: dict[int, int] = {}
        self._next = 0

    def enter(self) -> int:
        token, self._next = self._next, self._next + 1
        self._peaks[token] = 0
        k = len(self._peaks)
        for t, peak in self._peaks.items():
            self._peaks[t] = max(peak, k)
        return token

    def leave(self, token: int, elapsed_ms: float) -> float:
        """``elapsed_ms`` divided by the peak number in flight since ``enter``."""
        return round(elapsed_ms / max(1, self._peaks.pop(token)), 2)


@dataclass
class Attempt:
    """One HTTP exchange: its outcome, status, wall time and the error text if any.

    ``share_ms`` is ``elapsed_ms`` divided by the most requests of ours in flight with it
    (``InFlight``); equal to ``elapsed_ms`` when nothing else of ours was in flight.
    """

    outcome: AttemptOutcome
    status: int | None
    elapsed_ms: float
    error: str | None = None
    body: Any = None
    share_ms: float | None = None


@dataclass
class Result:
    """The last attempt of a request plus how many were made (retries included).

    ``attempts`` is 0 when the request was not sent at all: the server had already been
    given up on (``ServerClient.gave_up``).
    """

    last: Attempt
    attempts: int
    history: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> AttemptOutcome:
        return self.last.outcome


def _parse(raw: bytes) -> Any:
    """The JSON of a body, or its text when it is not JSON; ``TooDeep`` past ``MAX_DEPTH``."""
    try:
        return load_json(raw, "the answer")
    except TooDeep:
        raise
    except ValueError:
        return raw.decode("utf-8", "replace")


def error_text(status: int, data: Any) -> str:
    """The server's own message: SGLang's ``{"error": {"message"}}``, FastAPI's ``detail``."""
    if isinstance(data, str):
        return clean(data.strip()) or f"HTTP {status}"
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            return clean(str(err["message"]))
        for k in ("message", "detail", "error"):
            if data.get(k):
                v = data[k]
                return clean(v if isinstance(v, str) else json.dumps(v))
    return clean(json.dumps(data))


async def _read_capped(resp: httpx.Response, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


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

    ``base_url`` may carry credentials (used for the requests); ``shown_url`` is the same
    URL redacted, the only form that goes into messages. ``auth`` (``--api-key``,
    ``--header``) adds its headers to every request, readiness checks included; its values
    are scrubbed from every message like the URL's credentials, and a 401/403 says what to
    pass (or that what was passed was refused).
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
        auth: Auth | None = None,
        wait_flag: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        #: the calling command's option that waits for a starting server (warm's
        #: ``--wait-ready``), named in the not-ready message; ``None``: the command has none
        self.wait_flag = wait_flag
        self.auth = auth or Auth()
        self._secrets = self.auth.secrets()
        # every form of every credential sent (URL userinfo, its Basic token, header values)
        self._redactor = redactor([self.base_url], self._secrets)
        self.shown_url = redact(self.base_url)
        self.http = http
        self.timeout_s = timeout_s
        self.policy = policy
        self.recover_s = recover_s
        self.rng = rng or random.Random()
        self.in_flight = InFlight()
        self.down_events = 0
        self.gave_up: str | None = None
        self._ready_path = "/ready"
        self._recover_lock = asyncio.Lock()

    def _share(self, entered: int, t0: float) -> float:
        return self.in_flight.leave(entered, _ms(t0))

    def _scrub(self, text: str) -> str:
        return self._redactor.text(text.replace(self.base_url, self.shown_url))

    async def _once(
        self,
        method: str,
        path: str,
        body: Any,
        headers: dict[str, str],
        deadline_s: float,
        check: Check | None = None,
    ) -> Attempt:
        """One exchange within ``deadline_s`` for all of it; never raises for the network."""
        t0 = time.perf_counter()
        entered = self.in_flight.enter()
        timeout = httpx.Timeout(deadline_s, connect=min(10.0, deadline_s))
        status: int | None = None
        try:
            async with asyncio.timeout(deadline_s):
                async with self.http.stream(
                    method,
                    self.base_url + path,
                    json=body,
                    headers={**self.auth.headers, **headers} if self.auth.headers else headers,
                    timeout=timeout,
                ) as resp:
                    status = resp.status_code
                    raw = await _read_capped(resp, MAX_BODY_BYTES)
        except (_TooLarge, TimeoutError, httpx.HTTPError) as exc:
            outcome, error = self._failure(exc, status, deadline_s, timeout)
            shown = status if outcome is AttemptOutcome.MALFORMED else None
            return Attempt(outcome, shown, _ms(t0), error, share_ms=self._share(entered, t0))
        share = self._share(entered, t0)
        try:
            data = _parse(raw)
        except TooDeep:
            why = (
                f"HTTP {status} with a JSON answer nested deeper than {MAX_DEPTH} levels: not "
                "a server's answer; not read"
            )
            return Attempt(AttemptOutcome.MALFORMED, status, _ms(t0), why, share_ms=share)
        # Scrubbed as it is read, before any part of it is cut to a length (an error glimpse,
        # a message, a fact): a server may echo the credentials it was sent.
        data = self._redactor.value(data)
        outcome = classify_status(resp.status_code)
        if outcome is AttemptOutcome.OK:
            why = check(data) if check else None
            if why:
                return Attempt(
                    AttemptOutcome.MALFORMED, resp.status_code, _ms(t0), why, data, share
                )
            return Attempt(outcome, resp.status_code, _ms(t0), None, data, share)
        msg = self._scrub(error_text(resp.status_code, data))
        if resp.status_code in (401, 403):  # a gateway or --api-key server: say what to pass
            msg = f"{self.auth.denied(resp.status_code)} (server: {msg})"
            return Attempt(outcome, resp.status_code, _ms(t0), msg, None, share)
        return Attempt(
            outcome, resp.status_code, _ms(t0), f"HTTP {resp.status_code}: {msg}", None, share
        )

    def _failure(
        self, exc: Exception, status: int | None, deadline_s: float, timeout: httpx.Timeout
    ) -> tuple[AttemptOutcome, str]:
        """The outcome and message of an exchange that raised (counting connection losses)."""
        if isinstance(exc, _TooLarge):
            return AttemptOutcome.MALFORMED, (
                f"HTTP {status} with an answer over {MAX_BODY_BYTES // 2**20} MiB: "
                "not a server's answer to a 1-token request; stopped reading"
            )
        if isinstance(exc, httpx.ConnectTimeout):
            self.down_events += 1
            return (
                AttemptOutcome.CONNECTION,
                f"ConnectTimeout: no connection within {timeout.connect:g} s",
            )
        if isinstance(exc, (TimeoutError, httpx.TimeoutException)):
            return AttemptOutcome.TIMEOUT, f"no complete answer within {deadline_s:g} s (--timeout)"
        text = clean(self._scrub(f"{type(exc).__name__}: {exc or 'connection failed'}"))
        if isinstance(exc, _CONNECTION_ERRORS):
            self.down_events += 1
            return AttemptOutcome.CONNECTION, text
        return AttemptOutcome.MALFORMED, text  # undecodable body, invalid header...: no retry helps

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        *,
        timeout_s: float | None = None,
        check: Check | None = None,
    ) -> Result:
        """Send with retries on connection errors and 5xx/429; never on 400 or a timeout.

        ``check`` judges a 2xx body (``answer.why_not_answer``): a body it rejects is ``MALFORMED``.
        """
        deadline = self.timeout_s if timeout_s is None else timeout_s
        if self.gave_up:
            return Result(
                Attempt(AttemptOutcome.CONNECTION, None, 0.0, self.gave_up), 0, [self.gave_up]
            )
        history: list[str] = []
        retries = 0
        while True:
            att = await self._once(method, path, body, headers or {}, deadline, check)
            if att.error:
                history.append(att.error)
            if not self.policy.should_retry(att.outcome, retries):
                if att.outcome is AttemptOutcome.CONNECTION:
                    self.gave_up = (
                        f"server unreachable: {att.error} (gave up after {retries + 1} attempt(s))"
                    )
                return Result(att, retries + 1, history)
            retries += 1
            await asyncio.sleep(self.policy.delay(retries, self.rng))
            if att.outcome is AttemptOutcome.CONNECTION and self.recover_s > 0:
                try:
                    await self.recover()
                except ServerUnavailable as exc:
                    self.gave_up = f"server unreachable: {exc}"
                    return Result(
                        Attempt(AttemptOutcome.CONNECTION, None, att.elapsed_ms, self.gave_up),
                        retries,
                        history,
                    )

    async def post(
        self,
        path: str,
        body: Any,
        headers: dict[str, str] | None = None,
        check: Check | None = None,
    ) -> Result:
        return await self.request("POST", path, body, headers, check=check)

    async def get_json(self, path: str, *, timeout_s: float = 30.0) -> Any | None:
        """GET ``path`` and return its JSON, or ``None`` if it is missing or not JSON.

        The deadline is ``timeout_s`` or ``--timeout``, whichever is shorter.
        """
        res = await self.request("GET", path, timeout_s=min(timeout_s, self.timeout_s))
        if res.outcome is not AttemptOutcome.OK or isinstance(res.last.body, str):
            return None
        return res.last.body

    async def probe_health(self) -> Attempt:
        """One readiness check without retries: 200 ready, 503 starting (or paused).

        SGLang 0.5.23's ``/ready`` answers at once; its ``/health`` runs a 1-token generation
        and sleeps at least a second before answering. Servers without ``/ready`` (404; vLLM,
        older SGLang) are asked ``/health`` from then on.
        """
        deadline = min(10.0, self.timeout_s)
        att = await self._once("GET", self._ready_path, None, {}, deadline)
        if att.status == 404 and self._ready_path != "/health":
            self._ready_path = "/health"
            att = await self._once("GET", "/health", None, {}, deadline)
        return att

    async def check_ready(self) -> None:
        """One readiness check, retried by the policy (connection errors, 503), or raise."""
        n = 0
        while True:
            att = await self.probe_health()
            if att.outcome is AttemptOutcome.OK:
                return
            if not self.policy.should_retry(att.outcome, n):
                break
            n += 1
            await asyncio.sleep(self.policy.delay(n, self.rng))
        if att.status in (401, 403):  # a key is missing or wrong, not a server starting
            raise ServerUnavailable(f"{self.shown_url} not ready: {att.error}")
        hint = "is it running?"
        if self.wait_flag:
            hint += f" pass {self.wait_flag} SECONDS to wait for a starting server"
        raise ServerUnavailable(
            f"{self.shown_url} not reachable or not ready: {att.error or f'HTTP {att.status}'} "
            f"after {n + 1} attempt(s); {hint}"
        )

    async def wait_ready(
        self, deadline_s: float, interval_s: float = 0.5, *, since: float | None = None
    ) -> float:
        """Poll readiness until 200; return the seconds waited or raise ``ServerUnavailable``.

        The deadline is a wall-clock bound: a deploy hook must never hang forever on a server
        that will not come up. ``since`` (``time.monotonic``) is when the command began to
        wait: ``--wait-ready`` is one deadline for the whole command, however many steps wait
        (engine detection, then each server's discovery), and the seconds reported are all
        of them, not those of the last step.
        """
        t0 = time.monotonic() if since is None else since
        last = "no answer"
        while True:
            att = await self.probe_health()
            if att.outcome is AttemptOutcome.OK:
                return time.monotonic() - t0
            last = att.error or f"HTTP {att.status}"
            waited = time.monotonic() - t0
            if att.status in (401, 403):  # waiting will not bring the missing credentials
                raise ServerUnavailable(f"{self.shown_url} not ready: {last}")
            if waited >= deadline_s:
                raise ServerUnavailable(
                    f"{self.shown_url} not ready after {waited:.1f} s (last: {last})"
                )
            await asyncio.sleep(min(interval_s, max(0.0, deadline_s - waited)))

    async def recover(self) -> None:
        """After a connection error, wait (once for all waiting requests) for ``/health``."""
        async with self._recover_lock:
            att = await self.probe_health()
            if att.outcome is not AttemptOutcome.OK:
                await self.wait_ready(self.recover_s)


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 2)
