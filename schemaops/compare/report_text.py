"""Terminal rendering of a compare report (rich tables on stderr-safe consoles).

Text from schemas, corpora and backends (names, keywords, reasons naming schemas, the
source path) is escaped: rich reads ``[/...]`` as markup, and a corpus id like
"Orders endpoint [/v2/orders]" would otherwise crash the table.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from schemaops.compare.report import CompareReport, backend_summary, keyword_cell, verdict_of

# Past this many schemas the per-schema table is noise; the summary says it all.
MAX_SCHEMA_ROWS = 60

_STYLE = {
    "ok": "green",
    "enforced": "green",
    "accepts_invalid": "red",
    "rejects_valid": "yellow",
    "unsupported": "magenta",
    "timeout": "red",
    "crash": "red",
    "oom": "red",
    "error": "red",
    "unchecked": "dim",
    "failed": "red",
}


def _f(x: Any, unit: str = "", nd: int = 1) -> str:
    if x is None:
        return "-"
    return f"{x:,.{nd}f}{unit}"


def _cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "-"
    st = r.get("status", "?")
    if st != "ok":
        return f"[{_STYLE.get(st, 'red')}]{st}[/]"
    v = verdict_of(r)
    mask = (r.get("mask_us") or {}).get("p50")
    return f"{_f(r.get('compile_ms'), ' ms')} · {_f(mask, ' µs')}\n[{_STYLE.get(v, 'white')}]{v}[/]"


def summary_table(report: CompareReport) -> Table:
    """One row per backend: coverage, compile and mask percentiles, enforcement counts."""
    host = (report.settings.get("host") or {}).get("cpus")
    threads = report.settings.get("compile_threads")
    where = (f", host {host} CPU(s)" if host else "") + (
        f", xgrammar compiles on {threads} thread(s)"
        if threads and "xgrammar" in report.backends
        else ""
    )
    t = Table(
        title=f"Backends on {escape(report.source)} (tokenizer {escape(report.tokenizer)}{where})"
    )
    for col in ("backend", "coverage", "compile p50", "p90", "p99", "mask p50", "mask p99"):
        t.add_column(col, justify="left" if col == "backend" else "right", no_wrap=True)
    t.add_column("enf/acc_inv/rej_val/unchk", justify="right", no_wrap=True)
    t.add_column("non-ASCII rej/retok", justify="right", no_wrap=True)
    t.add_column("not ok")
    t.caption = (
        "enforcement verdicts per schema: enforced / accepts_invalid / rejects_valid / "
        "unchecked (no examples); non-ASCII: valid examples refused inside a non-ASCII string "
        "under every tokenization tried / produced only by another tokenization"
    )
    for b, s in report.summary().items():
        cov = s["coverage"]
        e = s["enforcement"]
        bad = ", ".join(f"{k} {v}" for k, v in s["status"].items() if k != "ok") or "-"
        t.add_row(
            escape(b),
            f"{s['ok']}/{s['schemas']} ({cov:.0%})" if cov is not None else "-",
            _f(s["compile_ms"]["p50"], " ms"),
            _f(s["compile_ms"]["p90"], " ms"),
            _f(s["compile_ms"]["p99"], " ms"),
            _f(s["mask_us"]["p50"], " µs"),
            _f(s["mask_us"]["p99"], " µs"),
            f"{e['enforced']} / {e['accepts_invalid']} / {e['rejects_valid']} / {e['unchecked']}",
            f"{s['rejects_valid_content']} / {s['accepted_retokenized']}",
            bad,
        )
    return t


def schema_table(report: CompareReport) -> Table:
    """One row per schema, one column per backend: compile · mask p50, then the verdict."""
    t = Table(title="Per schema (compile · mask p50/token, enforcement)")
    t.add_column("schema")
    for b in report.backends:
        t.add_column(escape(b))
    idx = {(str(r.get("schema")), r.get("backend")): r for r in report.results}
    for name in report.schemas():
        t.add_row(escape(name), *(_cell(idx.get((name, b))) for b in report.backends))
    return t


def keyword_rich_table(report: CompareReport) -> Table | None:
    """keyword x backend: how many schemas where the backend enforced/ignored/rejected it."""
    kws = report.keywords()
    if not kws:
        return None
    t = Table(title="Per keyword: invalid examples refused / let through / schema not compiled")
    t.add_column("keyword")
    for b in report.backends:
        t.add_column(escape(b), justify="right")
    for kw, cells in kws.items():
        t.add_row(escape(kw), *(keyword_cell(cells.get(b), "-") for b in report.backends))
    return t


# At most this many "why no evidence" lines: a corpus may have thousands.
MAX_NOTES = 10


def evidence_notes(report: CompareReport) -> list[str]:
    """Why results have no or less evidence: examples that could not be prepared or
    generated (``instance_errors``) and unchecked verdicts' reasons, one line each."""
    notes: list[str] = []
    for r in report.results:
        why = list(r.get("instance_errors") or [])
        reason = (r.get("enforcement") or {}).get("reason")
        if verdict_of(r) == "unchecked" and reason and reason not in why:
            why.append(str(reason))
        for w in why:
            notes.append(f"{r.get('schema')} on {r.get('backend')}: {w}")
    return notes


