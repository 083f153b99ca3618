"""What ``watch`` shows: the cumulative and windowed counters, and the poison detector,
shared between the loop (``run.py``), which counts, and the ``/metrics`` thread
(``serve.py``), which reads one snapshot per scrape under one lock.

The cumulative counters are shown as last published, and the loop publishes only once the
state holding them is saved (``--state-dir``), so what a scrape saw a restart never lowers.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from schemaops.audit.tally.stats import Tally, compound, wilson
from schemaops.watch.poison import Detector
from schemaops.watch.tools import ToolLabels, tool_rows
from schemaops.watch.window import Windows


class Live:
    """The cumulative and windowed counters, shared with the metrics thread (``lock``).

    The cumulative counters are shown (``/metrics``, ``--json-lines``) as last ``publish``ed,
    and the loop publishes only after the state holding them is saved: a ``kill -9`` between
    counting a batch and saving it would otherwise have shown counts that the restart, which
    resumes from the saved state, no longer has, and Prometheus reads such a drop as a
    counter reset (``increase()`` then spikes by the whole restored total).
    """

    def __init__(self, opts: Any, totals: Tally, engine: Counter) -> None:
        """``opts``: the ``run.WatchOptions`` (windows, ``--poison-min``, the audit's steps);
        ``totals`` and ``engine``: the counters restored from the saved state."""
        self.opts = opts
        self.lock = threading.Lock()
        self.total = totals
        self.engine_errors = engine
        self.windows = Windows(opts.windows)
        self.detector = Detector(min_failures=opts.poison_min)
        self.started = time.time()
        self.last_line_at: float | None = None
        self.batches = 0
        self.lag_bytes: dict[str, int] = {}
        self.lag_seconds: dict[str, float] = {}
        self.follow_events: dict[str, int] = {}
        self.hooks: Counter = Counter()
        #: request-log events that are no structured output (``sglang_log.adapt``)
        self.skipped = 0
        #: bounded tool label values and the invented-name sample (``tools.py``)
        self.tools = ToolLabels()
        #: the cumulative counters as last published (``publish``)
        self.shown: dict[str, Any] = {}
        self.publish()

    def publish(self) -> None:
        """Show the cumulative counters as they are now (call once they are saved)."""
        with self.lock:
            t = self.total
            self.shown = {
                "lines": t.lines + self.skipped,
                "skipped_lines": self.skipped,
                "outputs": t.outputs,
                "ok": t.ok,
                "input_errors": t.input_errors,
                "by_schema": {s: dict(c) for s, c in sorted(t.by_schema.items())},
                "parse_failures": dict(t.parse_failures),
                "diagnoses": dict(t.diagnoses),
                "engine_errors": dict(self.engine_errors),
                "poisoned_flags": dict(self.detector.flag_count),
                "tool_steps": {s: list(v) for s, v in sorted(t.tool_steps.items())},
                "unknown_tools": dict(self.tools.sample),
                "unknown_tools_unsampled": self.tools.unsampled,
            }

    def add(
        self, tally: Tally, errors: list[tuple[str, str]], now: float, skipped: int = 0
    ) -> list[str]:
        """Count one batch; the schemas it newly flagged as poisoned."""
        mono = time.monotonic()
        with self.lock:
            self.total.merge(tally)
            self.skipped += skipped
            self.batches += 1
            if tally.lines or skipped:
                self.last_line_at = now
            self.windows.add_batch(tally.by_schema, mono)
            new = self.detector.add_batch(tally.by_schema, tally.fail_runs, mono)
            for schema, msg in errors:
                self.engine_errors[schema] += 1
                new += self.detector.add_engine_error(schema, msg, mono)
        return new

    def snapshot(self) -> dict[str, Any]:
        """Everything ``/metrics`` and ``--json-lines`` show, as plain data."""
        steps = list(self.opts.audit.steps or [1])
        with self.lock:
            c = self.shown
            n, ok = c["outputs"], c["ok"]
            p = ok / n if n else None
            ci = wilson(ok, n)
            return {
                "time": time.time(),
                "lines": c["lines"],
                "skipped_lines": c["skipped_lines"],
                "outputs": n,
                "ok": ok,
                "p": p,
                "p_ci95": list(ci) if ci else None,
                "compound": compound(p, ci, steps)["compound"],
                "input_errors": c["input_errors"],
                "by_schema": c["by_schema"],
                "parse_failures": c["parse_failures"],
                "diagnoses": c["diagnoses"],
                "engine_errors": c["engine_errors"],
                "windows": self.windows.snapshot(time.monotonic(), steps),
                "poisoned": {
                    s: {"reason": f["reason"], "for_s": round(time.monotonic() - f["since"], 3)}
                    for s, f in sorted(self.detector.flagged.items())
                },
                "poisoned_flags": c["poisoned_flags"],
                "tools": _tools(c, steps),
                "hooks": {f"{s}\x00{r}": n for (s, r), n in self.hooks.items()},
                "lag_bytes": dict(self.lag_bytes),
                "lag_seconds": dict(self.lag_seconds),
                "last_line_at": self.last_line_at,
                "started": self.started,
                "follow": dict(self.follow_events),
            }


def _tools(c: dict[str, Any], steps: list[int]) -> dict[str, Any]:
    """Per tool set: its tools' counters and p, its agent steps and step p (``tools.py``;
    an agent step as the audit's, ``tally/toolsummary.py``); {} without tool calls."""
    sets = sorted(c["tool_steps"])
    rows = tool_rows(c["by_schema"], sets)
    out: dict[str, Any] = {}
    for s in sets:
        n, good = c["tool_steps"][s]
        sp = good / n if n else None
        out[s] = {
            "tools": rows.get(s, {}),
            "steps": n,
            "steps_ok": good,
            "step_p": sp,
            "step_compound": {str(k): (None if sp is None else sp**k) for k in steps},
        }
    if out or c["unknown_tools"] or c["unknown_tools_unsampled"]:
        return {
            "sets": out,
            "unknown_tools": c["unknown_tools"],
            "unknown_tools_unsampled": c["unknown_tools_unsampled"],
        }
    return {}


def summary_line(snap: dict[str, Any]) -> dict[str, Any]:
    """The ``--json-lines`` row: the snapshot with the hook counts as a nested object."""
    hooks: dict[str, dict[str, int]] = {}
    for key, n in snap["hooks"].items():
        schema, result = key.split("\x00", 1)
        hooks.setdefault(schema, {})[result] = n
    return {**{k: v for k, v in snap.items() if k not in ("hooks", "started")}, "hooks": hooks}
