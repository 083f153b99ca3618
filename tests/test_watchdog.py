"""schemaops.watchdog: one neutral time bound used by audit and registry (issue 16)."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest

from schemaops.watchdog import WatchdogTimeout, armed, paused, watched

EVIL = re.compile(r"^(a+)+$")
TEXT = "a" * 40 + "!"  # backtracks for far longer than the bound


def test_a_watched_unit_is_cut_off_after_the_timeout() -> None:
    start = time.monotonic()
    with armed(0.2), pytest.raises(WatchdogTimeout), watched():
        EVIL.match(TEXT)
    assert time.monotonic() - start < 5


def test_unwatched_work_and_watched_off_are_not_interrupted() -> None:
    with armed(0.05):
        with watched(on=False):
            time.sleep(0.3)
        time.sleep(0.3)  # outside any unit


def test_a_pause_is_not_cut_off_and_the_unit_is_watched_again_after_it() -> None:
    """Work done in ``paused()`` inside a unit (the audit building what explains a failure)
    is not cut off however long it takes, and does not use up the unit's time; the unit is
    watched again after it, and cut off by a pattern that backtracks."""
    with armed(0.05), watched():
        with paused():
            time.sleep(0.3)
    start = time.monotonic()
    with armed(0.2), pytest.raises(WatchdogTimeout), watched():
        with paused():
            time.sleep(0.3)
        EVIL.match(TEXT)
    assert time.monotonic() - start < 5


def test_the_registry_does_not_import_the_audit() -> None:
    code = (
        "import sys, schemaops.registry, schemaops.registry.examples; "
        "print([m for m in sys.modules if m.startswith('schemaops.audit')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
