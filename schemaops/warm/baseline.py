"""The baseline a warm request is judged against (``prove.verdict``'s ``base_ms``).

An unconstrained 1-token request on the item's API path, except for a tool-calling request:
the server validates and renders its tools on every request, cached grammar or not, so its
baseline is the same request with ``tool_choice: "none"`` (no grammar in either engine),
measured once per distinct ``tools`` array (``engine._measure_baseline``).
"""

from __future__ import annotations

import json
from typing import Any

from schemaops.strings import sha256_hex
from schemaops.warm.plan import WarmItem


def tools_key(item: WarmItem) -> str | None:
    """The baseline key of a tool-calling item (its ``tools`` and ``parallel_tool_calls``);
    None for an item without tools."""
    if "tools" not in item.fragment:
        return None
    rest = {k: v for k, v in item.fragment.items() if k != "tool_choice"}
    return sha256_hex(json.dumps(rest, sort_keys=True))[:16]


def base_for(run: Any, item: WarmItem) -> float | None:
    """The baseline ``item`` is judged against on ``run`` (its ``ServerRun``): a
    tool-calling request's own (the server validates every tool's parameters and renders
    them into the prompt on each request, at a cost an API path's baseline leaves out:
    SGLang 0.5.23 ``serving_chat.py`` ``_validate_request`` runs
    ``Draft202012Validator.check_schema`` per tool), else its API path's."""
    key = tools_key(item)
    if key is not None and key in run.tool_base_ms:
        return run.tool_base_ms[key]
    return run.base_ms.get(item.api)


def tool_baseline_item(item: WarmItem) -> WarmItem:
    """``item``'s request with ``tool_choice: "none"``: the same tools, no grammar (neither
    engine constrains ``none``; vLLM 0.32 serves it without a tool parser,
    ``vllm/renderers/online_renderer.py``)."""
    fragment = {**item.fragment, "tool_choice": "none"}
    return WarmItem(name="(tools baseline)", api=item.api, key_type="none", fragment=fragment)
