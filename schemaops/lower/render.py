"""Plain-text rendering of a ``LowerReport``: per schema, the served hash and wire string,
the rewrites with their exactness, the relaxation ladder's steps taken, and the residual the
application must check."""

from __future__ import annotations

import json
from typing import Any, TextIO

from schemaops.lower.run import LowerReport
from schemaops.strings import truncate


def _short(x: Any, n: int = 100) -> str:
    s = x if isinstance(x, str) else json.dumps(x, ensure_ascii=False)
    return truncate(s, n, "…")


def _full(x: Any) -> str:
    """A residual rule's value, whole: the application must implement it, so it is never cut
    (only the served wire string, which ``--out`` and ``--json`` hold in full, is)."""
    return x if isinstance(x, str) else json.dumps(x, ensure_ascii=False)


def print_lower(report: LowerReport, file: TextIO | None = None) -> None:
    """Write the report to ``file`` (default stdout)."""
    import sys

    out = file or sys.stdout
    w = out.write
    w(f"lower for {report.backend} ({report.registry})")
    w(f" -> {report.out}\n" if report.out else " (no --out: nothing written)\n")
    if report.engine:
        e = report.engine.to_dict()
        pins = ", ".join(f"{k} {v}" for k, v in e["pins"].items())
        w(f"engine {e['name']} {e['release']} configured {e['configured']} (pins {pins})\n")
    for c in report.cases:
        d = c.to_dict()
        mark = "ok" if d["lowered"] else "NOT LOWERED"
        comp = d["compile"]
        ms = f" {comp['compile_ms']:.0f} ms" if isinstance(comp["compile_ms"], (int, float)) else ""
        w(f"\n{c.name}: {mark} [{d['exactness']}] compile {comp['status']}{ms}, walk ")
        w(f"{comp['verdict']}\n")
        w(f"  original {d['original_hash'][:16]}  served {d['served_hash'][:16]}\n")
        w(f"  served wire: {_short(d['served_wire'], 160)}\n")
        if d["engine"]:
            eng = d["engine"]
            route = eng["route"]
            how = "HTTP 400" if route["rejected"] else f"served by {route['served_by']}"
            w(f"  engine: {how}; key on {eng['path']}: sha256 {eng['wire_sha256'][:16]}\n")
        ex = d["examples"]
        w(
            f"  examples: {ex['valid']} valid, {ex['invalid_walked']} invalid walked, "
            f"{ex['invalid_residual']} invalid left to the residual\n"
        )
        for r in d["rewrites"]:
            if r["rule"] == "residual":
                continue
            tag = "exact" if r["exact"] else "NARROWER"
            w(f"  rewrite {r['rule']} at {r['pointer'] or '/'} ({tag})\n")
        for rel in d["relaxations"]:
            w(
                f"  relaxation {rel['step']}: compile {rel['trigger']} -> {rel['status']}; "
                f"{len(rel['moved'])} constraint(s) moved to the residual ({rel['what']})\n"
            )
        if d["residual"]:
            w("  residual (check after decoding):\n")
            for r in d["residual"]:
                w(f"    {r['pointer']}: {r['keyword']}={_full(r['value'])}  ({r['reason']})\n")
        diff = d["differential"]
        if diff:
            w(
                f"  differential: {diff['from_original']}+{diff['from_served']} generated, "
                f"{diff['mutants']} mutants, {diff['residual_flagged']} flagged by the residual, "
                f"{'ok' if diff['ok'] else 'FAILED' if diff['failures'] else 'UNPROVEN'}\n"
            )
            for note in diff["notes"]:
                w(f"    note: {note}\n")
        for note in d["notes"]:
            w(f"  note: {note}\n")
        for why in d["unproven"]:
            w(f"  unproven (not claimed {d['claimed']}): {why}\n")
        for p in d["problems"]:
            w(f"  problem: {p}\n")
    n_bad = sum(1 for c in report.cases if not c.lowered_ok)
    if n_bad and report.out:
        w(f"not lowered: not written to {report.out} (reports only, in {report.out}/.lower/)\n")
    # a served schema without evidence (unproven) is not "proven": counted apart
    proven = sum(1 for c in report.cases if c.lowered_ok and not c.unproven)
    line = f"{proven} of {len(report.cases)} schema(s) lowered and proven"
    unproven = len(report.cases) - n_bad - proven
    if unproven:
        line += f"; {unproven} lowered but unproven (served, no exactness claim)"
    if n_bad:
        line += f"; {n_bad} not lowered"
    w(f"\n{line}\n")
