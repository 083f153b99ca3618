"""statistics -> the ``--json`` document (docs/contracts/audit.md) and the CI gates.

Every report (terminal, markdown, html) renders this one document, so they cannot disagree.
"""

from __future__ import annotations

from typing import Any

from schemaops import __version__
from schemaops.audit.report.inputerrors import group as group_input_errors
from schemaops.audit.tally.diagnose import summary as diagnoses_summary
from schemaops.audit.tally.ranking import ranked
from schemaops.audit.tally.stats import compound, episode_summary, required_p, wilson
from schemaops.audit.verdict.classify import OK, PARSE, SUBTYPES, VIOLATION

TOP_PATHS = 15


def _ordered_categories(categories: dict[str, int]) -> dict[str, int]:
    """ok, then parse failures, then violations by count (stable, readable order)."""
    out = {OK: categories.get(OK, 0)}
    if PARSE in categories:
        out[PARSE] = categories[PARSE]
    for k, v in sorted(categories.items(), key=lambda kv: (-kv[1], kv[0])):
        if k not in out:
            out[k] = v
    return out


NO_SCHEMA_ROW = "(none)"  # run/lines.NO_SCHEMA: outputs judged as JSON only


def tool_call_source(source: str) -> bool:
    """Whether an output's source field is a tool call's arguments (extract, hosted_bodies)."""
    return (
        "tool_calls[" in source
        or source.endswith(".input")
        or "functionCall" in source
        or (source.startswith("output[") and source.endswith(".arguments"))
    )


def to_json(result: Any) -> dict:
    """Build the contract document from an ``AuditResult``."""
    t = result.tally
    opts = result.options
    categories = dict(t.categories)
    categories[OK] = t.ok
    n = t.outputs
    p = t.ok / n if n else None
    ci = wilson(t.ok, n)
    comp = compound(p, ci, opts.steps)
    by_schema = {}
    for name in sorted(t.by_schema):
        c = t.by_schema[name]
        total = sum(c.values())
        by_schema[name] = {
            "outputs": total,
            "ok": c.get(OK, 0),
            "p": c.get(OK, 0) / total if total else None,
            "categories": _ordered_categories(dict(c)),
        }
    violations = {
        k.split(":", 1)[1]: v
        for k, v in sorted(t.categories.items(), key=lambda kv: -kv[1])
        if k.startswith(VIOLATION + ":")
    }
    doc: dict[str, Any] = {
        "schemaops": __version__,
        "input": result.input,
        "total": n + t.input_errors,
        "lines": t.lines,
        "outputs": n,
        "ok": t.ok,
        "input_errors": t.input_errors,
        "input_error_lines": t.input_error_lines,
        # each reason once with its lines (``inputerrors.group``), over the lines kept above
        "input_error_groups": group_input_errors(t.input_error_lines),
        "input_error_groups_complete": len(t.input_error_lines) == t.input_errors,
        "categories": _ordered_categories(categories),
        "parse_failures": {s: t.parse_failures[s] for s in SUBTYPES if t.parse_failures.get(s)},
        "schema_violations": violations,
        "p": p,
        "p_ci95": list(ci) if ci else None,
        "failure_rate": (1 - p) if p is not None else None,
        "steps": list(opts.steps),
        "compound": comp["compound"],
        "compound_ci95": comp["ci"],
        "by_schema": by_schema,
        # Which field of the record each output came from (extract.Output.source), by name.
        "sources": {
            src: {"outputs": k, "ok": k - t.source_failures.get(src, 0)}
            for src, k in sorted(t.sources.items())
        },
        "paths": [
            {"schema": s, "category": c, "path": path, "count": k}
            for (s, c, path), k in ranked(t.paths, TOP_PATHS)
        ],
        "examples": t.examples,
        "validation_timeouts": {"count": t.timeout_count, "lines": t.timeouts},
        # Outputs with a name repeated in one object (read last-wins, validated as read).
        "duplicate_keys": {"count": t.duplicate_keys, "lines": t.duplicate_key_lines},
        "format_asserted": opts.assert_format,
        "schemas": result.schemas,
        "jobs": result.jobs,
        "elapsed_s": round(result.elapsed_s, 3),
    }
    from schemaops.audit.tally.toolsummary import summary, tools_hint

    # calls judged against a tool set (--tools, a record's tool set field, a request's own
    # tools): per tool, per tool set, invented names, agent steps (tally/toolsummary.py)
    tool_doc = summary(by_schema, t.tool_steps, getattr(opts, "tools", None), list(opts.steps))
    doc.update(tool_doc)
    if (
        not tool_doc
        and NO_SCHEMA_ROW in by_schema
        and any(tool_call_source(src) for src in t.sources)
    ):
        hint = tools_hint(opts.registry)
        if hint:  # tool calls no schema is named like were judged as JSON only
            doc["tools_hint"] = (
                "tool calls to a function no registry schema is named like were judged as JSON"
                " only" + hint
            )
    if t.log_events:  # SGLang request-log events with no structured output (sglang_log.py)
        doc["log_events_skipped"] = t.log_events
    if result.shards is not None:  # several input files: how many, which were unreadable
        doc["shards"] = result.shards
    if result.ray is not None:  # --ray: the cluster it ran on
        doc["ray"] = result.ray
    if opts.target is not None:
        doc["target"] = {
            "compound": opts.target,
            "required_p": {str(s): required_p(opts.target, s) for s in opts.steps},
            "met": {str(s): (p is not None and p**s >= opts.target) for s in opts.steps},
        }
    if opts.all_errors:
        doc["all_errors"] = dict(ranked(t.all_errors))
        doc["all_errors_incomplete"] = t.all_errors_cut
    diagnoses = diagnoses_summary(t)
    if diagnoses:  # only when found: plain JSONL audits as before
        doc["diagnoses"] = diagnoses
    episodes = episode_summary(t, p)
    if episodes is not None:
        episodes["steps_by_compound"] = {str(s): p**s for s in opts.steps} if p is not None else {}
        doc["episodes"] = episodes
    doc["gates"] = gates(doc, opts)
    return doc


