"""What schemaops knows about each serving engine, one module per engine.

``sglang.SGLANG`` and ``vllm.VLLM`` are ``base.Engine`` objects: routing and refusal rules
per configured backend, vLLM's one-backend latch, the grammar-cache policy and cap, and the
cache key per API path. ``check --engine``, ``warm`` and ``lower --engine`` ask them. To add
an engine: a module with an ``Engine`` subclass, its tests, and one entry in ``ENGINES``.
"""

from __future__ import annotations

from typing import Any

from schemaops.engines.base import CachePolicy, Engine, Route
from schemaops.engines.sglang import SGLANG
from schemaops.engines.vllm import VLLM
from schemaops.errors import InputError

ENGINES: dict[str, Engine] = {"sglang": SGLANG, "vllm": VLLM}

__all__ = ["ENGINES", "CachePolicy", "Engine", "Route", "get_engine", "route"]


def get_engine(name: str) -> Engine:
    """The engine called ``name``; ``InputError`` (exit 2) for an unknown one."""
    engine = ENGINES.get(name)
    if engine is None:
        raise InputError(f"unknown engine {name!r}: expected one of {', '.join(ENGINES)}")
    return engine


def route(schema: Any, engine: str, configured: str | None = None) -> Route:
    """What ``engine`` configured with ``configured`` (None: its default) does with one
    request carrying ``schema`` on a fresh engine."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}: expected one of {', '.join(ENGINES)}")
    return ENGINES[engine].route(schema, configured)
