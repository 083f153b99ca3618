"""Which outcomes of a warm request are retried, and how long to wait before the next try.

A warm request has four kinds of outcome, and only two of them are worth another try:

- HTTP 200: the grammar compiled and is cached. Done.
- HTTP 400: a *verdict*. SGLang answers 400 after the compile failed (or timed out on the
  server), and it has cached the schema as invalid: a retry returns the same 400 from the
  cache, forever. Never retried; the message is reported.
- Connection errors, HTTP 5xx and 429: the server is restarting, overloaded or a proxy in
  front of it hiccupped. Retried with exponential backoff and jitter, a bounded number of
  times.
- A 2xx whose body is not the answer of a completed request (a proxy's page, an abort, a
  body without end): *not* retried, reported as ``failed`` with what came back.
- Client timeout: *not* retried. SGLang does not share an in-flight compile between
  requests (its cache only holds finished grammars), and it aborts a request whose client
  went away, dropping the compile result. A retry starts the whole compile again, doubling
  the work on a server that was already too slow for the timeout.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import Enum


class AttemptOutcome(str, Enum):
    """How one HTTP attempt ended, as far as retrying is concerned."""

    OK = "ok"
    VERDICT = "verdict"  # 400: the server judged the schema; cached as invalid
    REJECTED = "rejected"  # other 4xx: our request is wrong (404 path, 422 body); no retry helps
    TRANSIENT = "transient"  # 5xx or 429: worth another try
    CONNECTION = "connection"  # refused, reset, closed mid-response: worth another try
    TIMEOUT = "timeout"  # the client gave up waiting; retrying doubles the compile
    MALFORMED = "malformed"  # 2xx whose body is no answer (or an endless one): no retry helps


RETRYABLE = frozenset({AttemptOutcome.TRANSIENT, AttemptOutcome.CONNECTION})


def classify_status(status: int) -> AttemptOutcome:
    """Map an HTTP status code to an outcome (connection errors and timeouts never get here)."""
    if 200 <= status < 300:
        return AttemptOutcome.OK
    if status == 400:
        return AttemptOutcome.VERDICT
    if status == 429 or status >= 500:
        return AttemptOutcome.TRANSIENT
    return AttemptOutcome.REJECTED


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and "equal jitter".

    The n-th retry (n = 1, 2, ...) waits a random time in ``[d/2, d]`` with
    ``d = min(cap_s, base_s * 2**(n-1))``: the wait still grows, so a restarting server is
    not hammered, and the random half keeps many clients (or many schemas of one client)
    from retrying in lock step. With the defaults the total wait over all retries is at most
    0.5 + 1 + 2 + 4 = 7.5 s, so a dead server fails fast; give ``--wait-ready`` to ride out
    a restart.
    """

    retries: int = 4
    base_s: float = 0.5
    cap_s: float = 8.0

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError("retries must be >= 0")
        if self.base_s < 0 or self.cap_s < 0:
            raise ValueError("backoff times must be >= 0")

    def should_retry(self, outcome: AttemptOutcome, retries_done: int) -> bool:
        """Whether to try again after ``outcome`` when ``retries_done`` retries were made."""
        return outcome in RETRYABLE and retries_done < self.retries

    def delay(self, retry_number: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number ``retry_number`` (1-based)."""
        if retry_number < 1:
            raise ValueError("retry_number is 1-based")
        d = min(self.cap_s, self.base_s * (2 ** (retry_number - 1)))
        r = (rng or random).random()
        return d / 2 + r * d / 2

    def max_total_delay(self) -> float:
        """The longest the retries of one request can wait in all (for docs and tests)."""
        return sum(min(self.cap_s, self.base_s * 2 ** (n - 1)) for n in range(1, self.retries + 1))
