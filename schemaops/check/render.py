"""Terminal rendering of a check report: one line per schema, then what to change.

Every piece of text that comes from a schema, a backend or the command line (names, error
messages, the tokenizer path) goes through audit's ``esc``: control characters written as
escapes (a file named ``a\x1b[2J.json`` must not clear the terminal) and rich markup escaped
(rich reads ``[/...]`` as markup and a schema named "Orders endpoint [/v2/orders]" would
otherwise crash the output).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from schemaops.audit.report.terminal import esc
from schemaops.check.gate import CheckReport


def print_check(report: CheckReport, console: Console | None = None) -> None:
    """Human output: one line per schema, then what to change under each failing one."""
    con = console or Console()
    if console is None and not con.is_terminal:
        con = Console(width=160)  # piped into a CI log: keep one problem per line
    for c in report.cases:
        if c.status == "ok" and isinstance(c.compile_ms, (int, float)):
            what = f"{c.compile_ms:.1f} ms, {c.verdict}"
            enf = c.result.get("enforcement") or {}
            if enf.get("rejects_valid_content") or enf.get("accepted_retokenized"):
                what += (
                    f", non-ASCII: {enf.get('rejects_valid_content', 0)} refused, "
                    f"{enf.get('accepted_retokenized', 0)} retokenized"
                )
        else:
            what = c.status
        mark = "[green]PASS[/]" if c.passed else "[red]FAIL[/]"
        con.print(f"{mark} {esc(c.schema)}  ({esc(what)})")
        for p in c.problems:
            con.print(f"     - {esc(p.message)}: [bold]{esc(p.fix)}[/]")
        for w in c.warnings:
            con.print(f"     [yellow]warning[/]: {esc(w)}")
        if not c.passed:  # why this route: part of what to change on a failing schema
            for n in c.notes:
                con.print(f"     [dim]note: {esc(n)}[/]")
    for line in _routes(report):
        con.print(f"[dim]{esc(line)}[/]")
    ok = len(report.cases) - len(report.failed)
    con.print(
        f"\n{ok}/{len(report.cases)} schema(s) ready for {esc(report.backend)} "
        f"(compile budget {report.budget_ms:g} ms, tokenizer {esc(report.tokenizer)}"
        f"{measured_on(report.backend, report.settings)})"
    )
    counts = report.example_counts()
    con.print(
        f"non-ASCII valid examples: {counts['rejects_valid_content']} refused under every "
        f"tokenization tried, {counts['accepted_retokenized']} produced only by another "
        "tokenization"
    )
    if report.settings.get("engine"):  # check --engine: the versions behind the walk
        from schemaops.check.engine import versions_line

        for line in versions_line(report.settings).split("\n"):
            con.print(esc(line))


def _routes(report: CheckReport) -> list[str]:
    """``check --engine``: one line per route the engine takes (backend and why), with how
    many schemas take it, instead of the same note under every schema."""
    counts: dict[tuple[str, str], int] = {}
    for c in report.cases:
        route = c.result.get("engine_route") or {}
        if route.get("served_by") and not route.get("rejected"):
            key = (str(route["served_by"]), str(route.get("reason") or ""))
            counts[key] = counts.get(key, 0) + 1
    return [
        f"{report.backend} serves {n} schema(s) with {b}" + (f" ({why})" if why else "")
        for (b, why), n in counts.items()
    ]


def measured_on(backend: str, settings: dict[str, Any]) -> str:
    """``, xgrammar on 8 compile threads, host 16 CPUs (4 usable)``: compile times depend
    on both, so every report says them."""
    host = settings.get("host") or {}
    threads = settings.get("compile_threads")
    out = ""
    if backend == "xgrammar" and threads:
        out += f", xgrammar on {threads} compile thread(s)"
    if host.get("cpus"):
        usable = host.get("usable")
        extra = f" ({usable} usable)" if usable and usable != host["cpus"] else ""
        out += f", host {host['cpus']} CPU(s){extra}"
    return out
