"""``/metrics`` of ``watch``: prometheus-client's HTTP server over a custom collector.

Every scrape renders one snapshot of the live counters (``live.Live.snapshot``, taken under
its lock), so the series of one scrape agree with each other. Series (``schemaops_`` first):

- counters: ``watch_outputs_total{schema,category}``, ``watch_lines_total``,
  ``watch_skipped_lines_total``,
  ``watch_input_errors_total``, ``watch_parse_failures_total{subtype}``,
  ``watch_diagnoses_total{diagnosis}``, ``watch_engine_errors_total{schema}``,
  ``watch_poisoned_flags_total{schema}``, ``watch_hook_runs_total{schema,result}``,
  ``watch_rotations_total``, ``watch_truncations_total``, ``watch_unreadable_files_total``,
  ``watch_lost_rotations_total``;
- gauges: ``watch_p{schema,window}``, ``watch_window_outputs{schema,window}``,
  ``watch_compound{schema,window,steps}``, ``watch_poisoned{schema}`` (1 while flagged),
  ``watch_lag_bytes{file}``, ``watch_lag_seconds{file}``,
  ``watch_last_line_timestamp_seconds``, ``watch_start_time_seconds``;
- the audit's series (``metrics.SERIES``) with ``input="watch"``, cumulative since the
  saved state began: ``audit_outputs``, ``audit_p``, ``audit_p_ci95``, ``audit_compound``,
  ``audit_schema_p``, ``audit_input_errors``, ``audit_diagnoses``: the audit panels of the
  Grafana board show the live values.

Listens on 127.0.0.1 unless told otherwise (``--listen``); never on all interfaces by
default: the series name schemas and files.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from schemaops.errors import InputError
from schemaops.metrics import SERIES

INPUT = "watch"


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> (host, port); InputError otherwise."""
    m = re.fullmatch(r"\[([0-9a-fA-F:.]+)\]:(\d{1,5})|([^:\s]+):(\d{1,5})", text.strip())
    if m is None:
        raise InputError(f"--listen expects HOST:PORT (e.g. 127.0.0.1:9464), got {text!r}")
    host = m.group(1) or m.group(3)
    port = int(m.group(2) or m.group(4))
    if port > 65535:
        raise InputError(f"--listen: port {port} is out of range")
    return host, port


class _Collector(Collector):
    def __init__(self, live: Any) -> None:
        self.live = live

    def collect(self) -> Iterator[Metric]:
        yield from families(self.live.snapshot())


def families(snapshot: dict[str, Any]) -> Iterator[Metric]:
    """Every series of one snapshot (``live.Live.snapshot``), each family even when empty."""
    yield from _counters(snapshot)
    yield from _gauges(snapshot)
    yield from _audit(snapshot)
    yield from _tools(snapshot)


def _tools(s: dict[str, Any]) -> Iterator[Metric]:
    """Tool calls per tool set and tool (label values bounded: ``watch/tools.py``)."""
    tools = s.get("tools") or {}
    sets = tools.get("sets") or {}
    calls = _c("tool_calls", "Tool calls judged against a tool set, per tool and category"
               " (invented names counted as '(unknown tool)').",
               ["tool_set", "tool", "category"])  # fmt: skip
    p = _g("tool_p", "ok / tool calls per tool, since the state began.", ["tool_set", "tool"])
    steps = _c("tool_steps", "Agent steps (one response, all its parallel calls) per tool set,"
               " good when every call is.", ["tool_set", "result"])  # fmt: skip
    step_p = _g("tool_step_p", "Good agent steps / agent steps per tool set.", ["tool_set"])
    unknown = _c("unknown_tool_calls", "Calls to a function the tool set does not offer.",
                 ["tool_set"])  # fmt: skip
    for ts, row in sets.items():
        n_unknown = 0
        for tool, r in row["tools"].items():
            for cat, n in r["categories"].items():
                calls.add_metric([ts, tool, cat], n)
            n_unknown += r["categories"].get("unknown_tool", 0)
            if r["p"] is not None:
                p.add_metric([ts, tool], r["p"])
        steps.add_metric([ts, "ok"], row["steps_ok"])
        steps.add_metric([ts, "failed"], row["steps"] - row["steps_ok"])
        if row["step_p"] is not None:
            step_p.add_metric([ts], row["step_p"])
        unknown.add_metric([ts], n_unknown)
    yield from (calls, p, steps, step_p, unknown)


def _c(name: str, doc: str, labels: list[str]) -> CounterMetricFamily:
    return CounterMetricFamily(f"schemaops_watch_{name}", doc, labels=labels)


def _g(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"schemaops_watch_{name}", doc, labels=labels)