def input_error_limit(opts: Any) -> int | None:
    """The most input errors a run may have and pass (``--max-input-errors``), or None (no
    gate). Unset, it is 0 when another gate is asked for: p leaves input errors out, so a
    gate on p alone would pass a run whose failing records never reached it (a renamed
    schema turns all of its records into input errors)."""
    limit = getattr(opts, "max_input_errors", None)
    if limit is None and (opts.max_failure_rate is not None or opts.min_compound is not None):
        return 0
    return limit


def gates(doc: dict, opts: Any) -> list[dict]:
    """Evaluate ``--max-failure-rate`` and ``--min-compound`` (the latter at the largest
    ``--steps``) on the point estimates, and ``--max-input-errors`` (``input_error_limit``).
    No classified output means a gate cannot pass."""
    out = []
    p = doc["p"]
    if opts.max_failure_rate is not None:
        rate = doc["failure_rate"]
        passed = rate is not None and rate <= opts.max_failure_rate
        reason = (
            "no classified outputs"
            if rate is None
            else f"failure rate {rate:.2%} {'<=' if passed else '>'}"
            f" max {opts.max_failure_rate:.2%}"
        )
        out.append({"gate": "max_failure_rate", "passed": passed, "reason": reason})
    # Same shape as the gate above, different test and wording: kept as two plain blocks.
    if opts.min_compound is not None:
        n = max(opts.steps)
        value = p**n if p is not None else None
        passed = value is not None and value >= opts.min_compound
        reason = (
            "no classified outputs"
            if value is None
            else f"p^{n} = {value:.4f} {'>=' if passed else '<'} min {opts.min_compound:.4f}"
            f" (p = {p:.4f}; needs p >= {required_p(opts.min_compound, n):.5f})"
        )
        out.append({"gate": "min_compound", "passed": passed, "reason": reason})
    limit = input_error_limit(opts)
    if limit is not None:
        n = doc["input_errors"]
        passed = n <= limit
        said = getattr(opts, "max_input_errors", None) is not None
        reason = f"{n:,} input errors {'<=' if passed else '>'} max {limit:,} (lines p leaves out"
        reason += ")" if said else "; a gate allows none unless --max-input-errors N)"
        out.append({"gate": "max_input_errors", "passed": passed, "reason": reason})
    return out
