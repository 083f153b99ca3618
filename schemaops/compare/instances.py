"""Instances to walk through backends: worker-ready dicts, ordered like the schema, invalid
ones attributed to the keyword they violate. Where instances come from: a registry's
examples, ``generate`` (hypothesis-jsonschema) and ``suite`` (JSON-Schema-Test-Suite).

Every instance becomes a small dict the worker understands::

    {"kind": "valid"|"invalid", "index": int, "source": "registry"|"generated"|"suite"|"given",
     "value": <the JSON value>, "keyword": <violated keyword, invalid only>}

Values are re-ordered like the schema (``order_like_schema``) before serialisation, because
xgrammar, llguidance and outlines all make a model write properties in schema order: a valid
instance with keys in another order is not one these grammars can produce, and counting it
as ``rejects_valid`` would blame the backend for the example's key order.
"""

from __future__ import annotations

import re
from typing import Any

from jsonschema import exceptions as js_exceptions
from jsonschema import validators

from schemaops.formats import format_checker
from schemaops.registry.refs import no_fetch
from schemaops.strings import follow_local_refs


def validator(schema: Any) -> Any:
    """A jsonschema validator for ``schema``'s draft, asserting ``format`` with the
    project's one format semantics (``schemaops.formats``), as the audit and the registry do."""
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    return cls(schema, format_checker=format_checker(), registry=no_fetch())


def violated_keyword(schema: Any, instance: Any) -> str | None:
    """The keyword of jsonschema's most relevant error for ``instance`` (None if valid)."""
    try:
        err = js_exceptions.best_match(validator(schema).iter_errors(instance))
    except Exception:  # an unresolvable $ref or a broken schema: no attribution
        return "?"
    return None if err is None else str(err.validator)


def _resolve(schema: Any, root: Any) -> Any:
    """Follow local ``$ref`` (``#/...`` JSON pointers) a few times; give up on anything else."""
    return follow_local_refs(schema, root)[0]


def _branches(schema: dict) -> list[dict]:
    out = [schema]
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key) or []:
            if isinstance(sub, dict):
                out.append(sub)
    return out


def _subschema(key: str, props: dict, patterns: list, extra: Any) -> Any:
    """The schema that governs ``key``: its property, else a matching pattern, else extra."""
    if key in props:
        return props[key]
    for pat, sch in patterns:
        try:
            if re.search(pat, key):
                return sch
        except re.error:
            continue
    return extra


def order_like_schema(instance: Any, schema: Any, root: Any = None, depth: int = 0) -> Any:
    """``instance`` with object keys in the order the schema declares them (recursively).

    Keys come in order of first appearance across ``properties`` of the schema and its
    ``allOf``/``anyOf``/``oneOf`` branches (local ``$ref`` followed); undeclared keys keep
    their order after them. Approximate by design: it never changes values, only key order.
    """
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if depth > 64 or not isinstance(schema, dict):
        return instance
    branches = [_resolve(b, root) for b in _branches(schema)]
    branches = [b for b in branches if isinstance(b, dict)]
    if isinstance(instance, dict):
        order: list[str] = []
        sub: dict[str, Any] = {}
        for b in branches:
            for k, v in (b.get("properties") or {}).items():
                if k not in sub:
                    order.append(k)
                    sub[k] = v
        extra = next(
            (
                b["additionalProperties"]
                for b in branches
                if isinstance(b.get("additionalProperties"), dict)
            ),
            None,
        )
        patterns = [
            (pat, sch)
            for b in branches
            if isinstance(b.get("patternProperties"), dict)
            for pat, sch in b["patternProperties"].items()
        ]
        keys = [k for k in order if k in instance] + [k for k in instance if k not in sub]
        return {
            k: order_like_schema(instance[k], _subschema(k, sub, patterns, extra), root, depth + 1)
            for k in keys
        }
    if isinstance(instance, list):
        prefix = next(
            (b["prefixItems"] for b in branches if isinstance(b.get("prefixItems"), list)), []
        )
        items = next((b["items"] for b in branches if isinstance(b.get("items"), dict)), None)
        return [
            order_like_schema(v, prefix[i] if i < len(prefix) else items, root, depth + 1)
            for i, v in enumerate(instance)
        ]
    return instance


def build_instances(
    schema: Any,
    valid: list[Any] = (),  # type: ignore[assignment]
    invalid: list[Any] = (),  # type: ignore[assignment]
    source: str = "registry",
) -> list[dict[str, Any]]:
    """Worker-ready instance dicts (schema-ordered, invalid ones with their keyword)."""
    out: list[dict[str, Any]] = []
    for i, v in enumerate(valid):
        out.append(
            {
                "kind": "valid",
                "index": i,
                "source": source,
                "value": order_like_schema(v, schema),
                "keyword": None,
            }
        )
    for i, v in enumerate(invalid):
        out.append(
            {
                "kind": "invalid",
                "index": i,
                "source": source,
                "value": order_like_schema(v, schema),
                "keyword": violated_keyword(schema, v),
            }
        )
    return out
