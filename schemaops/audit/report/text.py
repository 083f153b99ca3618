"""Small formatting helpers shared by the terminal, Markdown and HTML reports."""

from __future__ import annotations

import re

from schemaops.strings import INVISIBLE, plural


def visible(text: object) -> str:
    """``text`` with every control character written as an escape (``\\x1b``, ``\\u202e``):
    model output and record fields reach reports, and raw they would drive the terminal."""
    return INVISIBLE.sub(_escape_char, str(text))


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(m: re.Match) -> str:
    named = _NAMED.get(m.group(0))
    if named is not None:
        return named
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def fmt_p(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.2%}"


def fmt_ci(ci: list[float] | None) -> str:
    return "" if not ci else f"[{ci[0]:.2%}, {ci[1]:.2%}]"


def headline(doc: dict) -> str:
    """One line: outputs, p with its interval, and p^n at the largest step count."""
    n = max(doc["steps"])
    left_out = " (excluded from p)" if doc["input_errors"] else ""
    return (
        f"{doc['total']:,} total: {plural(doc['outputs'], 'output')} classified,"
        f" {doc['ok']:,} ok, {plural(doc['input_errors'], 'input error')}{left_out}."
        " Per-step success p ="
        f" {fmt_p(doc['p'])}"
        f" {fmt_ci(doc['p_ci95'])}; p^{n} = {fmt_p(doc['compound'][str(n)])}"
        f" {fmt_ci(doc['compound_ci95'][str(n)])}"
    )
