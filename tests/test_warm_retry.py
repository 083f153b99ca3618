"""Retry policy: what is retried, how long the waits are, and that they are bounded."""

from __future__ import annotations

import random

import pytest

from schemaops.http.retry import AttemptOutcome, RetryPolicy, classify_status


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, AttemptOutcome.OK),
        (400, AttemptOutcome.VERDICT),
        (404, AttemptOutcome.REJECTED),
        (422, AttemptOutcome.REJECTED),
        (429, AttemptOutcome.TRANSIENT),
        (500, AttemptOutcome.TRANSIENT),
        (502, AttemptOutcome.TRANSIENT),
        (503, AttemptOutcome.TRANSIENT),
    ],
)
def test_classify_status(status: int, outcome: AttemptOutcome) -> None:
    assert classify_status(status) is outcome


def test_400_and_timeout_are_never_retried() -> None:
    p = RetryPolicy(retries=10)
    assert not p.should_retry(AttemptOutcome.VERDICT, 0)
    assert not p.should_retry(AttemptOutcome.TIMEOUT, 0)
    assert not p.should_retry(AttemptOutcome.REJECTED, 0)
    assert not p.should_retry(AttemptOutcome.OK, 0)


def test_connection_and_5xx_retried_up_to_the_bound() -> None:
    p = RetryPolicy(retries=3)
    for outcome in (AttemptOutcome.CONNECTION, AttemptOutcome.TRANSIENT):
        assert [p.should_retry(outcome, n) for n in range(5)] == [True, True, True, False, False]
    assert not RetryPolicy(retries=0).should_retry(AttemptOutcome.CONNECTION, 0)


def test_backoff_grows_exponentially_with_bounded_jitter() -> None:
    p = RetryPolicy(retries=6, base_s=0.5, cap_s=4.0)
    rng = random.Random(7)
    for n in range(1, 7):
        d = min(4.0, 0.5 * 2 ** (n - 1))
        samples = [p.delay(n, rng) for _ in range(200)]
        assert min(samples) >= d / 2 and max(samples) <= d
        assert max(samples) - min(samples) > d / 4  # really jittered, not a constant
    assert p.max_total_delay() == 0.5 + 1 + 2 + 4 + 4 + 4


def test_default_policy_fails_a_dead_server_fast() -> None:
    assert RetryPolicy().max_total_delay() <= 8.0


def test_invalid_policy_rejected() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(retries=-1)
    with pytest.raises(ValueError):
        RetryPolicy().delay(0)
