"""SGLang 0.5.23: what it does with a schema, how it keys and keeps compiled grammars.

Routing (``srt/constrained/json_schema_validation.py``): the configured ``--grammar-backend``
serves every schema; xgrammar and outlines answer HTTP 400 for the schemas whose keywords
they would ignore (the lists below are copied from that file); llguidance refuses what
llguidance itself refuses. No latch: each request is compiled by the configured backend.

Grammar cache (``srt/constrained/base_grammar_backend.py``, ``BaseGrammarBackend.__init__``:
``self.cache: Dict[Tuple[str, str], BaseGrammarObject] = {}``, emptied only by ``reset``,
i.e. ``/flush_cache``): a plain dict, never evicted. Every distinct schema stays compiled
until restart, so a warm run never evicts anything, but the memory grows with each distinct
key (read in the 0.5.23 wheel the dev server installs, line 206; the same dict on
https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/constrained/base_grammar_backend.py).

Cache keys (read in its source): ``/generate`` keys ``("json", sampling_params["json_schema"])``,
the string as sent; ``response_format: json_schema`` keys ``json.dumps(schema)``
(``sglang.utils.convert_json_schema_to_str``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from schemaops.engines.base import (
    OPENAI_PATHS,
    XGRAMMAR_FORMATS,
    CachePolicy,
    Engine,
    Route,
    llguidance_error,
)

# SGLang 0.5.23's own keyword lists (srt/constrained/json_schema_validation.py), copied: they
# must follow that release, not registry/refs.py's look-alike list of every subschema keyword.
_SINGLE = (
    "additionalItems",
    "additionalProperties",
    "contains",
    "contentSchema",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_ARRAYS = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAPS = ("$defs", "definitions", "dependentSchemas", "patternProperties", "properties")
XGRAMMAR_UNSUPPORTED = frozenset(
    {
        "contains",
        "dependentRequired",
        "dependentSchemas",
        "else",
        "if",
        "maxContains",
        "minContains",
        "multipleOf",
        "not",
        "then",
        "uniqueItems",
    }
)
OUTLINES_UNSUPPORTED = frozenset(
    {
        "allOf",
        "contains",
        "dependentRequired",
        "dependentSchemas",
        "else",
        "exclusiveMaximum",
        "exclusiveMinimum",
        "if",
        "maxContains",
        "maximum",
        "minContains",
        "minimum",
        "multipleOf",
        "not",
        "oneOf",
        "patternProperties",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
        "uniqueItems",
    }
)
CACHE_SOURCE = "sglang 0.5.23 python/sglang/srt/constrained/base_grammar_backend.py:206"


def _subschemas(schema: Any, pointer: str = "#") -> Iterator[tuple[dict[str, Any], str]]:
    """SGLang's ``_iter_subschemas``: schema-bearing keywords only, never instance data."""
    if not isinstance(schema, dict):
        return
    yield schema, pointer
    for kw in _SINGLE:
        child = schema.get(kw)
        if isinstance(child, dict):
            yield from _subschemas(child, f"{pointer}/{kw}")
        elif kw == "items" and isinstance(child, list):
            for i, item in enumerate(child):
                yield from _subschemas(item, f"{pointer}/{kw}/{i}")
    for kw in _ARRAYS:
        children = schema.get(kw)
        if isinstance(children, list):
            for i, child in enumerate(children):
                yield from _subschemas(child, f"{pointer}/{kw}/{i}")
    for kw in (*_MAPS, "dependencies"):
        children = schema.get(kw)
        if isinstance(children, dict):
            for name, child in children.items():
                esc = str(name).replace("~", "~0").replace("/", "~1")
                yield from _subschemas(child, f"{pointer}/{kw}/{esc}")


def _describes_string(s: dict[str, Any]) -> bool:
    t = s.get("type")
    return t is None or t == "string" or (isinstance(t, list) and "string" in t)


def _string_groups(s: dict[str, Any]) -> list[str]:
    if not _describes_string(s):
        return []
    groups = [g for g in ("format", "pattern") if g in s]
    if "minLength" in s or "maxLength" in s:
        groups.append("minLength/maxLength")
    return groups


