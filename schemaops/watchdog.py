"""A time bound for one unit of work that Python cannot stop from inside: a periodic SIGALRM.

Why a signal: a ``pattern`` that backtracks catastrophically cannot be interrupted from inside
``re`` except by a signal (``re`` checks for signals while it matches), and neither can the
search for a parse failure's subtype in a huge output. Used by the audit (each record) and by
the registry (each sidecar example).

Use: ``armed(timeout)`` around a whole run installs the tick; ``with watched():`` around each
unit of work marks it. A unit still running ``timeout`` seconds after it started raises
``WatchdogTimeout`` inside it. Entering a unit costs one counter write, not two timer syscalls,
so it is cheap enough for a per-record hot path (reuse one ``watched`` instance there). Main
thread only (signals); elsewhere, with a timeout of 0, or outside ``armed``, nothing is bounded.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class WatchdogTimeout(Exception):
    """Raised inside a ``watched`` unit of work that has run past the armed timeout."""


class _State:
    """The one watchdog of the process: a unit under watch bumps ``seq`` and sets ``active``;
    the tick remembers when it first saw that ``seq`` and raises once ``timeout`` has passed."""

    installed = False
    active = False
    seq = 0
    last = -1
    since = 0.0
    timeout = 1.0


def _tick(signum: int, frame: Any) -> None:
    w = _State
    if not w.active:
        w.last = -1
        return
    if w.seq != w.last:
        w.last, w.since = w.seq, time.monotonic()
        return
    if time.monotonic() - w.since >= w.timeout:
        w.last = -1
        w.active = False
        raise WatchdogTimeout()


def timeout() -> float:
    """The armed timeout in seconds (for messages that say what was exceeded)."""
    return _State.timeout


@contextmanager
def armed(timeout: float = 1.0) -> Iterator[None]:
    """Run the watchdog for the duration of a run (main thread only; else no bound).

    Nested use keeps the outer watchdog and its timeout.
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or _State.installed
        or timeout <= 0
    ):
        yield
        return
    old = signal.signal(signal.SIGALRM, _tick)
    _State.installed, _State.timeout, _State.last = True, timeout, -1
    tick = max(timeout / 4, 0.01)
    signal.setitimer(signal.ITIMER_REAL, tick, tick)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        _State.installed = _State.active = False


class watched:  # noqa: N801 - used like a function: ``with watched():``
    """Marks one unit of work for the armed watchdog while the ``with`` block runs.

    ``on=False`` runs the block unwatched (work that cannot hang, e.g. a schema without
    regexes). Holds no state of its own, so one instance can be reused for every unit.
    """

    __slots__ = ("on",)

    def __init__(self, on: bool = True) -> None:
        self.on = on

    def __enter__(self) -> None:
        _State.seq += 1
        _State.active = self.on

    def __exit__(self, *exc: object) -> None:
        _State.active = False


class paused:  # noqa: N801 - used like a function: ``with paused():``
    """Stops the watch of the unit of work under way for the block, and starts the unit
    afresh after it: for bounded work done on the unit's behalf that judges nothing (the
    audit builds what explains a failure on the first one that needs it), whose time must
    not count against the unit nor be cut off as if it were the unit's."""

    __slots__ = ("was",)

    def __init__(self) -> None:
        self.was = False

    def __enter__(self) -> None:
        self.was = _State.active
        _State.active = False

    def __exit__(self, *exc: object) -> None:
        _State.seq += 1
        _State.active = self.was
