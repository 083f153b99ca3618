"""Prometheus text files for ``audit``, ``warm`` and ``probe`` (``--prometheus FILE``).

Neither SGLang 0.5.23 (its ``sglang:grammar_*`` series are declared, never set) nor vLLM
exports grammar metrics, so schemaops writes its own findings as gauges in the text format
that node_exporter's textfile collector reads (``--collector.textfile.directory``; the file
name must end in ``.prom``). The file is written by ``prometheus_client.write_to_textfile``:
to a temporary file beside it, then renamed, so the collector never reads half a file.

Units follow Prometheus conventions: times in seconds, ratios in 0..1. Every gauge set is
labelled so one file per run and host can be collected side by side; a status or verdict is
one-hot (one series per possible value, 1 for the current one) so that dashboards can count
and colour them without string values.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, write_to_textfile

from schemaops.errors import InputError

PROBE_VERDICTS = ("enforced", "unconstrained", "rejected", "error", "unproven")
# a --registry row adds "leaky": canaries enforced, yet the real output fails the schema
REGISTRY_VERDICTS = (*PROBE_VERDICTS, "leaky")
WARM_STATUSES = ("warmed", "invalid", "failed", "timeout")


def write_textfile(path: str | Path, registry: CollectorRegistry) -> Path:
    """Write ``registry`` to ``path`` atomically (temporary file + rename)."""
    target = Path(path)
    if target.is_dir():
        raise InputError(f"--prometheus {target}: is a folder, expected a file path")
    try:
        write_to_textfile(str(target), registry)
    except OSError as exc:
        raise InputError(f"--prometheus {target}: cannot write ({exc.strerror or exc})") from None
    return target


def _stamp(reg: CollectorRegistry, command: str) -> None:
    g = Gauge(
        f"schemaops_{command}_last_run_timestamp_seconds",
        f"Unix time the last schemaops {command} run finished.",
        registry=reg,
    )
    g.set(time.time())


def _one_hot(gauge: Gauge, labels: list[str], values: tuple[str, ...], current: Any) -> None:
    """One series per possible value under ``labels``: 1 for ``current``, 0 for the others."""
    for v in values:
        gauge.labels(*labels, v).set(1 if current == v else 0)


#: every series but the run stamp: name (after ``schemaops_``) -> (help, label names); the
#: one place to add a series (then its command's contract in docs/contracts/). The entries
#: look alike by design: a table, one row per series.
SERIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "probe_up": ("1 when the server could be probed.", ("server",)),
    "probe_verdict": (
        "Probe verdict per request path (one series per verdict; 1 = current).",
        ("server", "engine", "path", "verdict"),
    ),
    "probe_enforced": (
        "1 when the path's canaries proved the constraint is applied, else 0.",
        ("server", "engine", "path"),
    ),
    "probe_registry_verdict": (
        "Verdict of one real request per registry schema (one-hot).",
        ("server", "schema", "verdict"),
    ),
    "warm_status": (
        "Warm status per schema and server (one series per status; 1 = current).",
        ("server", "schema", "api", "status"),
    ),
    "warm_cold_seconds": (
        "Wall time of the warming (cold) request, per schema, server and DP rank.",
        ("server", "schema", "rank"),
    ),
    "warm_probe_seconds": (
        "Wall time of the probe request after warming, per schema, server and DP rank.",
        ("server", "schema", "rank"),
    ),
    "warm_schemas": ("Rows (schema x server) per warm status.", ("status",)),
    "audit_outputs": (
        "Audited outputs per schema and category (ok, json_parse_failure, "
        "schema_violation:<keyword>).",
        ("input", "schema", "category"),
    ),
    "audit_parse_failures": ("JSON parse failures per subtype.", ("input", "subtype")),
    "audit_p": ("Per-output success rate p (ok / outputs).", ("input",)),
    "audit_p_ci95": ("Wilson 95% interval of p.", ("input", "bound")),
    "audit_compound": ("Compound success p^n of n independent steps.", ("input", "steps")),
    "audit_schema_p": ("Per-schema success rate.", ("input", "schema")),
    "audit_input_errors": ("Lines that were no valid record.", ("input",)),
    "audit_diagnoses": (
        "Failed outputs per diagnosis (whitespace_runaway, truncated_at_max_tokens, ...).",
        ("input", "diagnosis"),
    ),
    "audit_tool_calls": (
        "Tool calls judged against a tool set, per tool and category (invented names counted"
        " as '(unknown tool)').",
        ("input", "tool_set", "tool", "category"),
    ),
    "audit_tool_p": ("ok / tool calls per tool.", ("input", "tool_set", "tool")),
    "audit_tool_steps": (
        "Agent steps (one response, all its parallel calls) per tool set, good when every call is.",
        ("input", "tool_set", "result"),
    ),
    "audit_tool_step_p": ("Good agent steps / agent steps per tool set.", ("input", "tool_set")),
    "audit_unknown_tool_calls": (
        "Calls to a function the tool set does not offer.",
        ("input", "tool_set"),
    ),
}


def _gauge(reg: CollectorRegistry, name: str) -> Gauge:
    """The ``SERIES`` gauge ``schemaops_<name>`` in ``reg``."""
    help_text, labels = SERIES[name]
    return Gauge(f"schemaops_{name}", help_text, list(labels), registry=reg)


def _s(ms: Any) -> float | None:
    return None if ms is None else float(ms) / 1000.0


def probe_metrics(doc: dict[str, Any]) -> CollectorRegistry:
    """Probe verdict per path (one-hot), enforced 0/1, registry verdicts, up."""
    reg = CollectorRegistry()
    server = str(doc.get("server") or "")
    engine = str(doc.get("engine") or "")
    up = _gauge(reg, "probe_up")
    up.labels(server).set(0 if doc.get("error") else 1)
    verdict = _gauge(reg, "probe_verdict")
    enforced = _gauge(reg, "probe_enforced")
    from schemaops.probe.toolsets import row_name  # PATH[SET] for a registry tool-set row

    for p in doc.get("paths", []):
        path = row_name(p)  # two tool sets' rows of one path must not share a series
        _one_hot(verdict, [server, engine, path], PROBE_VERDICTS, p["verdict"])
        enforced.labels(server, engine, path).set(1 if p["verdict"] == "enforced" else 0)
    rows = doc.get("registry") or []
    if rows:
        rv = _gauge(reg, "probe_registry_verdict")
        for r in rows:
            _one_hot(rv, [server, r["schema"]], REGISTRY_VERDICTS, r["verdict"])
    _stamp(reg, "probe")
    return reg


def warm_metrics(doc: dict[str, Any]) -> CollectorRegistry:
    """Warm status per schema and server (one-hot), cold and probe seconds per DP rank."""
    reg = CollectorRegistry()
    status = _gauge(reg, "warm_status")
    cold = _gauge(reg, "warm_cold_seconds")
    probe = _gauge(reg, "warm_probe_seconds")
    counts = _gauge(reg, "warm_schemas")
    for st in WARM_STATUSES:
        counts.labels(st).set(sum(1 for r in doc.get("results", []) if r.get("status") == st))
    for r in doc.get("results", []):
        server, schema = str(r.get("server") or ""), str(r.get("schema") or "")
        _one_hot(status, [server, schema, str(r.get("api") or "")], WARM_STATUSES, r.get("status"))
        ranks = r.get("replicas") or [{"replica": 0, **r}]
        for rep in ranks:
            rank = str(rep.get("replica", 0))
            if (v := _s(rep.get("cold_ms"))) is not None:
                cold.labels(server, schema, rank).set(v)
            if (v := _s(rep.get("probe_ms"))) is not None:
                probe.labels(server, schema, rank).set(v)
    _stamp(reg, "warm")
    return reg


def _budget_metrics(reg: CollectorRegistry, src: str, budgets: list[dict[str, Any]]) -> None:
    """Per schema whose outputs were cut at max_tokens: the cut outputs and, when the records
    carried token counts, the recommended max_tokens (1 in ``..._lower_bound`` when it is only
    a lower bound: too many outputs were cut to see the needed length)."""
    cut = Gauge(
        "schemaops_audit_cut_outputs",
        "Outputs stopped by finish_reason length, per schema.",
        ["input", "schema"],
        registry=reg,
    )
    rec = Gauge(
        "schemaops_audit_recommended_max_tokens",
        "Recommended max_tokens per schema whose outputs were cut (from completion_tokens).",
        ["input", "schema"],
        registry=reg,
    )
    low = Gauge(
        "schemaops_audit_recommended_max_tokens_lower_bound",
        "1 when the recommended max_tokens is only a lower bound (too many outputs cut).",
        ["input", "schema"],
        registry=reg,
    )
    for b in budgets:
        schema = str(b["schema"])
        cut.labels(src, schema).set(b["cut"])
        if b["recommended_max_tokens"] is not None:
            rec.labels(src, schema).set(b["recommended_max_tokens"])
            low.labels(src, schema).set(1 if b["lower_bound"] else 0)


def tool_labels(doc: dict[str, Any]) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """An audit report's tool sets -> their label values, and its tool rows (``SET/FUNCTION``
    in ``by_schema``) -> (tool set, tool) label values, bounded as ``watch`` bounds them
    (``watch/tools.py``): a function the model invented is ``(unknown tool)`` (a model that
    makes up a name on every call would otherwise write a new series each time), and past
    ``MAX_OFFERED_SETS`` request-offered sets (by name) a set is ``offered-(other)`` and each
    of its rows ``offered-(other)/(other)``."""
    from schemaops.audit.tally.toolsummary import SEP, UNKNOWN_TOOL
    from schemaops.watch.tools import MAX_OFFERED_SETS, OFFERED, OTHER_SET, tool_label

    by_set = doc.get("by_tool_set") or {}
    kept = set(sorted(ts for ts in by_set if ts.startswith(OFFERED))[:MAX_OFFERED_SETS])
    sets: dict[str, str] = {}
    rows: dict[str, tuple[str, str]] = {}
    for ts, row in by_set.items():
        sets[ts] = OTHER_SET if ts.startswith(OFFERED) and ts not in kept else ts
        for fn, r in (row.get("tools") or {}).items():
            invented = bool((r.get("categories") or {}).get(UNKNOWN_TOOL))
            rows[f"{ts}{SEP}{fn}"] = tool_label(sets[ts], fn, invented)
    return sets, rows


def _tool_metrics(
    reg: CollectorRegistry, src: str, doc: dict[str, Any], labels: tuple[dict, dict]
) -> None:
    """Per tool set and tool: calls by category and p; per tool set: agent steps, step p and
    calls to functions it does not offer (the report's ``by_tool_set``, labels bounded)."""
    from schemaops.audit.tally.toolsummary import SEP, UNKNOWN_TOOL

    set_labels, row_labels = labels
    per_tool: dict[tuple[str, str], dict[str, int]] = {}
    per_set: dict[str, list[int]] = {}  # set label -> [steps, good steps, invented calls]
    for ts, row in (doc.get("by_tool_set") or {}).items():
        agg = per_set.setdefault(set_labels[ts], [0, 0, 0])
        agg[0] += row.get("steps") or 0
        agg[1] += row.get("steps_ok") or 0
        for fn, r in (row.get("tools") or {}).items():
            cats = per_tool.setdefault(row_labels[f"{ts}{SEP}{fn}"], {})
            for cat, n in (r.get("categories") or {}).items():
                cats[cat] = cats.get(cat, 0) + n
                if cat == UNKNOWN_TOOL:
                    agg[2] += n
    calls, p = _gauge(reg, "audit_tool_calls"), _gauge(reg, "audit_tool_p")
    for (ts, tool), cats in per_tool.items():
        for cat, n in cats.items():
            calls.labels(src, ts, tool, cat).set(n)
        total = sum(cats.values())
        if total:
            p.labels(src, ts, tool).set(cats.get("ok", 0) / total)
    steps, step_p = _gauge(reg, "audit_tool_steps"), _gauge(reg, "audit_tool_step_p")
    unknown = _gauge(reg, "audit_unknown_tool_calls")
    for ts, (n, good, invented) in per_set.items():
        steps.labels(src, ts, "ok").set(good)
        steps.labels(src, ts, "failed").set(n - good)
        if n:
            step_p.labels(src, ts).set(good / n)
        unknown.labels(src, ts).set(invented)


def audit_metrics(doc: dict[str, Any]) -> CollectorRegistry:
    """Outputs by schema and category, parse-failure subtypes, p, its CI and p^n; tool calls
    per tool set and tool (``tool_labels``: the same bounded names in ``audit_outputs``)."""
    reg = CollectorRegistry()
    src = str(doc.get("input") or "")
    labels = tool_labels(doc)
    rows: dict[str, dict[str, int]] = {}  # schema label -> category -> outputs
    for schema, s in (doc.get("by_schema") or {}).items():
        found = labels[1].get(schema)  # a tool row: its bounded (set, tool), as one name
        name = "/".join(found) if found is not None else str(schema)
        cats = rows.setdefault(name, {})
        for cat, n in (s.get("categories") or {}).items():
            cats[cat] = cats.get(cat, 0) + n
    outputs = _gauge(reg, "audit_outputs")
    for name, cats in rows.items():
        for cat, n in cats.items():
            outputs.labels(src, name, cat).set(n)
    sub = _gauge(reg, "audit_parse_failures")
    for st, n in (doc.get("parse_failures") or {}).items():
        sub.labels(src, st).set(n)
    p = _gauge(reg, "audit_p")
    if doc.get("p") is not None:
        p.labels(src).set(doc["p"])
    ci = _gauge(reg, "audit_p_ci95")
    if doc.get("p_ci95"):
        ci.labels(src, "low").set(doc["p_ci95"][0])
        ci.labels(src, "high").set(doc["p_ci95"][1])
    comp = _gauge(reg, "audit_compound")
    for n, v in (doc.get("compound") or {}).items():
        if v is not None:
            comp.labels(src, str(n)).set(v)
    sp = _gauge(reg, "audit_schema_p")
    for name, cats in rows.items():
        total = sum(cats.values())
        if total:
            sp.labels(src, name).set(cats.get("ok", 0) / total)
    ie = _gauge(reg, "audit_input_errors")
    ie.labels(src).set(doc.get("input_errors") or 0)
    dg = _gauge(reg, "audit_diagnoses")
    for name, d in (doc.get("diagnoses") or {}).items():
        dg.labels(src, name).set(d["count"])
    budgets = ((doc.get("diagnoses") or {}).get("truncated_at_max_tokens") or {}).get("budgets")
    if budgets:
        _budget_metrics(reg, src, budgets)
    if doc.get("by_tool_set"):
        _tool_metrics(reg, src, doc, labels)
    _stamp(reg, "audit")
    return reg
