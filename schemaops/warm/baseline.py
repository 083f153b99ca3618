"""The baseline a warm request is judged against (``prove.verdict``'s ``base_ms``).

An unconstrained 1-token request on the item's API path, except for a tool-calling request:
the server validates and renders its tools on every request, cached grammar or not, so its
baseline is the same request with ``tool_choice: "none"`` (no grammar in either engine),
measured once per distinct ``tools`` array (``engine._measure_baseline``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from schemaops.http.answer import why_not_answer
from schemaops.http.retry import AttemptOutcome
from schemaops.strings import sha256_hex
from schemaops.warm.plan import WarmItem, baseline_request, build_request
from schemaops.warm.prove import baseline

if TYPE_CHECKING:  # types only: engine.py imports this module
    from schemaops.http.client import ServerClient
    from schemaops.warm.engine import ServerRun, WarmOptions


def tools_key(item: WarmItem) -> str | None:
    """The baseline key of a tool-calling item (its ``tools`` and ``parallel_tool_calls``);
    None for an item without tools."""
    if "tools" not in item.fragment:
        return None
    rest = {k: v for k, v in item.fragment.items() if k != "tool_choice"}
    return sha256_hex(json.dumps(rest, sort_keys=True))[:16]


def base_for(run: ServerRun, item: WarmItem) -> float | None:
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


async def _median_ms(
    client: ServerClient, run: ServerRun, opts: WarmOptions, request: Callable[[int | None], Any]
) -> float | None:
    """The median latency of ``opts.baseline_samples`` answered requests (None: none was)."""
    samples = []
    for i in range(opts.baseline_samples):
        rank = None if run.dp_routing != "rank" else i % run.dp_size
        path, body, headers = request(rank)
        res = await client.post(path, body, headers, check=lambda b, p=path: why_not_answer(p, b))
        if res.outcome is AttemptOutcome.OK:
            samples.append(res.last.elapsed_ms)
    return baseline(samples) if samples else None


async def measure_baselines(
    client: ServerClient, run: ServerRun, opts: WarmOptions, items: list[WarmItem]
) -> None:
    """The unconstrained 1-token latency of each API path the items use, and of each
    distinct tools array (``tool_baseline_item``), median of a few."""
    for api in sorted({it.api for it in items}):
        run.base_ms[api] = await _median_ms(
            client, run, opts, lambda r, a=api: baseline_request(a, model=run.model, dp_rank=r)
        )
    for item in items:
        key = tools_key(item)
        if key is None or key in run.tool_base_ms:
            continue
        ref = tool_baseline_item(item)
        run.tool_base_ms[key] = await _median_ms(
            client, run, opts, lambda r, x=ref: build_request(x, model=run.model, dp_rank=r)
        )
