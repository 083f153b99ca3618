"""``--markdown FILE``: the report as GitHub-flavoured Markdown (for PR comments, CI summaries).

Everything that comes from the audited data (the input's name, schema names, JSON pointers made
of output keys, messages, output text) is untrusted (category names, numbers and gate reasons
are this package's own words): rendered raw it could carry HTML
(``<script>``, ``onerror=``) into a PR comment or break out of a code span with a backtick. So
text goes through ``_text`` (HTML-significant characters as entities, Markdown punctuation
backslash-escaped) and code through ``_code`` (a backtick fence longer than any run of
backticks inside, so nothing can close it early); control characters are written as escapes.
"""

from __future__ import annotations

import re
from pathlib import Path

from schemaops.audit.report import inputerrors
from schemaops.audit.report.text import fmt_ci, fmt_p, headline, visible
from schemaops.errors import InputError
from schemaops.strings import plural

# Inline Markdown syntax (the text never starts a line, so block markers like "#" or "1."
# cannot act): code, emphasis, links and images, table cells, strikethrough, escapes.
_MD_PUNCT = re.compile(r"([\\`*_\[\]|~])")
_BACKTICKS = re.compile(r"`+")
#: rows of the "By source" table (the rest are summed in one line)
MAX_SOURCES = 20


