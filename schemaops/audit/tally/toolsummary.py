"""Tool calls in the report: p per tool and per tool set, the invented names, and agent steps.

Why its own module: the verdicts are per call (``verdict/toolcalls.py`` names each call's row
``SET/FUNCTION`` in ``by_schema``), but an agent acts one response at a time. An **agent
step** is one response judged against a tool set, with all its parallel calls; it is good
when every call in it is good (a text answer under ``auto`` is a good step with no call; a
response with no call where the tool choice required one is a failed step). Step p is the
fraction of good steps, and p^n of an n-step agent is the step p to the n (independent steps,
as the per-call compound). Per-call p counts each parallel call on its own.
"""

from __future__ import annotations

from typing import Any

from schemaops.audit.tally.stats import compound, wilson

OK = "ok"
UNKNOWN_TOOL = "unknown_tool"
NO_TOOL_CALL = "no_tool_call"
NO_CALL = "(no call)"
SEP = "/"


def note_steps(tool_steps: dict[str, list[int]], steps: dict[tuple, bool]) -> None:
    """Count one record's steps: ``steps`` maps (tool set, response) to whether every call
    in it was good."""
    for (name, _), good in steps.items():
        cur = tool_steps.get(name)
        if cur is None:
            cur = tool_steps[name] = [0, 0]
        cur[0] += 1
        cur[1] += good


def _row(row: dict[str, Any], fn: str) -> dict[str, Any]:
    cats = row.get("categories") or {}
    return {
        "n": row["outputs"],
        "ok": row.get("ok", cats.get(OK, 0)),
        "p": row["p"],
        "categories": cats,
        "offered": fn != NO_CALL and not cats.get(UNKNOWN_TOOL),
    }


def _steps(n: int, good: int, steps: list[int]) -> dict[str, Any]:
    p = good / n if n else None
    ci = wilson(good, n)
    comp = compound(p, ci, steps)
    return {
        "steps": n,
        "ok": good,
        "p": p,
        "p_ci95": list(ci) if ci else None,
        "compound": comp["compound"],
        "compound_ci95": comp["ci"],
    }


def summary(
    by_schema: dict[str, Any],
    tool_steps: dict[str, list[int]],
    fixed: str | None,
    steps: list[int],
) -> dict[str, Any]:
    """The report's tool-call keys (empty when no call was judged against a tool set):
    ``tool_sets``, ``tool_set`` (the one set, when one), ``by_tool``, ``by_tool_set``,
    ``unknown_tools`` and ``tool_steps``."""
    names = set(tool_steps)
    if fixed is not None:
        names.add(fixed)
    if not names:
        return {}
    by_set: dict[str, dict[str, Any]] = {}
    unknown: dict[str, int] = {}
    for ts in sorted(names):
        prefix = ts + SEP
        tools: dict[str, dict] = {}
        n = ok = 0
        cats_total: dict[str, int] = {}
        for name, row in by_schema.items():
            if not name.startswith(prefix):
                continue
            fn = name[len(prefix) :]
            tools[fn] = r = _row(row, fn)
            n += r["n"]
            ok += r["ok"]
            for c, k in r["categories"].items():
                cats_total[c] = cats_total.get(c, 0) + k
            if r["categories"].get(UNKNOWN_TOOL):
                unknown[fn] = unknown.get(fn, 0) + r["categories"][UNKNOWN_TOOL]
        st_n, st_ok = tool_steps.get(ts, (0, 0))
        by_set[ts] = {
            "n": n,
            "ok": ok,
            "p": ok / n if n else None,
            "categories": {c: k for c, k in cats_total.items() if k},
            "steps": st_n,
            "steps_ok": st_ok,
            "step_p": st_ok / st_n if st_n else None,
            "tools": tools,
        }
    doc: dict[str, Any] = {"tool_sets": sorted(names)}
    if len(names) == 1:
        (only,) = names
        doc["tool_set"] = only
        doc["by_tool"] = by_set[only]["tools"]
    else:  # several sets: a function's row is named with its set
        doc["by_tool"] = {
            f"{ts}{SEP}{fn}": row for ts, s in by_set.items() for fn, row in s["tools"].items()
        }
    doc["by_tool_set"] = by_set
    doc["unknown_tools"] = dict(sorted(unknown.items(), key=lambda kv: (-kv[1], kv[0])))
    total = sum(v[0] for v in tool_steps.values())
    good = sum(v[1] for v in tool_steps.values())
    doc["tool_steps"] = _steps(total, good, steps)
    return doc


def tools_hint(registry: Any) -> str:
    """`` (or judge tool calls against a tool set: --tools NAME, here: a, b)`` when the
    registry has tool sets, else ``""``: the suggestion for a call no schema is named like."""
    from pathlib import Path

    root = Path(registry)
    if not root.is_dir():
        return ""
    from schemaops.registry.loader import TOOLS_SUFFIX

    found = sorted(f.name[: -len(TOOLS_SUFFIX)] for f in root.rglob(f"*{TOOLS_SUFFIX}"))
    if not found:
        return ""
    return f"; judge tool calls against a tool set with --tools NAME ({', '.join(found)})"
