"""Small formatting helpers shared by the terminal, Markdown and HTML reports."""

from __future__ import annotations


def fmt_p(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.2%}"


def fmt_ci(ci: list[float] | None) -> str:
    return "" if not ci else f"[{ci[0]:.2%}, {ci[1]:.2%}]"


def headline(doc: dict) -> str:
    """One line: outputs, p with its interval, and p^n at the largest step count."""
    n = max(doc["steps"])
    return (
        f"{doc['total']:,} total: {doc['outputs']:,} outputs classified, {doc['ok']:,} ok,"
        f" {doc['input_errors']:,} input errors. Per-step success p = {fmt_p(doc['p'])}"
        f" {fmt_ci(doc['p_ci95'])}; p^{n} = {fmt_p(doc['compound'][str(n)])}"
        f" {fmt_ci(doc['compound_ci95'][str(n)])}"
    )
