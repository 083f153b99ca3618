"""Windowed p per schema, kept as counters per time bucket (never as lines).

Each window (``5m``, ``1h``, ...) is a ring of ``BUCKETS`` buckets; each bucket holds, per
schema, the outputs and the ok outputs counted while it was current. An output's time is
when watch read it (a log line's own timestamp field differs between engines and is often
absent). Memory: windows x buckets x schemas counters, whatever the number of lines.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any

BUCKETS = 30
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``5m``, ``1h``, ``1d`` -> seconds (above 0); ValueError otherwise."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if m is None or float(m.group(1)) <= 0:
        raise ValueError(f"expected a duration like 30s, 5m or 1h, got {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def label(seconds: float) -> str:
    """A window's label: ``5m``, ``1h``, ``90s``."""
    for unit in ("d", "h", "m"):
        n = seconds / _UNITS[unit]
        if n >= 1 and n == int(n):
            return f"{int(n)}{unit}"
    return f"{seconds:g}s"


class Window:
    """Outputs and ok outputs per schema over the last ``seconds`` (in ``BUCKETS`` steps)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.label = label(seconds)
        self.step = seconds / BUCKETS
        #: (bucket index, {schema: [outputs, ok]}), oldest first
        self.buckets: deque[tuple[int, dict[str, list[int]]]] = deque()

    def _current(self, now: float) -> dict[str, list[int]]:
        idx = int(now // self.step)
        if not self.buckets or self.buckets[-1][0] != idx:
            self.buckets.append((idx, {}))
        self._expire(idx)
        return self.buckets[-1][1]

    def _expire(self, idx: int) -> None:
        while self.buckets and self.buckets[0][0] <= idx - BUCKETS:
            self.buckets.popleft()

    def add(self, schema: str, outputs: int, ok: int, now: float) -> None:
        cur = self._current(now).setdefault(schema, [0, 0])
        cur[0] += outputs
        cur[1] += ok

    def totals(self, now: float) -> dict[str, list[int]]:
        """{schema: [outputs, ok]} over the window ending ``now``."""
        self._expire(int(now // self.step))
        out: dict[str, list[int]] = {}
        for _, per in self.buckets:
            for schema, (n, ok) in per.items():
                cur = out.setdefault(schema, [0, 0])
                cur[0] += n
                cur[1] += ok
        return out


class Windows:
    """All the windows watch keeps, fed from each batch's per-schema counts."""

    def __init__(self, seconds: list[float]) -> None:
        self.windows = [Window(s) for s in sorted(set(seconds))]

    def add_batch(self, by_schema: dict[str, Any], now: float) -> None:
        """``by_schema``: the batch's ``Tally.by_schema`` ({schema: Counter of categories})."""
        for schema, cats in by_schema.items():
            n = sum(cats.values())
            if n:
                ok = cats.get("ok", 0)
                for w in self.windows:
                    w.add(schema, n, ok, now)

    def snapshot(self, now: float, steps: list[int]) -> dict[str, dict[str, Any]]:
        """{window label: {schema: {"outputs", "ok", "p", "compound": {n: p^n}}}}."""
        out: dict[str, dict[str, Any]] = {}
        for w in self.windows:
            rows = {}
            for schema, (n, ok) in sorted(w.totals(now).items()):
                p = ok / n if n else None
                rows[schema] = {
                    "outputs": n,
                    "ok": ok,
                    "p": p,
                    "compound": {str(k): (None if p is None else p**k) for k in steps},
                }
            out[w.label] = rows
        return out
