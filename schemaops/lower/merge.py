"""Exact conjunction of two schemas, for flattening ``allOf`` and distributing ``if``.

``merge(a, b)`` returns one schema that accepts exactly the instances both ``a`` and ``b``
accept, or raises ``NotExact`` saying which keyword stops it. Why exactness matters: a
flattened ``allOf`` that is looser than the original would let a model emit what the
application rejects, and one that is tighter would steer it away from valid outputs; where
no exact merge exists, ``lower`` keeps the branch as a residual rule instead of guessing.

Rules (each is exact for JSON Schema 2020-12 validation), from an explicit table:

- keywords that interact are merged as a group (``GROUPS``: ``prefixItems``/``items``/
  ``unevaluatedItems``, ``contains``/``minContains``/``maxContains``, ``if``/``then``/``else``,
  the object property keywords, the dependency keywords, ``$ref``): a group on one side only
  is copied whole; on both sides it is merged by a rule for the whole group (``items`` alone
  on both sides; ``properties``/``additionalProperties`` without pattern or unevaluated
  properties) or refused, never merged key by key (``allOf`` over ``prefixItems`` and
  ``items`` merged key by key once accepted ``["abcdef"]`` that the original refuses);
- a side with ``unevaluatedItems``/``unevaluatedProperties`` merges only with a side that
  evaluates nothing (those keywords see every adjacent applicator); the second side may not
  carry ``$id``/``$anchor``-like keywords (references would resolve elsewhere);
- other keywords are independent: present on one side only, kept; equal values kept once;
- ``type``: intersection (``integer`` is within ``number``); ``enum``/``const``: intersection;
- lower bounds take the larger, upper bounds the smaller (``minimum``, ``minLength``, ...);
- ``required``: union; ``uniqueItems``: or; integer ``multipleOf``: least common multiple;
  ``allOf``: both lists; ``propertyNames``: merged recursively;
- anything else on both sides with different values: refused;
- annotations (``title``, ``description``, ``default``, ``examples``, ``$comment``): the
  first side's value wins (they do not change validation).

Key order is the first side's, then the second side's new keys: property order is
generation order, so the original's order is kept.
"""

from __future__ import annotations

import json
import math
from typing import Any

from schemaops.jsonequal import json_equal, json_in


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

#: Keywords that interact: a group present on both sides is merged as a whole (a rule below)
#: or refused (``NotExact``), never key by key; present on one side only, it is copied whole.
GROUPS: dict[str, tuple[str, ...]] = {
    # items applies after prefixItems; unevaluatedItems sees what the others evaluated
    "array items": ("prefixItems", "items", "additionalItems", "unevaluatedItems"),
    # minContains/maxContains count what contains matches (and are inert without it)
    "contains": ("contains", "minContains", "maxContains"),
    # then/else apply by the if beside them (and are inert without it)
    "conditional": ("if", "then", "else"),
    # additionalProperties applies to what properties/patternProperties do not name
    "object properties": (
        "properties",
        "patternProperties",
        "additionalProperties",
        "unevaluatedProperties",
    ),
    "dependencies": ("dependentRequired", "dependentSchemas", "dependencies"),
    # a reference's target decides; inline it first (and its siblings with it)
    "reference": ("$ref", "$dynamicRef", "$recursiveRef"),
}
_GROUP_OF = {k: name for name, keys in GROUPS.items() for k in keys}
#: keywords that see annotations from every adjacent keyword and in-place applicator: a side
#: holding one merges only with a side that evaluates nothing
_UNEVALUATED = ("unevaluatedItems", "unevaluatedProperties")
_EVALUATES = frozenset(
    {"prefixItems", "items", "additionalItems", "contains", "properties", "patternProperties"}
    | {"additionalProperties", "allOf", "anyOf", "oneOf", "if", "then", "else", "$ref"}
    | {"$dynamicRef", "$recursiveRef", "dependentSchemas", "dependencies"}
    | set(_UNEVALUATED)
)
#: keywords that name a location or change the base URI: moving them into another schema
#: object changes what references resolve to
_LOCATION = ("$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor")


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


def _object_part(a: dict, b: dict, out: dict) -> None:
    """Merge the ``object properties`` group when only ``properties`` and
    ``additionalProperties`` are used: per property name, the conjunction of what each side
    applies to it (its ``properties`` entry, else its ``additionalProperties``)."""
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


def _group(name: str, a: dict, b: dict, out: dict) -> None:
    """Merge group ``name`` (``GROUPS``) of ``a`` and ``b`` into ``out``, exactly or not at
    all."""
    keys = GROUPS[name]
    ga = {k: a[k] for k in keys if k in a}
    gb = {k: b[k] for k in keys if k in b}
    if not ga or not gb or _same(ga, gb):
        out.update(ga or gb)
        return
    if name == "array items" and set(ga) == set(gb) == {"items"}:
        out["items"] = merge(ga["items"], gb["items"])  # items alone applies to every item
        return
    if name == "object properties" and set(ga) | set(gb) <= {
        "properties",
        "additionalProperties",
    }:
        _object_part(a, b, out)
        return
    raise NotExact(f"{'/'.join(sorted({*ga, *gb}))}: interacting keywords on both branches")


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
    for x, y in ((a, b), (b, a)):
        kw = next((k for k in _UNEVALUATED if k in x), None)
        other = sorted(k for k in y if k in _EVALUATES)
        if kw and other:
            raise NotExact(f"{kw}: would see the other branch's {other[0]}")
    moved = [k for k in _LOCATION if k in b and not _same(a.get(k), b[k])]
    if moved:
        raise NotExact(f"{moved[0]}: merging would move a location")
    out: dict[str, Any] = {}
    keys = list(a) + [k for k in b if k not in a]
    done: set[str] = set()
    for key in keys:
        group = _GROUP_OF.get(key)
        if group is not None:
            if group not in done:
                done.add(group)
                _group(group, a, b, out)
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
            out[key] = [v for v in va if isinstance(vb, list) and json_in(v, vb)]
        elif key == "const":
            if not json_equal(va, vb):
                raise NotExact("const: the branches require different values")
            out[key] = va
        elif key in _LOWER and _number(va) and _number(vb):
            out[key] = max(va, vb)
        elif key in _UPPER and _number(va) and _number(vb):
            out[key] = min(va, vb)
        elif key == "required" and isinstance(va, list) and isinstance(vb, list):
            out[key] = list(dict.fromkeys([*va, *vb]))
        elif key == "uniqueItems" and isinstance(va, bool) and isinstance(vb, bool):
            out[key] = va or vb
        elif key == "multipleOf" and all(_int(v) and v > 0 for v in (va, vb)):
            out[key] = va * vb // math.gcd(va, vb)
        elif key == "allOf" and isinstance(va, list) and isinstance(vb, list):
            out[key] = [*va, *vb]  # every branch of both applies
        elif key == "propertyNames":
            out[key] = merge(va, vb)  # each name satisfies both
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
        if not json_in(out["const"], out["enum"]):
            raise NotExact("const/enum: the branches allow no common value")
        del out["enum"]
    return out


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)
