"""Helpers of the tool-set warm tests (real dev servers, no doubles).

A tool set here is ``agent.tools.json`` whose functions take compile-heavy parameters
(``warm_support.heavy``: 120 properties, each with its own pattern), inline, so the registry
holds nothing else: no schema warmed beside it shares xgrammar's rule-level work with it.
Each test draws its own index range at random (``fresh``): no test, nor a rerun against a
server kept from an earlier session (``SCHEMAOPS_SGLANG_URL``), sees cached entries.
"""

from __future__ import annotations

import json
import secrets
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
from warm_support import PROPS

from schemaops.registry import load_registry
from schemaops.warm.heavy import heavy_schema
from schemaops.warm.prove import verdict


def fresh(n: int) -> range:
    """``n`` heavy indices no earlier request used (with overwhelming likelihood)."""
    start = 10_000 + secrets.randbelow(80_000) * 10
    return range(start, start + n)


def heavy_tools(
    indices: range, *, strict: bool = False, props: int = PROPS
) -> list[dict[str, Any]]:
    """One function per index, its parameters heavy schema ``i`` (``props`` patterned
    properties: a named mode compiles one tool's, so its tests take more)."""
    tools = []
    for i in indices:
        fn: dict[str, Any] = {"name": f"heavy_{i}", "description": f"Tool {i}."}
        if strict:  # vLLM's structural tags pin the arguments of strict tools only
            fn["strict"] = True
        fn["parameters"] = heavy_schema(i, props)
        tools.append({"type": "function", "function": fn})
    return tools


def toolset_registry(
    tmp: Path, indices: range, *, strict: bool = False, props: int = PROPS
) -> Path:
    """A registry holding one tool set, ``agent.tools.json``, over ``indices``."""
    root = tmp / f"tools_{indices.start}_{len(indices)}"
    root.mkdir(parents=True)
    tools = heavy_tools(indices, strict=strict, props=props)
    (root / "agent.tools.json").write_text(json.dumps(tools, indent=2))
    return root


def request_tools(registry: Path) -> list[dict[str, Any]]:
    """The ``tools`` array exactly as the application sends it (the registry's fragment)."""
    return load_registry(registry).toolsets["agent"].request_tools()


def chat_ms(
    url: str, tools: list[dict[str, Any]], tool_choice: Any, *, timeout: float = 600
) -> float:
    """One 1-token chat completion with ``tools`` and ``tool_choice``, as an agent sends it
    (model ``default``: the dev servers' served name); its latency in milliseconds."""
    body = {
        "model": "default",
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 1,
        "temperature": 0.0,
        "tools": tools,
        "tool_choice": tool_choice,
    }
    t0 = time.perf_counter()
    r = httpx.post(url.rstrip("/") + "/v1/chat/completions", json=body, timeout=timeout)
    ms = (time.perf_counter() - t0) * 1000
    assert r.status_code == 200, r.text[:500]
    return ms


def tools_baseline_ms(url: str, tools: list) -> float:
    """Warm's tools baseline, measured now: the median of three requests with the same tools
    and ``tool_choice`` none (no grammar in either engine), so a busy host's drift since the
    warm run does not read as a compile."""
    return statistics.median(chat_ms(url, tools, "none") for _ in range(3))


def first_is_cached(
    url: str, tools: list, tool_choice: Any, unseen_tools: list, unseen_choice: Any
) -> None:
    """The application's first request after ``warm`` paid no compile, by warm's own proof
    (``prove.verdict``), with every latency measured now, back to back: the tools baseline
    (the same tools with ``tool_choice`` none, median of three), the warmed request, and the
    compile a tool set of the same shape no cache has seen pays now (``unseen_tools``, its
    first request). Against that compile the warmed request is a ``hit``, and the unseen set's
    own second request is one too (its first compiled, its second found it).

    Why not warm's own cold figure: it was measured minutes earlier, and a host that got busier
    since (CI once saw the baseline go 261 -> 431 ms) makes the old compile look no larger
    than the new baseline, ``unproven`` for a request that was plainly cached."""
    base = tools_baseline_ms(url, tools)
    first = chat_ms(url, tools, tool_choice)
    compiled = chat_ms(url, unseen_tools, unseen_choice)
    again = chat_ms(url, unseen_tools, unseen_choice)
    timings = {"base": base, "warmed": first, "unseen first": compiled, "unseen second": again}
    assert verdict(compiled, first, base) == "hit", timings
    assert verdict(compiled, again, base) == "hit", timings