def _text(value: object) -> str:
    """Untrusted text as inert Markdown: no HTML, no emphasis, links, code or table breaks."""
    t = visible(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_PUNCT.sub(r"\\\1", t)


def _code(value: object, table: bool = False) -> str:
    """Untrusted text as one code span (shown verbatim, HTML inert inside code spans)."""
    t = visible(value)
    if table:  # GFM splits table cells on "|" even inside code spans unless escaped
        t = t.replace("|", "\\|")
    fence = "`" * (max((len(m) for m in _BACKTICKS.findall(t)), default=0) + 1)
    pad = " " if t.startswith(("`", " ")) or t.endswith(("`", " ")) or not t else ""
    return f"{fence}{pad}{t}{pad}{fence}"


def _cell(text: object) -> str:
    """A table cell of text this package wrote (numbers, category names)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(head: list[str], rows: list[list[object]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out + [""]


def _episodes_text(ep: dict) -> str:
    if ep["gap"] <= 0:
        return (
            f"{plural(ep['episodes'], 'episode')}: observed success"
            f" {fmt_p(ep['observed_success'])} vs {fmt_p(ep['expected_independent'])} expected"
            " under independence."
        )
    return (
        f"{plural(ep['episodes'], 'episode')}, mean {ep['mean_steps']:.1f} steps: observed success"
        f" {fmt_p(ep['observed_success'])} {fmt_ci(ep['observed_ci95'])}, versus"
        f" {fmt_p(ep['expected_independent'])} if steps failed independently (gap"
        f" {ep['gap']:+.1%}). A failed episode has"
        f" {ep['mean_failures_per_failed_episode']:.2f} failures on average: failures"
        " cluster, so p^n is a pessimistic bound for this workload."
    )


def _diagnoses(diag: dict) -> list[str]:
    """The diagnoses with their fixes, the poisoned schemas and the token budget per schema
    whose outputs were cut at max_tokens (``diagnose.summary``, ``budget.py``)."""
    if not diag:
        return []
    rows: list[list[object]] = [[name, d["count"], d["fix"]] for name, d in diag.items()]
    lines = ["## Diagnoses", ""] + _table(["diagnosis", "count", "fix"], rows)
    poisoned = (diag.get("poisoned") or {}).get("schemas") or []
    if poisoned:
        rows = [
            [_code(s["schema"], table=True), s["since_line"], s["failures"], s["ok_before"]]
            for s in poisoned
        ]
        lines += ["Poisoned schemas (every output fails from a line on):", ""]
        lines += _table(["schema", "since line", "failures", "ok before"], rows)
    budgets = (diag.get("truncated_at_max_tokens") or {}).get("budgets") or []
    if budgets:
        rows = [
            [
                _code(b["schema"], table=True),
                b["cut"],
                b["complete"],
                "-" if b["max_cut"] is None else b["max_cut"],
                "-"
                if b["recommended_max_tokens"] is None
                else ("≥ " if b["lower_bound"] else "") + str(b["recommended_max_tokens"]),
                b["why"],
            ]
            for b in budgets
        ]
        lines += ["Token budget per schema whose outputs were cut at max_tokens:", ""]
        head = ["schema", "cut", "complete", "longest cut", "recommended max_tokens", "why"]
        lines += _table(head, rows)
    return lines


def _sources(sources: dict) -> list[str]:
    """Outputs per source field (``text``, ``choices[1].text``, a tool call's arguments, the
    ``--field``): most outputs first, the first ``MAX_SOURCES`` rows (an answer with many
    choices gives a source per choice). Absent in documents written before ``sources``."""
    if not sources:
        return []
    by = sorted(sources.items(), key=lambda kv: (-kv[1]["outputs"], kv[0]))
    rows: list[list[object]] = [
        [
            _code(src, table=True),
            f"{s['outputs']:,}",
            f"{s['ok']:,}",
            fmt_p(s["ok"] / s["outputs"]) if s["outputs"] else "-",
        ]
        for src, s in by[:MAX_SOURCES]
    ]
    lines = ["## By source", ""] + _table(["source", "outputs", "ok", "p"], rows)
    if len(by) > MAX_SOURCES:
        rest = sum(s["outputs"] for _, s in by[MAX_SOURCES:])
        lines += [f"{len(by) - MAX_SOURCES} more source(s) with {rest:,} output(s).", ""]
    return lines


def render_markdown(doc: dict) -> str:
    """The Markdown text of one ``--json`` document."""
    n = doc["outputs"] or 1
    lines = [f"# schemaops audit: {_code(doc['input'])}", "", headline(doc), ""]
    if doc.get("log_events_skipped"):
        lines += [
            f"SGLang request log: {doc['log_events_skipped']:,} event(s) with no structured"
            " output, read and skipped.",
            "",
        ]
    if doc["input_errors"]:
        lines += [f"**{plural(doc['input_errors'], 'input error')}** (excluded from p):", ""]
        lines += [f"- {_text(x)}" for x in inputerrors.summary_lines(doc)] + [""]
    rows: list[list[object]] = []
    for cat, k in doc["categories"].items():
        rows.append([cat, f"{k:,}", f"{k / n:.2%}"])
        if cat == "json_parse_failure":
            rows += [[f"↳ {s}", f"{j:,}", f"{j / n:.2%}"] for s, j in doc["parse_failures"].items()]
    lines += ["## Outcomes", ""] + _table(["category", "count", "share"], rows)
    rows = [
        [s, fmt_p(doc["compound"][str(s)]), fmt_ci(doc["compound_ci95"][str(s)])]
        for s in doc["steps"]
    ]
    lines += ["## Compound success", "", "Assuming steps fail independently: p^n."]
    lines += [""] + _table(["steps n", "p^n", "95% CI"], rows)
    if "target" in doc:
        t = doc["target"]
        for s, need in t["required_p"].items():
            met = "met" if t["met"][s] else "not met"
            lines.append(f"- p^{s} >= {t['compound']:g} needs p >= {need:.5f} ({met})")
        lines.append("")
    ep = doc.get("episodes")
    if ep:
        lines += ["## Episodes", "", _episodes_text(ep), ""]
    rows = [
        [
            _code(name, table=True),
            f"{s['outputs']:,}",
            fmt_p(s["p"]),
            ", ".join(f"{c} {k}" for c, k in s["categories"].items() if c != "ok" and k) or "-",
        ]
        for name, s in doc["by_schema"].items()
    ]
    lines += ["## By schema", ""] + _table(["schema", "outputs", "p", "failures"], rows)
    if doc.get("by_tool_set"):  # calls judged against tool sets (report/tools.py)
        from schemaops.audit.report import tools

        rows = [[_code(r[0], table=True), *r[1:]] for r in tools.rows(doc)]
        lines += ["## Tool calls and agent steps", ""] + _table(tools.head(doc), rows)
        lines += [_text(tools.summary_line(doc)), "", _text(tools.STEP_NOTE), ""]
    lines += _sources(doc.get("sources") or {})
    if doc["paths"]:
        rows = [
            [
                _code(r["schema"], table=True),
                r["category"],
                _code(r["path"] or "(root)", table=True),
                r["count"],
            ]
            for r in doc["paths"]
        ]
        lines += ["## Top failing locations", ""]
        lines += _table(["schema", "category", "JSON pointer", "count"], rows)
    if doc["examples"]:
        lines += ["## Examples", ""]
        for key, exs in sorted(doc["examples"].items()):
            lines.append(f"### {key}")
            lines.append("")
            for e in exs:
                where = f" at {_code(e['path'] or '(root)')}" if e["path"] is not None else ""
                lines.append(
                    f"- line {e['line']} ({_code(e['schema'])}){where}: {_text(e['message'])}"
                )
                lines.append(f"  {_code(e['text'][:160])}")
            lines.append("")
    dup = doc.get("duplicate_keys") or {}
    if dup.get("count"):
        lines += [
            f"**{dup['count']} output(s) repeat a name in one object** (read as JSON parsers do:"
            f" the last value wins, and that is what was validated): lines"
            f" {', '.join(str(n) for n in dup['lines'][:10])}",
            "",
        ]
    vt = doc.get("validation_timeouts") or {}
    if vt.get("count"):
        lines += [
            f"**{vt['count']} output(s) cut off by --timeout**: lines"
            f" {', '.join(str(n) for n in vt['lines'][:10])}",
            "",
        ]
    lines += _diagnoses(doc.get("diagnoses") or {})
    if doc["gates"]:
        lines += ["## Gates", ""]
        lines += [
            f"- **{'PASS' if g['passed'] else 'FAIL'}** {g['gate']}: {g['reason']}"
            for g in doc["gates"]
        ] + [""]
    return "\n".join(lines)


def write_markdown(doc: dict, path: str | Path) -> None:
    try:
        Path(path).write_text(render_markdown(doc), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
