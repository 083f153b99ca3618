"""The terminal rendering of a probe document (``--json`` prints the document itself)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

_STYLE = {
    "enforced": "green",
    "unconstrained": "bold red",
    "rejected": "red",
    "error": "yellow",
    "unproven": "yellow",
}


def render(doc: dict[str, Any], console: Console | None = None) -> None:
    """A table of paths and verdicts, the registry rows, and the false-verdict bounds."""
    con = console or Console(highlight=False)
    if doc.get("error") and not doc.get("paths"):
        con.print(f"[red]probe: {escape(doc['error'])}[/red]")
        return
    facts = doc.get("server_facts") or {}
    said = ", ".join(f"{k}={v}" for k, v in facts.items())
    con.print(
        f"{escape(doc['server'])}  engine {doc['engine']}" + (f"  ({escape(said)})" if said else "")
    )
    table = Table(show_lines=False)
    for col in ("path", "verdict", "reason"):
        table.add_column(col, overflow="fold")
    for p in doc["paths"]:
        v = p["verdict"]
        reason = escape(p["reason"])
        if p.get("caveat"):
            reason += f" [dim](weaker evidence: {escape(p['caveat'])})[/dim]"
        table.add_row(p["path"], f"[{_STYLE[v]}]{v}[/]", reason)
    con.print(table)
    for r in doc.get("registry", []):
        why = f": {escape(r['reason'])}" if r.get("reason") else ""
        con.print(
            f"  registry {escape(r['schema'])}: {r['verdict']} "
            f"({escape(str(r.get('category')))}){why}"
        )
    fv = doc.get("false_verdict", {})
    if fv:
        con.print(
            f"false 'enforced' per satisfied canary <= {fv['p_false_enforced_json']:.1e} (JSON), "
            f"{fv['p_false_enforced_regex_ebnf']:.1e} (regex/ebnf), "
            f"{fv['p_false_enforced_choice']:.1e} (choice); false 'unconstrained': 0"
        )
    if doc.get("error"):
        con.print(f"[red]probe: {escape(doc['error'])}[/red]")
    elif doc.get("failed"):
        con.print(f"[red]not enforced: {escape(', '.join(doc['failed']))}[/red]")