def _counters(s: dict[str, Any]) -> Iterator[Metric]:
    m = _c("outputs", "Outputs classified since the state began, per schema and category.",
           ["schema", "category"])  # fmt: skip
    for schema, cats in s["by_schema"].items():
        for cat, n in cats.items():
            m.add_metric([schema, cat], n)
    yield m
    for name, doc, value in (
        ("lines", "JSONL lines read.", s["lines"]),
        ("skipped_lines", "Request-log lines that are no structured output (received events, "
         "requests without json_schema).", s["skipped_lines"]),
        ("input_errors", "Lines that were no usable record (malformed, hostile, errors).",
         s["input_errors"]),
        ("rotations", "Followed files rotated away or removed.", s["follow"].get("rotations", 0)),
        ("truncations", "Followed files truncated (read again from 0).",
         s["follow"].get("truncations", 0)),
        ("unreadable_files", "Files that could not be read (not regular, broken gzip).",
         s["follow"].get("unreadable", 0)),
        ("lost_rotations", "Followed files gone before they were read to their end (removed "
         "while watch was down or while closed): their unread lines are lost.",
         s["follow"].get("lost_rotations", 0)),
    ):  # fmt: skip
        m = _c(name, doc, [])
        m.add_metric([], value)
        yield m
    for name, doc, label, values in (
        ("parse_failures", "JSON parse failures per subtype.", "subtype", s["parse_failures"]),
        ("diagnoses", "Failed outputs per diagnosis (audit diagnoses).", "diagnosis",
         s["diagnoses"]),
        ("engine_errors", "Records of the engine's invalid-grammar error, per schema.",
         "schema", s["engine_errors"]),
        ("poisoned_flags", "Times a schema was flagged as poisoned.", "schema",
         s["poisoned_flags"]),
    ):  # fmt: skip
        m = _c(name, doc, [label])
        for k, n in values.items():
            m.add_metric([str(k)], n)
        yield m
    m = _c("hook_runs", "--on-poisoned hook runs per schema and result.", ["schema", "result"])
    for key, n in s["hooks"].items():
        schema, result = key.split("\x00", 1)
        m.add_metric([schema, result], n)
    yield m


def _gauges(s: dict[str, Any]) -> Iterator[Metric]:
    p = _g("p", "Per-output success p per schema over the window.", ["schema", "window"])
    n = _g("window_outputs", "Outputs per schema over the window.", ["schema", "window"])
    comp = _g("compound", "Compound success p^n per schema over the window.",
              ["schema", "window", "steps"])  # fmt: skip
    for window, rows in s["windows"].items():
        for schema, r in rows.items():
            n.add_metric([schema, window], r["outputs"])
            if r["p"] is not None:
                p.add_metric([schema, window], r["p"])
                for k, v in r["compound"].items():
                    comp.add_metric([schema, window, k], v)
    yield from (p, n, comp)
    poisoned = _g("poisoned", "1 while the schema is flagged as poisoned, else 0.", ["schema"])
    for schema in s["poisoned_flags"]:
        poisoned.add_metric([schema], 1 if schema in s["poisoned"] else 0)
    yield poisoned
    lag_b = _g("lag_bytes", "Bytes of the file not read yet.", ["file"])
    lag_s = _g("lag_seconds", "Seconds since the reader last reached the file's end.", ["file"])
    for f, v in s["lag_bytes"].items():
        lag_b.add_metric([f], v)
    for f, v in s["lag_seconds"].items():
        lag_s.add_metric([f], v)
    yield from (lag_b, lag_s)
    last = _g("last_line_timestamp_seconds", "Unix time a batch of new lines was last read.", [])
    if s["last_line_at"] is not None:
        last.add_metric([], s["last_line_at"])
    yield last
    start = _g("start_time_seconds", "Unix time this watch process started.", [])
    start.add_metric([], s["started"])
    yield start


def _audit_gauge(name: str) -> GaugeMetricFamily:
    help_text, labels = SERIES[name]
    return GaugeMetricFamily(f"schemaops_{name}", help_text, labels=list(labels))


def _audit(s: dict[str, Any]) -> Iterator[Metric]:
    """The audit's gauges, cumulative, with ``input="watch"``."""
    outputs = _audit_gauge("audit_outputs")
    sp = _audit_gauge("audit_schema_p")
    for schema, cats in s["by_schema"].items():
        total = sum(cats.values())
        for cat, v in cats.items():
            outputs.add_metric([INPUT, schema, cat], v)
        if total:
            sp.add_metric([INPUT, schema], cats.get("ok", 0) / total)
    p = _audit_gauge("audit_p")
    ci = _audit_gauge("audit_p_ci95")
    comp = _audit_gauge("audit_compound")
    if s["p"] is not None:
        p.add_metric([INPUT], s["p"])
        ci.add_metric([INPUT, "low"], s["p_ci95"][0])
        ci.add_metric([INPUT, "high"], s["p_ci95"][1])
        for k, v in s["compound"].items():
            if v is not None:
                comp.add_metric([INPUT, k], v)
    ie = _audit_gauge("audit_input_errors")
    ie.add_metric([INPUT], s["input_errors"])
    dg = _audit_gauge("audit_diagnoses")
    for k, v in s["diagnoses"].items():
        dg.add_metric([INPUT, k], v)
    yield from (outputs, sp, p, ci, comp, ie, dg)


class MetricsServer:
    """``/metrics`` on ``listen`` in a daemon thread (``close`` stops it)."""

    def __init__(self, live: Any, listen: str) -> None:
        host, port = parse_listen(listen)
        reg = CollectorRegistry(auto_describe=False)
        reg.register(_Collector(live))
        try:
            self.server, self.thread = start_http_server(port, host, registry=reg)
        except OSError as exc:
            raise InputError(f"--listen {listen}: cannot listen ({exc.strerror or exc})") from None
        bound = self.server.server_address
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        self.address = f"{shown}:{bound[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
