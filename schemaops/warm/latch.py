"""vLLM's ``auto`` latch, chosen on purpose: what xgrammar accepts is warmed first.

vLLM 0.32 builds ONE grammar backend per engine (per DP rank), from the first structured
request after start, and compiles every later schema with it whatever ``auto`` would route it
to (measured on the dev server, tests/integration/test_vllm_auto_routes.py: a schema ``auto``
routes to outlines was compiled by xgrammar on an engine latched on xgrammar; an xgrammar
schema got HTTP 500 on an engine latched on outlines). The routing rules and the latch are
the vLLM engine model's (``schemaops.engines.vllm``); this module only applies them to a warm
plan:

- ``order``: the items ``auto`` serves with xgrammar go first (warm then sends the first one
  alone to every rank before anything else, so the latch is xgrammar by construction);
- ``precheck``: before anything is sent, one entry per item that the configured backend would
  not serve with xgrammar, with what an engine latched on xgrammar will do with it.
"""

from __future__ import annotations

import json
from typing import Any

from schemaops.engines.vllm import VLLM, latched_outcome
from schemaops.warm.plan import WarmItem


def item_schemas(item: WarmItem) -> list[Any]:
    """The JSON schemas an item's request carries (response_format, structured_outputs,
    each tool's parameters); a string that is not JSON is skipped (the server answers it)."""
    frag = item.fragment
    out: list[Any] = []
    rf = frag.get("response_format")
    if isinstance(rf, dict) and isinstance(rf.get("json_schema"), dict):
        if "schema" in rf["json_schema"]:
            out.append(rf["json_schema"]["schema"])
    so = frag.get("structured_outputs")
    if isinstance(so, dict) and "json" in so:
        value = so["json"]
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                value = None
        if value is not None:
            out.append(value)
    for tool in frag.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and "parameters" in fn:
            out.append(fn["parameters"])
    return out


def precheck(items: list[WarmItem], backend: str = "auto") -> list[dict[str, Any]]:
    """One entry per item the ``backend`` vLLM engine would not simply serve with xgrammar."""
    notes = []
    for it in items:
        for schema in item_schemas(it):
            r = VLLM.route(schema, backend)
            if (r.served_by == "xgrammar" or backend != "auto") and not r.rejected:
                continue  # xgrammar's, or a fixed backend's: one backend serves everything
            entry: dict[str, Any] = {
                "schema": it.name,
                "backend": backend,
                "routes_to": r.served_by,
                "rejected": r.rejected,
                "reason": r.reason,
            }
            if backend == "auto" and r.rejected:
                # auto's routing and the chosen backend's validation run in the API server
                # for each request, before any engine sees it: the latch does not matter.
                entry["latched"] = f"HTTP 400 whatever the latch ({r.reason})"
            elif backend == "auto":
                entry["latched"] = latched_outcome(schema, "xgrammar")
            else:
                entry["latched"] = (
                    f"HTTP 400 from {backend}: {r.reason}" if r.rejected else "served"
                )
            notes.append(entry)
            break
    return notes


def order(items: list[WarmItem], backend: str = "auto") -> list[WarmItem]:
    """``items`` with the first one xgrammar serves moved to the front (it is sent first,
    alone, and latches the engine on xgrammar); the rest keep their order (warm's usage
    order). Under a fixed backend there is no latch and the order is kept. The rule is
    ``engines.decision.send_order``'s, the one ``check --engine`` and ``warm`` decide with."""
    from schemaops.engines.decision import Request, fresh_routes, latches, send_order

    reqs = [Request(str(i), item_schemas(it), None) for i, it in enumerate(items)]
    routes = {r.name: fresh_routes(VLLM, r, backend) for r in reqs}
    ordered = send_order(reqs, routes, latches(VLLM, backend))
    return [items[int(r.name)] for r in ordered]


def line(entry: dict[str, Any]) -> str:
    """One printable line of the pre-check."""
    where = "rejected" if entry["rejected"] else f"routes to {entry['routes_to']}"
    return (
        f"vLLM {entry['backend']}: {entry['schema']} {where} ({entry['reason']}); "
        f"{entry['latched']}"
    )
