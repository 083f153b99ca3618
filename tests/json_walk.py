"""``walk``: every node of a parsed JSON value, for tests that pick or inspect schema nodes
(the hostile-schema fuzz mutates dict nodes; the JSON-Schema-Test-Suite agreement collects
the keywords a schema uses)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def walk(value: Any) -> Iterator[Any]:
    """``value`` and every value inside it, depth first, parents before children."""
    stack = [value]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, dict):
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
