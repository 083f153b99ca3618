"""The tool-call part of the terminal and Markdown reports, as rows both render.

Why its own module: the same figures (per tool set: calls and their p, agent steps and their
p, step p^n for each ``--steps``; per tool: the ``SET/FUNCTION`` rows of By schema) read the
same in both reports (``tally/toolsummary.py`` defines an agent step).
"""

from __future__ import annotations

from schemaops.audit.report.text import fmt_p

#: what an agent step is, said once under the table
STEP_NOTE = (
    "An agent step is one response with all its parallel calls; it is good when every call in"
    " it is (a text answer under tool_choice auto is a good step with no call). Per-call p counts"
    " each parallel call; p^n is the step p to the n: an n-step agent's success, steps"
    " failing independently."
)


def _ns(doc: dict) -> list[int]:
    """The ``--steps`` n of the step compound columns (n = 1 is the step p column)."""
    return [n for n in doc["steps"] if n != 1]


def head(doc: dict) -> list[str]:
    """Column names; ``p^n`` is the step p to the n (``STEP_NOTE``)."""
    return ["tool set", "calls", "call p", "steps", "step p"] + [f"p^{n}" for n in _ns(doc)]


def rows(doc: dict) -> list[list[str]]:
    """One row per tool set, then ``all`` when there are several."""
    out: list[list[str]] = []
    for name, s in doc["by_tool_set"].items():
        step_p = s["step_p"]
        out.append(
            [name, f"{s['n']:,}", fmt_p(s["p"]), f"{s['steps']:,}", fmt_p(step_p)]
            + [fmt_p(None if step_p is None else step_p**n) for n in _ns(doc)]
        )
    if len(doc["by_tool_set"]) > 1:
        st = doc["tool_steps"]
        n = sum(s["n"] for s in doc["by_tool_set"].values())
        ok = sum(s["ok"] for s in doc["by_tool_set"].values())
        out.append(
            ["all", f"{n:,}", fmt_p(ok / n if n else None), f"{st['steps']:,}", fmt_p(st["p"])]
            + [fmt_p(st["compound"].get(str(n))) for n in _ns(doc)]
        )
    return out


def summary_line(doc: dict) -> str:
    """``Tool set NAME: N tool calls (rows NAME/FUNCTION above); invented tool names: ...``."""
    sets = doc["by_tool_set"]
    calls = sum(s["n"] for s in sets.values())
    invented = ", ".join(f"{n} {k}" for n, k in doc["unknown_tools"].items())
    no_call = sum(s["categories"].get("no_tool_call", 0) for s in sets.values())
    label = " ".join(sets) if len(sets) > 1 else doc["tool_set"]
    word = "Tool sets" if len(sets) > 1 else "Tool set"
    line = (
        f"{word} {label}: {calls:,} tool calls (rows SET/FUNCTION above); invented tool names:"
        f" {invented or 'none'}"
    )
    if no_call:
        line += f"; responses with no call where one was required: {no_call:,}"
    return line
