"""JSON equality as JSON Schema reads it, in one place: ``1 == 1.0``, but ``true != 1``.

Python's ``==`` says ``True == 1`` and ``{"const": 1} == {"const": True}``, so a comparison
of schema values with it misses a real change (``enum: [1]`` -> ``enum: [true]`` narrows and
widens at once). JSON Schema compares numbers by value and keeps booleans apart, at every
depth (JSON-Schema-Test-Suite tests/draft2020-12/enum.json: "enum with [1] does not match
[true]", "enum with 1 does not match true"; jsonschema's ``_utils.equal`` does the same).
Used by ``registry diff`` and ``lower``'s merges.
"""

from __future__ import annotations

from typing import Any


def json_equal(x: Any, y: Any) -> bool:
    """``x`` and ``y`` are the same JSON value (numbers by value, booleans apart)."""
    if isinstance(x, bool) or isinstance(y, bool):
        return isinstance(x, bool) and isinstance(y, bool) and x == y
    if isinstance(x, (int, float)) and isinstance(y, (int, float)):
        return x == y
    if isinstance(x, dict) and isinstance(y, dict):
        return len(x) == len(y) and all(k in y and json_equal(v, y[k]) for k, v in x.items())
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return len(x) == len(y) and all(json_equal(a, b) for a, b in zip(x, y, strict=True))
    return type(x) is type(y) and x == y


def json_in(x: Any, values: Any) -> bool:
    """``x`` is one of ``values`` under ``json_equal``."""
    return any(json_equal(x, v) for v in values)
