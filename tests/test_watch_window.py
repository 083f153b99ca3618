"""Windowed p per schema as counters per time bucket (explicit clock: no sleeping)."""

from __future__ import annotations

from collections import Counter

import pytest

from schemaops.watch.window import Window, Windows, label, parse_duration


def test_durations_and_labels() -> None:
    assert [parse_duration(x) for x in ("90", "90s", "5m", "1h", "0.5s")] == [
        90,
        90,
        300,
        3600,
        0.5,
    ]
    assert [label(x) for x in (300, 3600, 90, 0.5)] == ["5m", "1h", "90s", "0.5s"]
    for bad in ("", "0", "-1m", "5 minutes", "1w"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_window_forgets_what_left_it() -> None:
    w = Window(60.0)  # 30 buckets of 2 s
    w.add("s", 10, 10, now=1000.0)
    w.add("s", 10, 0, now=1030.0)
    assert w.totals(1030.0) == {"s": [20, 10]}
    assert w.totals(1061.0) == {"s": [10, 0]}  # the first bucket is out of the window
    assert w.totals(1100.0) == {}
    assert len(w.buckets) <= 30


def test_snapshot_gives_p_and_compound_per_window() -> None:
    ws = Windows([300.0, 3600.0])
    ws.add_batch({"a": Counter(ok=9, **{"schema_violation:type": 1}), "b": Counter()}, now=10.0)
    ws.add_batch({"a": Counter(ok=10)}, now=400.0)
    snap = ws.snapshot(400.0, [1, 2])
    assert snap["5m"]["a"]["p"] == 1.0 and snap["5m"]["a"]["outputs"] == 10
    assert snap["1h"]["a"]["outputs"] == 20 and snap["1h"]["a"]["p"] == 0.95
    assert snap["1h"]["a"]["compound"]["2"] == pytest.approx(0.9025)
    assert "b" not in snap["1h"]  # no outputs: no row