def _xgrammar(sub: dict[str, Any], ptr: str) -> str | None:
    bad = sorted(XGRAMMAR_UNSUPPORTED.intersection(sub))
    if bad:
        return f"{ptr}: keyword(s) {', '.join(bad)} would be ignored"
    if _describes_string(sub) and "format" in sub:
        fmt = sub["format"]
        if not isinstance(fmt, str) or fmt not in XGRAMMAR_FORMATS:
            return f"{ptr}: string format {fmt!r} is not implemented"
    groups = _string_groups(sub)
    if len(groups) > 1:
        return f"{ptr}: constraints {', '.join(groups)} cannot be enforced together"
    return None


def _outlines(sub: dict[str, Any], ptr: str) -> str | None:
    bad = sorted(OUTLINES_UNSUPPORTED.intersection(sub))
    if bad:
        return f"{ptr}: keyword(s) {', '.join(bad)} would be ignored or weakened"
    groups = _string_groups(sub)
    if len(groups) > 1:
        return f"{ptr}: constraints {', '.join(groups)} cannot be enforced together"
    if "properties" in sub:
        extra = {"additionalProperties", "maxProperties", "minProperties"} & set(sub)
        if sub.get("additionalProperties") is False:
            extra.discard("additionalProperties")
        if extra:
            return f"{ptr}: properties cannot be combined with {', '.join(sorted(extra))}"
    if "prefixItems" in sub:
        bounds = sorted({"maxItems", "minItems"} & set(sub))
        if bounds:
            return f"{ptr}: prefixItems cannot be combined with {', '.join(bounds)}"
    if "required" in sub and "properties" not in sub:
        return f"{ptr}: required is only enforced when properties is present"
    return None


def rejection(schema: Any, backend: str) -> str | None:
    """SGLang 0.5.23's 400 reason for ``schema`` on ``backend`` (None: accepted).

    Only xgrammar and outlines have such a check in SGLang; llguidance is judged by
    llguidance itself (``SGLangEngine.route``).
    """
    check = {"xgrammar": _xgrammar, "outlines": _outlines}.get(backend)
    if check is None:
        return None
    for sub, ptr in _subschemas(schema):
        why = check(sub, ptr)
        if why:
            return (
                f"JSON Schema at {why.replace(': ', ' is not supported by ' + backend + ': ', 1)}"
            )
    return None


class SGLangEngine(Engine):
    """SGLang 0.5.23."""

    name = "sglang"
    release = "0.5.23"
    pins = {"xgrammar": "0.2.7", "llguidance": ">=1.7.6,<2", "outlines": "0.1.11"}
    backends = ("xgrammar", "llguidance", "outlines")
    #: /generate's sampling_params json_schema, regex and ebnf (``srt/sampling/
    #: sampling_params.py``), then the OpenAI-compatible chat paths
    request_paths = ("generate.json_schema", "generate.regex", "generate.ebnf", *OPENAI_PATHS)

    def route(self, schema: Any, configured: str | None = None) -> Route:
        """The backend SGLang uses for ``schema`` (always ``configured``), or its 400."""
        configured = configured or self.default_backend
        if configured not in self.backends:
            raise ValueError(f"unknown SGLang backend {configured!r}")
        why = rejection(schema, configured)
        if why is None and configured == "llguidance":
            err = llguidance_error(schema)
            why = f"llguidance: {err}" if err else None
        if why is not None:
            return Route("sglang", configured, None, True, why)
        return Route("sglang", configured, configured, False, "configured --grammar-backend")

    def cache_policy(self, backend: str, env: dict[str, str] | None = None) -> CachePolicy:
        """Every backend shares ``BaseGrammarBackend``'s dict: unbounded, never evicted."""
        return CachePolicy(self.name, backend, "unbounded", CACHE_SOURCE)

    def cache_keys(self, native_wire: str, bundled: Any) -> dict[str, str]:
        return {
            "sglang:/generate json_schema": native_wire,
            "response_format": json.dumps(bundled),
        }


SGLANG = SGLangEngine()
