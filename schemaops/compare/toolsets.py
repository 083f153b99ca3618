"""``compare`` on a registry's tool sets: what each engine compiles for ``tool_choice``,
measured on every backend compared.

Why: an engine compiles one grammar for the whole ``tools`` array (a JSON schema for
``required``/named, ``engines/tool_schema.py``; a structural tag for ``auto`` with a tool
parser, ``engines/structural_tags.py``), so a tool set's compile time, per-token mask cost
and enforcement, the offered tool names above all, are what a backend choice must be judged
on too. The items are ``check``'s (``check/toolsets.py`` ``toolset_items``,
``check/tagcases.py`` ``tag_specs``): JSON-schema derivations go through compare's isolated
workers like schemas, structural tags are compiled and walked in this process
(``check/tooltags.py``). Each result has compare's shape plus ``toolset`` (the tool set,
mode, engines, tool count, ``unknown_tool``: refused / accepted / unchecked / not
generated). They are reported apart from the schemas (``CompareReport.toolsets``), so the
schema summary and the recommendation stay about schemas.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def toolset_results(
    registry: str | Path,
    backends: Sequence[str],
    tokenizer: str,
    modes: Sequence[str],
    strict_level: int = 0,
    **worker: Any,
) -> tuple[list[dict[str, Any]], list[str]]:
    """(results, notes) for every tool set of ``registry`` x mode x backend; nothing (and no
    registry load) when the folder has no tool set or ``modes`` is empty."""
    from schemaops.registry.loader import TOOLS_SUFFIX

    modes = [m for m in modes if m != "none"]
    if not modes or not any(Path(registry).rglob(f"*{TOOLS_SUFFIX}")):
        return [], []
    from schemaops.check.tagcases import tag_specs, unknown_outcome
    from schemaops.check.toolsets import toolset_items, unknown_tool_outcome
    from schemaops.check.tooltags import tag_result
    from schemaops.compare.core import make_backend
    from schemaops.compare.run import measure_items
    from schemaops.registry import load_registry

    reg = load_registry(registry)
    items, meta, notes = toolset_items(reg, list(modes))
    specs, tnotes = tag_specs(reg, list(modes), strict_level)
    notes += tnotes
    out: list[dict[str, Any]] = []
    if items:
        for r in measure_items(items, list(backends), tokenizer, **worker):
            m = dict(meta.get(str(r.get("schema")), {}))
            m.pop("nested_defs", None)
            m["unknown_tool"] = (
                unknown_tool_outcome(r)
                if m.get("unknown_call")
                else "not generated (vLLM named: the name is the request's)"
            )
            r["toolset"] = m
            out.append(r)
    for b in backends if specs else ():
        backend = make_backend(b, tokenizer)
        for name, tt, m, instances in specs:
            r = tag_result(backend, tt, instances, name)
            r["toolset"] = dict(m, unknown_tool=unknown_outcome(r))
            out.append(r)
    order = {b: i for i, b in enumerate(backends)}
    names = list(dict.fromkeys(str(r["schema"]) for r in out))
    out.sort(key=lambda r: (names.index(str(r["schema"])), order.get(r["backend"], 99)))
    return out, notes


def toolset_rows(results: list[dict[str, Any]], backends: Sequence[str]) -> list[list[str]]:
    """Text rows: tool set [engine mode], tools, then per backend compile · mask p50 ·
    verdict · unknown tool (the terminal table; ``report_text.py``)."""
    idx = {(str(r["schema"]), r["backend"]): r for r in results}
    rows = []
    for name in dict.fromkeys(str(r["schema"]) for r in results):
        first = next(r for r in results if str(r["schema"]) == name)
        cells = [name, f"{first['toolset'].get('tools')} tools"]
        for b in backends:
            r = idx.get((name, b))
            if r is None:
                cells.append("-")
                continue
            if r.get("status") != "ok":
                cells.append(str(r.get("status")))
                continue
            mask = (r.get("mask_us") or {}).get("p50")
            verdict = (r.get("enforcement") or {}).get("verdict")
            unknown = str(r["toolset"].get("unknown_tool", "?")).split(" ")[0]
            cells.append(
                f"{r['compile_ms']:.0f} ms · "
                + (f"{mask:.0f} µs" if mask is not None else "n/a")
                + f" · {verdict} · unknown tool {unknown}"
            )
        rows.append(cells)
    return rows
