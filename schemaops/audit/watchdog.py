"""The per-record watchdog: a periodic ``SIGALRM`` that interrupts one record's work.

Why a signal: a ``pattern`` that backtracks catastrophically cannot be interrupted from inside
``re`` except by a signal (``re`` checks for signals while it matches), and neither can the
search for a parse failure's subtype in a huge output. A record under watch bumps ``seq`` and
sets ``active``; a periodic tick raises ``ValidationTimeout`` when the same record is still
active ``timeout`` seconds later: one counter write per record instead of two timer syscalls.
Main thread only (signals); elsewhere, or with a timeout of 0, nothing is bounded.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

TIMEOUT_PREFIX = "validation exceeded"


class ValidationTimeout(Exception):
    """Raised by the watchdog while one record's validation has run too long."""


class _Watch:
    """Watchdog state. A record under validation bumps ``seq`` and sets ``active``; a
    periodic SIGALRM tick raises ValidationTimeout when the same record is still active
    ``timeout`` seconds later. One counter write per record instead of two timer syscalls."""

    installed = False
    active = False
    seq = 0
    last = -1
    since = 0.0
    timeout = 1.0


def _tick(signum: int, frame: Any) -> None:
    w = _Watch
    if not w.active:
        w.last = -1
        return
    if w.seq != w.last:
        w.last, w.since = w.seq, time.monotonic()
        return
    if time.monotonic() - w.since >= w.timeout:
        w.last = -1
        w.active = False
        raise ValidationTimeout()


@contextmanager
def alarm_handler(timeout: float = 1.0) -> Iterator[None]:
    """Run the watchdog for the duration of an audit (main thread only; else no bound)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or _Watch.installed
        or timeout <= 0
    ):
        yield
        return
    old = signal.signal(signal.SIGALRM, _tick)
    _Watch.installed, _Watch.timeout, _Watch.last = True, timeout, -1
    tick = max(timeout / 4, 0.01)
    signal.setitimer(signal.ITIMER_REAL, tick, tick)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        _Watch.installed = _Watch.active = False
