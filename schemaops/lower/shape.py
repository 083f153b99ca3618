"""What a schema holds that decides whether ``lower`` may rewrite it, walked once per call.

- ``unlowerable``: an ``$id`` below the root, an anchor, a dynamic reference, or a ``$ref``
  that is not a plain local JSON pointer: moving a node would change what a reference
  resolves to, and a residual rule's location could not be traced (the JSON-Schema-Test-Suite
  cases ``ref``/``dynamicRef`` showed both), so such a schema is served as it is;
- ``old_draft_reading``: a construct of a draft-03 to draft-07 schema that 2020-12 (what the
  passes read) means otherwise, so such a schema is not rewritten either;
- ``mentions``: whether any schema object holds one of some keywords (``unevaluated*``);
- ``misspelled``: keys that differ from a keyword only in case (``AllOf``), said rather than
  passed through silently.

The walk skips data (``enum``, ``const``, ``default``, ``examples``) and property names.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from schemaops.lower.merge import VOCABULARY
from schemaops.registry.drafts import UnknownDraft, draft_label

UNEVALUATED = ("unevaluatedProperties", "unevaluatedItems")
#: keywords that name or find a location other than by a local JSON pointer
_LOCATIONS = ("$anchor", "$dynamicAnchor", "$recursiveAnchor", "$dynamicRef", "$recursiveRef")
#: keywords whose values are data, or maps of names to subschemas (names are not keywords)
_DATA = frozenset({"enum", "const", "default", "examples", "example"})
_NAMED_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_NAMED_MAPS |= {"dependentSchemas", "dependencies"}


def _schema_nodes(node: Any, depth: int = 0) -> Iterator[tuple[dict, int]]:
    """Every schema object under ``node`` (data values and property names skipped)."""
    if depth > 200 or not isinstance(node, dict):
        return
    yield node, depth
    for k, v in node.items():
        if k in _DATA or k.startswith("x-"):
            continue
        if k in _NAMED_MAPS and isinstance(v, dict):
            for sub in v.values():
                yield from _schema_nodes(sub, depth + 1)
        elif isinstance(v, list):
            for sub in v:
                yield from _schema_nodes(sub, depth + 1)
        elif isinstance(v, dict):
            yield from _schema_nodes(v, depth + 1)


_BY_LOWER = {k.lower(): k for k in VOCABULARY}


def misspelled(schema: Any) -> list[str]:
    """Keys that differ from a JSON Schema keyword only in case (``AllOf``): JSON Schema
    ignores them, so neither the original nor the served schema enforces what they say;
    said rather than passed through silently (the first 10)."""
    out = []
    for node, _ in _schema_nodes(schema):
        for k in node:
            known = _BY_LOWER.get(k.lower()) if isinstance(k, str) else None
            if known and known != k:
                out.append(
                    f"{k!r} is not a JSON Schema keyword (did you mean {known!r}?): it is "
                    "ignored, by the original and the served schema alike"
                )
    return out[:10]


def mentions(schema: Any, keywords: tuple[str, ...]) -> bool:
    return any(k in node for node, _ in _schema_nodes(schema) for k in keywords)


def _plain_local(ref: Any) -> bool:
    """``#`` or ``#/a/b`` without empty tokens: what ``ref_parts`` reads exactly as written
    (it drops empty tokens and reads ``#name`` as ``#/name``)."""
    if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
        return False
    return ref == "#" or "" not in ref[2:].split("/")


def unlowerable(schema: Any) -> str | None:
    """Why ``schema`` is served as it is (None: it can be lowered): an ``$id`` below the root,
    an anchor, a dynamic reference, or a ``$ref`` that is not a local JSON pointer."""
    for node, depth in _schema_nodes(schema):
        if depth and isinstance(node.get("$id"), str):
            return "an embedded resource ($id below the root)"
        found = next((k for k in _LOCATIONS if k in node), None)
        if found:
            return f"{found}: a location found other than by a JSON pointer"
        ref = node.get("$ref")
        if ref is not None and not _plain_local(ref):
            return f"$ref {str(ref)[:60]!r} is not a local JSON pointer"
    return None


#: drafts whose ``$ref`` hides its siblings and whose arrays use ``items``/``additionalItems``
_BEFORE_2019 = frozenset({"draft-03", "draft-04", "draft-06", "draft-07"})
#: keys beside a ``$ref`` that validate nothing in any draft (places for ref targets)
_NOT_BESIDE = frozenset({"$ref", "$defs", "definitions"})


def old_draft_reading(schema: Any) -> str | None:
    """Where ``schema``, written in draft-03 to 2019-09 (its root ``$schema``), means
    something else read as 2020-12, which is how ``lower``'s passes read every schema (None:
    nothing such, or a later draft). Each was a wrong ``exact`` before: draft-07's
    ``{"$ref": R, "type": "string"}`` is ``R`` alone, since "all other properties in a
    "$ref" object MUST be ignored" (draft-handrews-json-schema-01, section 8.3), and was
    served as the conjunction. Also ``items`` as an array with ``additionalItems`` (2020-12:
    ``prefixItems`` and ``items``; the one such construct of 2019-09), draft-04's boolean
    ``exclusiveMinimum``/``Maximum`` (a flag on ``minimum``/``maximum``,
    draft-fge-json-schema-validation-00, sections 5.1.2 and 5.1.3) and ``dependencies``
    (split into ``dependentRequired``/``dependentSchemas`` in 2019-09); and every draft-03
    schema."""
    if not isinstance(schema, dict):
        return None
    try:
        label = draft_label(schema.get("$schema"))
    except UnknownDraft:
        return None  # the registry refuses it before lower sees it
    if label not in _BEFORE_2019 and label != "2019-09":
        return None
    if label == "draft-03":  # jsonschema's Draft3Validator: type_draft3, properties_draft3, ...
        return (
            "draft-03's type (schemas as types), required (a flag on the property), divisibleBy,"
            " disallow and extends read otherwise in 2020-12"
        )
    for node, _ in _schema_nodes(schema):
        if isinstance(node.get("items"), list) or "additionalItems" in node:
            return f"{label}'s items array and additionalItems read otherwise in 2020-12"
        if label == "2019-09":  # applies $ref's siblings; has dependentRequired/Schemas
            continue
        if "$ref" in node:
            beside = sorted(k for k in node if k in VOCABULARY and k not in _NOT_BESIDE)
            if beside:
                return f"{label} ignores {beside} beside $ref, which 2020-12 applies"
        for kw in ("exclusiveMinimum", "exclusiveMaximum"):
            if isinstance(node.get(kw), bool):
                return f"{label}'s boolean {kw} is a flag on minimum/maximum, a number in 2020-12"
        if "dependencies" in node:
            return f"{label}'s dependencies is dependentRequired/dependentSchemas in 2020-12"
    return None
