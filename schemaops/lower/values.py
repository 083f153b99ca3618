"""What a subschema allows, read cheaply: its type set, the constants it requires, whether
union branches are disjoint, a finite domain, integer bounds. Sufficient tests, used by the
lowering passes to decide whether a rewrite is exact.
"""

from __future__ import annotations

import math
from typing import Any

from schemaops.jsonequal import json_equal

#: ``$`` keywords that neither name a location nor change a base URI (safe to drop)
PLAIN_DOLLAR = frozenset({"$comment", "$schema"})


#: every JSON value, spelled with ``type`` only (what ``{}`` means in JSON Schema)
ANY_VALUE = {
    "anyOf": [{"type": t} for t in ("null", "boolean", "number", "string", "array", "object")]
}


JSON_TYPES = ("null", "boolean", "object", "array", "number", "string")


def type_set(schema: Any) -> set[str] | None:
    if not isinstance(schema, dict) or "type" not in schema:
        return None
    t = schema["type"]
    names = {t} if isinstance(t, str) else set(t) if isinstance(t, list) else None
    if names is None:
        return None
    return {"number" if n == "integer" else n for n in names}


def required_constants(schema: Any) -> dict[str, list[Any]]:
    """Property -> allowed constants, for properties the schema requires with const/enum."""
    if not isinstance(schema, dict):
        return {}
    req = schema.get("required") or []
    out = {}
    for k, sub in (schema.get("properties") or {}).items():
        if k in req and isinstance(sub, dict):
            if "const" in sub:
                out[k] = [sub["const"]]
            elif isinstance(sub.get("enum"), list):
                out[k] = list(sub["enum"])
    return out


def disjoint(branches: list[Any]) -> bool:
    """Whether no instance can match two of ``branches`` (a sufficient test)."""
    for i, a in enumerate(branches):
        for b in branches[i + 1 :]:
            ta, tb = type_set(a), type_set(b)
            if ta is not None and tb is not None and not (ta & tb):
                continue
            ca, cb = required_constants(a), required_constants(b)
            shared = [k for k in ca if k in cb]
            if any(not any(json_equal(x, y) for x in ca[k] for y in cb[k]) for k in shared) and (
                ta == {"object"} or tb == {"object"}
            ):
                continue
            return False
    return True


def pattern_matches(pattern: str, key: str) -> bool:
    import re

    try:
        return re.search(pattern, key) is not None
    except (re.error, TypeError):
        return True  # unknown: treat as matching (leave the property's schema empty)


def finite_domain(schema: Any) -> list[Any] | None:
    if not isinstance(schema, dict):
        return None
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    if schema.get("type") == "boolean":
        return [True, False]
    return None


def integer_bounds(out: dict) -> tuple[int | None, int | None]:
    lo: int | None = None
    hi: int | None = None
    for k in ("minimum", "exclusiveMinimum"):
        v = out.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            b = math.ceil(v) if k == "minimum" else math.floor(v) + 1
            lo = b if lo is None else max(lo, b)
    for k in ("maximum", "exclusiveMaximum"):
        v = out.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            b = math.floor(v) if k == "maximum" else math.ceil(v) - 1
            hi = b if hi is None else min(hi, b)
    return lo, hi
