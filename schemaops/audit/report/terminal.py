"""The terminal report (rich): summary, compound success, breakdowns, examples, gates.

Text from the audited data (file name, schema names, pointers made of output keys, messages,
output text) is shown through ``show``: control characters written as escapes (a key holding
ESC sequences must not drive the terminal) and rich markup escaped."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from schemaops.audit.report import inputerrors
from schemaops.audit.report.text import fmt_ci, fmt_p, headline, visible
from schemaops.audit.tally import diagnose
from schemaops.strings import plural


def esc(text: object) -> str:
    """Untrusted text for a rich string with markup: controls escaped, then markup."""
    return escape(visible(text))


def _at(entry: dict) -> str:
    """A line number, with its shard and line there when the input had several files."""
    if "shard" not in entry:
        return str(entry["line"])
    return f"{entry['line']} ({entry['shard']}:{entry['shard_line']})"


def render_terminal(
    doc: dict, console: Console | None = None, command: str = "schemaops audit"
) -> None:
    """Print the report of one ``--json`` document; ``command`` heads it (``watch --once``
    prints the same report of what it counted)."""
    con = console or Console(highlight=False)
    con.print(f"[bold]{esc(command)}[/bold] {esc(str(doc['input']))}")
    con.print(headline(doc))
    sources = doc.get("sources") or {}
    if sources:
        by = sorted(sources.items(), key=lambda kv: (-kv[1]["outputs"], kv[0]))
        shown = ", ".join(f"{src} {s['outputs']:,} ({s['ok']:,} ok)" for src, s in by[:10])
        more = f", {len(by) - 10} more" if len(by) > 10 else ""
        con.print("Outputs by source: " + visible(shown + more), markup=False)
    shards = doc.get("shards")
    if shards:  # several input files: how many, and each one that could not be read
        con.print(visible(f"Shards: {shards['audited']:,} of {shards['count']:,} audited"))
        for u in shards["unreadable"][:10]:
            con.print(f"[red]unreadable shard[/red] {esc(u['message'])}")
    if doc.get("log_events_skipped"):
        con.print(
            f"SGLang request log: {doc['log_events_skipped']:,} event(s) with no structured"
            " output (received events, requests without a json_schema) read and skipped"
        )
    if doc["input_errors"]:
        # each reason once, with its own lines (inputerrors.py)
        con.print(
            f"[yellow]{plural(doc['input_errors'], 'input error')}[/yellow] (not model outputs;"
            " excluded from p):"
        )
        for line in inputerrors.summary_lines(doc):
            con.print("  " + visible(line), markup=False)

    cats = Table(title="Outcomes", title_justify="left")
    for col in ("category", "count", "share"):
        cats.add_column(col, justify="left" if col == "category" else "right")
    n = doc["outputs"] or 1
    for cat, k in doc["categories"].items():
        cats.add_row(esc(cat), f"{k:,}", f"{k / n:.2%}")
        if cat == "json_parse_failure":
            for sub, j in doc["parse_failures"].items():
                cats.add_row(f"  └ {sub}", f"{j:,}", f"{j / n:.2%}")
    con.print(cats)

    comp = Table(title="Compound success (independent steps)", title_justify="left")
    for col in ("steps n", "p^n", "95% CI"):
        comp.add_column(col, justify="right")
    for s in doc["steps"]:
        comp.add_row(str(s), fmt_p(doc["compound"][str(s)]), fmt_ci(doc["compound_ci95"][str(s)]))
    con.print(comp)
    if "target" in doc:
        t = doc["target"]
        for s, need in t["required_p"].items():
            verdict = "[green]met[/green]" if t["met"][s] else "[red]not met[/red]"
            con.print(f"target p^{s} >= {t['compound']:g}: needs p >= {need:.5f} ({verdict})")

    ep = doc.get("episodes")
    if ep:
        con.print(
            f"Episodes: {ep['episodes']:,} (mean {ep['mean_steps']:.1f} steps): observed success"
            f" {fmt_p(ep['observed_success'])} {fmt_ci(ep['observed_ci95'])} vs"
            f" {fmt_p(ep['expected_independent'])} if steps failed independently"
            f" (gap {ep['gap']:+.1%}; {ep['mean_failures_per_failed_episode']:.2f} failures per"
            " failed episode)"
        )

    if len(doc["by_schema"]) > 1 or doc["outputs"] != doc["ok"]:
        tab = Table(title="By schema", title_justify="left")
        for col in ("schema", "outputs", "p", "failures"):
            tab.add_column(col, justify="left" if col in ("schema", "failures") else "right")
        for name, s in doc["by_schema"].items():
            fails = ", ".join(f"{c} {k}" for c, k in s["categories"].items() if c != "ok" and k)
            tab.add_row(esc(name), f"{s['outputs']:,}", fmt_p(s["p"]), esc(fails or "-"))
        con.print(tab)
    if doc.get("by_tool_set"):  # calls judged against tool sets (report/tools.py)
        from schemaops.audit.report import tools

        tab = Table(title="Tool calls and agent steps", title_justify="left")
        for col in tools.head(doc):
            first = col == "tool set"
            tab.add_column(col, justify="left" if first else "right", no_wrap=first)
        for row in tools.rows(doc):
            tab.add_row(*(esc(c) for c in row))
        con.print(tab)
        con.print(esc(tools.summary_line(doc)))
        con.print(esc(tools.STEP_NOTE))
    if doc.get("tools_hint"):
        con.print(f"Note: {esc(doc['tools_hint'])}")
    if doc["paths"]:
        tab = Table(title="Top failing locations", title_justify="left")
        for col in ("schema", "category", "path", "count"):
            tab.add_column(col, justify="right" if col == "count" else "left")
        for row in doc["paths"][:10]:
            tab.add_row(
                esc(row["schema"]),
                esc(row["category"]),
                esc(row["path"] or "(root)"),
                str(row["count"]),
            )
        con.print(tab)
    if doc.get("all_errors"):
        con.print(
            "All violations: "
            + visible(", ".join(f"{k} {v}" for k, v in doc["all_errors"].items()))
            + (
                f" ({doc['all_errors_incomplete']:,} output(s) counted only in part: the"
                " validation timeout or the nesting limit stopped the count)"
                if doc.get("all_errors_incomplete")
                else ""
            ),
            markup=False,
        )
    if doc["examples"]:
        con.print("[bold]Examples[/bold]")
        for key, exs in sorted(doc["examples"].items()):
            for e in exs[:2]:
                where = f" at {e['path'] or '(root)'}" if e["path"] is not None else ""
                con.print(
                    visible(f"  {key} line {_at(e)} ({e['schema']}){where}: {e['message']}"),
                    markup=False,
                )
                con.print(f"    {visible(repr(e['text'][:120]))}", markup=False)
    if doc["validation_timeouts"]["count"]:
        vt = doc["validation_timeouts"]
        con.print(
            f"[red]{vt['count']} record(s) timed out in validation[/red]"
            f" at line(s) {vt['lines'][:10]}"
        )
    dup = doc.get("duplicate_keys") or {}
    if dup.get("count"):
        con.print(
            f"[yellow]{dup['count']} output(s) repeat a name in one object[/yellow] (read as"
            f" JSON parsers do: the last value wins, and that is what was validated) at line(s)"
            f" {dup['lines'][:10]}"
        )
    for line in diagnose.terminal_lines(doc):
        con.print(line)
    for g in doc["gates"]:
        mark = "[green]PASS[/green]" if g["passed"] else "[red]FAIL[/red]"
        con.print(f"gate {g['gate']}: {mark} {g['reason']}")
