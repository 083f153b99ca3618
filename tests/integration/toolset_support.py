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


def first_is_cached(url: str, row: dict[str, Any], tools: list, tool_choice: Any) -> None:
    """The application's first request after ``warm`` paid no compile, by warm's own proof
    (``prove.verdict``): judged against the compile warm's cold request paid and the tools
    baseline (the same tools with ``tool_choice`` none), it is a ``hit``."""
    base = tools_baseline_ms(url, tools)
    first = chat_ms(url, tools, tool_choice)
    assert verdict(row["cold_share_ms"], first, base) == "hit", (first, base, row)


def first_is_a_compile(url: str, tools: list, tool_choice: Any) -> None:
    """A tool set no cache has seen: its first request compiles, by the same proof: against
    its second request (cached by the first) and its own tools baseline (the median of three
    with ``tool_choice`` none, which compile nothing), the first is a visible compile
    (``hit`` means cold >> probe), so it was not as fast as a cached one."""
    base = tools_baseline_ms(url, tools)
    first = chat_ms(url, tools, tool_choice)
    second = chat_ms(url, tools, tool_choice)
    assert verdict(first, second, base) == "hit", (first, second, base)