#: a mask p99 this many times its p50 is explained under the summary table
TAIL_RATIO = 100


def mask_tail_notes(report: CompareReport) -> list[str]:
    """Why a backend's mask p99 is orders of magnitude above its p50 (issue 34: "a p99 of
    ~10 ms next to a p50 of 2 µs is unexplained"): which schema carries the tail, and where
    the per-schema figures are. One line per backend whose p99 is ``TAIL_RATIO`` x its p50."""
    out = []
    for backend, rows in report.by_backend().items():
        mask = backend_summary(rows)["mask_us"]
        p50, p99 = mask.get("p50"), mask.get("p99")
        if not p50 or not p99 or p99 < TAIL_RATIO * p50:
            continue
        worst = max(
            (r for r in rows if (r.get("mask_us") or {}).get("p99") is not None),
            key=lambda r: r["mask_us"]["p99"],
        )
        out.append(
            f"{backend}: mask p99 {_f(p99, ' µs')} vs p50 {_f(p50, ' µs')}: the slowest 1 % of "
            f"tokens, worst in {worst.get('schema')} (p99 {_f(worst['mask_us']['p99'], ' µs')}); "
            "per-schema mask_us in --json; a busy host adds its pauses here too "
            "(docs/glossary.md#mask-p50--p99)"
        )
    return out


def print_report(report: CompareReport, console: Console | None = None) -> None:
    """Print the tables and the recommendation."""
    con = console or Console()
    if console is None and not con.is_terminal:
        con = Console(width=160)  # piped output: don't squeeze tables into 80 columns
    if len(report.schemas()) <= MAX_SCHEMA_ROWS:
        con.print(schema_table(report))
    con.print(summary_table(report))
    if report.toolsets:
        from schemaops.compare.toolsets import toolset_rows

        tt = Table(title="Tool sets (as the engines compile them: compile · mask p50/token)")
        for col in ("tool set [engine tool_choice]", "tools", *report.backends):
            tt.add_column(escape(col))
        for row in toolset_rows(report.toolsets, report.backends):
            tt.add_row(*(escape(c) for c in row))
        con.print(tt)
        for note in report.settings.get("tool_sets") or []:
            con.print(f"[dim]note: {escape(str(note))}[/dim]")
    for note in mask_tail_notes(report):
        con.print(f"[dim]note: {escape(note)}[/dim]")
    kt = keyword_rich_table(report)
    if kt is not None:
        con.print(kt)
    notes = evidence_notes(report)
    if notes:
        con.print(f"\n[bold]Evidence gaps ({len(notes)})[/bold]")
        for n in notes[:MAX_NOTES]:
            con.print(f"  • {escape(n)}")
        if len(notes) > MAX_NOTES:
            con.print(f"  … {len(notes) - MAX_NOTES} more in --json (instance_errors, reason)")
    rec = report.recommendation
    if rec:
        head = rec.get("backend") or "none"
        con.print(f"\n[bold]Recommendation: {escape(head)}[/bold]")
        for r in rec.get("reasons", []):
            con.print(f"  • {escape(str(r))}")
        for r in rec.get("tradeoffs", []):
            con.print(f"  [dim]trade-off:[/dim] {escape(str(r))}")
