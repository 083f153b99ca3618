"""Compile-heavy schemas: what makes warmth visible on a small server.

A schema with dozens of properties, each with its own ``pattern``, costs xgrammar tens to
hundreds of milliseconds to compile, while a cached request costs a few (docs/findings.md,
"The compile spike": first request p50 91 ms against 22 ms cached on the CPU dev server,
measured with ``python bench/warm.py``). Each schema here is distinct
(its index and the property's are literal in every pattern): xgrammar reuses work for
identical sub-patterns across schemas, so repeated patterns would make later schemas cheap
and hide the compile this is meant to show. Used by the
integration tests and ``bench/warm.py``; handy to check a real deployment too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def heavy_schema(i: int, n_props: int = 50) -> dict[str, Any]:
    """Schema number ``i``: ``n_props`` required string properties, each with its own pattern."""
    props: dict[str, Any] = {}
    for j in range(n_props):
        props[f"p{i}_{j}"] = {
            "type": "string",
            "pattern": (
                f"^{i:03d}{j:03d}-[A-Z]{{2}}-[0-9]{{{2 + (i + j) % 5}}}-[a-z]{{{1 + j % 4}}}$"
            ),
        }
    return {
        "title": f"heavy_{i:02d}",
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def write_heavy_registry(folder: str | Path, count: int = 20, n_props: int = 50) -> Path:
    """Write ``count`` heavy schemas as a registry folder (``heavy_00.json`` ...)."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (root / f"heavy_{i:02d}.json").write_text(json.dumps(heavy_schema(i, n_props), indent=2))
    return root
