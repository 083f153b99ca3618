"""Exact conjunction of two schemas, for flattening ``allOf`` and distributing ``if``.

``merge(a, b)`` returns one schema that accepts exactly the instances both ``a`` and ``b``
accept, or raises ``NotExact`` saying which keyword stops it. Why exactness matters: a
flattened ``allOf`` that is looser than the original would let a model emit what the
application rejects, and one that is tighter would steer it away from valid outputs; where
no exact merge exists, ``lower`` keeps the branch as a residual rule instead of guessing.

Rules (each is exact for JSON Schema 2020-12 validation):

- keywords present on one side only are kept; equal values are kept once;
- ``type``: intersection (``integer`` is within ``number``); ``enum``/``const``: intersection;
- lower bounds take the larger, upper bounds the smaller (``minimum``, ``minLength``, ...);
- ``required``: union; ``uniqueItems``: or; integer ``multipleOf``: least common multiple;
- ``properties``/``additionalProperties``: per property name, the conjunction of what each
  side applies to it (its ``properties`` entry, else its ``additionalProperties``); not exact
  when either side has ``patternProperties`` or ``unevaluatedProperties``;
- ``items`` (schemas): merged recursively;
- annotations (``title``, ``description``, ``default``, ``examples``, ``$comment``): the
  first side's value wins (they do not change validation).

Key order is the first side's, then the second side's new keys: property order is
generation order, so the original's order is kept.
"""

from __future__ import annotations

import json
import math
from typing import Any


class NotExact(Exception):
    """No exact merge: the message names the keyword."""


ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly"}
    | {"writeOnly", "$schema", "$id", "$anchor", "contentMediaType", "contentEncoding"}
)
#: keywords that take part in validation; anything else (``example``, ``x-...``, vendor
#: keys) is an annotation for merging: the first side's value is kept
VOCABULARY = frozenset(
    {"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum"}
    | {"exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems"}
    | {"uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties"}
    | {"required", "dependentRequired", "properties", "patternProperties"}
    | {"additionalProperties", "propertyNames", "items", "prefixItems", "additionalItems"}
    | {"contains", "unevaluatedItems", "unevaluatedProperties", "allOf", "anyOf", "oneOf"}
    | {"not", "if", "then", "else", "dependentSchemas", "dependencies", "$ref"}
    | {"$dynamicRef", "$recursiveRef", "format", "$defs", "definitions", "contentSchema"}
)
_LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_NO_MERGE_OBJECT = ("patternProperties", "unevaluatedProperties")


def _same(x: Any, y: Any) -> bool:
    return json.dumps(x, sort_keys=True) == json.dumps(y, sort_keys=True)


def _types(t: Any) -> list[str]:
    return [t] if isinstance(t, str) else list(t)


def _type_meet(a: Any, b: Any) -> Any:
    ta, tb = _types(a), _types(b)
    out: list[str] = []
    for t in ta:
        if t in tb:
            out.append(t)
        elif t == "number" and "integer" in tb:
            out.append("integer")
        elif t == "integer" and "number" in tb:
            out.append("integer")
    out = list(dict.fromkeys(out))
    if not out:
        raise NotExact("type: the branches allow no common type")
    return out[0] if len(out) == 1 else out


def _json_in(v: Any, values: list[Any]) -> bool:
    return any(json_equal(v, w) for w in values)


def json_equal(x: Any, y: Any) -> bool:
    """JSON equality (1 == 1.0, but true != 1)."""
    if isinstance(x, bool) or isinstance(y, bool):
        return isinstance(x, bool) and isinstance(y, bool) and x == y
    if isinstance(x, (int, float)) and isinstance(y, (int, float)):
        return x == y
    return _same(x, y)


def _object_part(a: dict, b: dict, out: dict) -> None:
    """Merge ``properties``/``additionalProperties`` of ``a`` and ``b`` into ``out``."""
    for side in (a, b):
        bad = [k for k in _NO_MERGE_OBJECT if k in side]
        if bad and any(
            k in (a if side is b else b) for k in ("properties", "additionalProperties")
        ):
            raise NotExact(f"{bad[0]}: cannot be merged with another branch's properties")
    pa, pb = a.get("properties"), b.get("properties")
    apa, apb = a.get("additionalProperties", True), b.get("additionalProperties", True)
    if pa is None and pb is None:
        out["additionalProperties"] = merge(apa, apb)
        return
    pa, pb = pa or {}, pb or {}
    props: dict[str, Any] = {}
    for key in list(pa) + [k for k in pb if k not in pa]:
        sa = pa[key] if key in pa else apa
        sb = pb[key] if key in pb else apb
        merged = merge(sa, sb)
        if merged is False:
            ap_meet = merge(apa, apb)
            if ap_meet is False:
                continue  # forbidden either way: leaving it out keeps it forbidden
            raise NotExact(f"properties/{key}: allowed by one branch, forbidden by the other")
        props[key] = merged
    out["properties"] = props
    if "additionalProperties" in a or "additionalProperties" in b:
        out["additionalProperties"] = merge(apa, apb)


def merge(a: Any, b: Any) -> Any:
    """The exact conjunction of schemas ``a`` and ``b`` (see module doc)."""
    if b is True or b == {}:
        return a  # checked first so that {} and True keep the first side's spelling
    if a is True or a == {}:
        return b
    if a is False or b is False:
        return False
    if not isinstance(a, dict) or not isinstance(b, dict):
        raise NotExact("not a schema object")
    if "$ref" in a or "$ref" in b:
        raise NotExact("$ref: inline it first")
    out: dict[str, Any] = {}
    keys = list(a) + [k for k in b if k not in a]
    object_done = False
    for key in keys:
        if key in ("properties", "additionalProperties"):
            if not object_done:
                object_done = True
                _object_part(a, b, out)
            continue
        if key not in b:
            out[key] = a[key]
            continue
        if key not in a:
            out[key] = b[key]
            continue
        va, vb = a[key], b[key]
        if key in ANNOTATIONS or key not in VOCABULARY or _same(va, vb):
            out[key] = va
        elif key == "type":
            out[key] = _type_meet(va, vb)
        elif key == "enum":
            out[key] = [v for v in va if isinstance(vb, list) and _json_in(v, vb)]
        elif key == "const":
            if not json_equal(va, vb):
                raise NotExact("const: the branches require different values")
            out[key] = va
        elif key in _LOWER:
            out[key] = max(va, vb)
        elif key in _UPPER:
            out[key] = min(va, vb)
        elif key == "required":
            out[key] = list(dict.fromkeys([*va, *vb]))
        elif key == "uniqueItems":
            out[key] = bool(va or vb)
        elif key == "multipleOf" and all(isinstance(v, int) for v in (va, vb)):
            out[key] = va * vb // math.gcd(va, vb)
        elif key == "items" and isinstance(va, dict) and isinstance(vb, dict):
            out[key] = merge(va, vb)
        elif key == "$defs" and isinstance(va, dict) and isinstance(vb, dict):
            clash = [k for k in vb if k in va and not _same(va[k], vb[k])]
            if clash:
                raise NotExact(f"$defs/{clash[0]}: two different definitions")
            out[key] = {**va, **vb}
        else:
            raise NotExact(f"{key}: both branches constrain it differently")
    # const inside enum, or enum that became empty
    if "enum" in out and not out["enum"]:
        raise NotExact("enum: the branches allow no common value")
    if "const" in out and "enum" in out:
        if not _json_in(out["const"], out["enum"]):
            raise NotExact("const/enum: the branches allow no common value")
        del out["enum"]
    return out
