"""``check --engine``: which backend a serving engine really uses for each schema, or its 400.

A bare-library gate answers "does xgrammar enforce this schema?"; a deploy needs "what does
SGLang 0.5.23 / vLLM 0.32.0 do with it?". The rules below were read in those releases' code
and each one was checked against the real dev servers (tests/integration/: test_vllm_auto_routes,
test_vllm_check_engine, test_check_engine_servers; for users: docs/contracts/compare.md):

vLLM 0.32.0, ``structured_outputs_config.backend`` (``vllm/sampling_params.py``,
``v1/structured_output/backend_{xgrammar,guidance}.py``):

- ``auto`` (the default): xgrammar, unless ``has_xgrammar_unsupported_json_features`` is
  true or ``xgrammar.Grammar.from_json_schema`` raises; then, if ``patternProperties``
  appears anywhere in the schema, outlines (outlines_core); otherwise guidance
  (llguidance), whose own grammar validation turns an unsupported keyword into HTTP 400.
- ``xgrammar``/``guidance``/``outlines``: that backend only; what it refuses is HTTP 400.

SGLang 0.5.23 (``srt/constrained/json_schema_validation.py``): the configured
``--grammar-backend`` serves every schema; xgrammar and outlines reject with HTTP 400 the
schemas whose keywords they would ignore (the lists below are copied from that file);
llguidance rejects what llguidance itself refuses.

The enforcement walk then runs on the backend that serves the schema, with this project's
library versions (reported next to the versions the engine pins: they can differ).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

ENGINES = ("sglang", "vllm")
ENGINE_RELEASE = {"sglang": "0.5.23", "vllm": "0.32.0"}
# What each engine release pins (its wheel metadata); measurements use this project's own.
ENGINE_PINS = {
    "sglang": {"xgrammar": "0.2.7", "llguidance": ">=1.7.6,<2", "outlines": "0.1.11"},
    "vllm": {"xgrammar": "0.2.8", "llguidance": "1.7.6", "outlines_core": "0.2.14"},
}
VLLM_BACKENDS = ("auto", "xgrammar", "guidance", "outlines")
SGLANG_BACKENDS = ("xgrammar", "llguidance", "outlines")
# engine backend name -> this project's compare backend name
TO_COMPARE = {"xgrammar": "xgrammar", "guidance": "llguidance", "llguidance": "llguidance"}
TO_COMPARE["outlines"] = "outlines"


@dataclass
class Route:
    """What ``engine`` configured with ``configured`` does with one schema."""

    engine: str
    configured: str
    served_by: str | None  # the engine's backend name; None when the request is rejected
    rejected: bool
    reason: str  # why this backend (or why the 400)

    @property
    def compare_backend(self) -> str | None:
        return TO_COMPARE.get(self.served_by or "")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"compare_backend": self.compare_backend}


# --- vLLM 0.32.0 -------------------------------------------------------------------------

_VLLM_XGR_FORMATS = frozenset(
    {
        "email",
        "date",
        "time",
        "date-time",
        "duration",
        "ipv4",
        "ipv6",
        "hostname",
        "uuid",
        "uri",
        "uri-reference",
        "uri-template",
        "json-pointer",
        "relative-json-pointer",
    }
)


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


def vllm_xgrammar_unsupported(schema: Any) -> str | None:
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
        if "string" in types and "format" in obj and obj["format"] not in _VLLM_XGR_FORMATS:
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


def _has_key_anywhere(obj: Any, key: str) -> bool:
    if isinstance(obj, dict):
        return key in obj or any(_has_key_anywhere(v, key) for v in obj.values())
    if isinstance(obj, list):
        return any(_has_key_anywhere(v, key) for v in obj)
    return False


def _xgrammar_compile_error(schema: Any) -> str | None:
    try:
        import xgrammar as xgr

        xgr.Grammar.from_json_schema(json.dumps(schema))
    except Exception as exc:  # noqa: BLE001 - any failure is vLLM's fallback trigger
        return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    return None


def _llguidance_error(schema: Any) -> str | None:
    try:
        import llguidance

        grammar = llguidance.LLMatcher.grammar_from_json_schema(
            json.dumps(schema), defaults={"whitespace_flexible": True}
        )
        err = llguidance.LLMatcher.validate_grammar(grammar, None)
    except Exception as exc:  # noqa: BLE001 - vLLM maps these to HTTP 400 too
        return str(exc).splitlines()[0][:300]
    return err or None


def _outlines_error(schema: Any) -> str | None:
    try:
        from outlines_core import json_schema

        json_schema.build_regex_from_schema(json.dumps(schema))
    except Exception as exc:  # noqa: BLE001
        return str(exc).splitlines()[0][:300]
    return None


def route_vllm(schema: Any, configured: str = "auto") -> Route:
    """The backend vLLM 0.32.0 uses for ``schema`` under ``configured``, or its rejection."""

    def served(name: str, why: str) -> Route:
        return Route("vllm", configured, name, False, why)

    def rejected(why: str) -> Route:
        return Route("vllm", configured, None, True, why)

    if configured in ("xgrammar", "auto"):
        why = vllm_xgrammar_unsupported(schema)
        if why is None:
            err = _xgrammar_compile_error(schema)
            why = f"xgrammar cannot compile it ({err})" if err else None
        else:
            why = f"xgrammar does not support {why}"
        if why is None:
            return served("xgrammar", "xgrammar accepts it")
        if configured == "xgrammar":
            return rejected(why)
        if _has_key_anywhere(schema, "patternProperties"):
            err = _outlines_error(schema)
            return (
                rejected(f"{why}; outlines: {err}")
                if err
                else served("outlines", f"{why}; patternProperties rules out guidance")
            )
        err = _llguidance_error(schema)
        return rejected(f"{why}; guidance: {err}") if err else served("guidance", why)
    if configured == "guidance":
        err = _llguidance_error(schema)
        return rejected(f"guidance: {err}") if err else served("guidance", "configured")
    if configured == "outlines":
        err = _outlines_error(schema)
        return rejected(f"outlines: {err}") if err else served("outlines", "configured")
    raise ValueError(f"unknown vLLM backend {configured!r}")


# --- SGLang 0.5.23 -----------------------------------------------------------------------

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
SGLANG_XGRAMMAR_UNSUPPORTED = frozenset(
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
SGLANG_XGRAMMAR_FORMATS = _VLLM_XGR_FORMATS
SGLANG_OUTLINES_UNSUPPORTED = frozenset(
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


def _sglang_xgrammar(sub: dict[str, Any], ptr: str) -> str | None:
    bad = sorted(SGLANG_XGRAMMAR_UNSUPPORTED.intersection(sub))
    if bad:
        return f"{ptr}: keyword(s) {', '.join(bad)} would be ignored"
    if _describes_string(sub) and "format" in sub:
        fmt = sub["format"]
        if not isinstance(fmt, str) or fmt not in SGLANG_XGRAMMAR_FORMATS:
            return f"{ptr}: string format {fmt!r} is not implemented"
    groups = _string_groups(sub)
    if len(groups) > 1:
        return f"{ptr}: constraints {', '.join(groups)} cannot be enforced together"
    return None


def _sglang_outlines(sub: dict[str, Any], ptr: str) -> str | None:
    bad = sorted(SGLANG_OUTLINES_UNSUPPORTED.intersection(sub))
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


def sglang_rejection(schema: Any, backend: str) -> str | None:
    """SGLang 0.5.23's 400 reason for ``schema`` on ``backend`` (None: accepted).

    Only xgrammar and outlines have such a check in SGLang; llguidance is judged by
    llguidance itself (``route_sglang``).
    """
    check = {"xgrammar": _sglang_xgrammar, "outlines": _sglang_outlines}.get(backend)
    if check is None:
        return None
    for sub, ptr in _subschemas(schema):
        why = check(sub, ptr)
        if why:
            return (
                f"JSON Schema at {why.replace(': ', ' is not supported by ' + backend + ': ', 1)}"
            )
    return None


def route_sglang(schema: Any, configured: str = "xgrammar") -> Route:
    """The backend SGLang 0.5.23 uses for ``schema`` (always ``configured``), or its 400."""
    if configured not in SGLANG_BACKENDS:
        raise ValueError(f"unknown SGLang backend {configured!r}")
    why = sglang_rejection(schema, configured)
    if why is None and configured == "llguidance":
        err = _llguidance_error(schema)
        why = f"llguidance: {err}" if err else None
    if why is not None:
        return Route("sglang", configured, None, True, why)
    return Route("sglang", configured, configured, False, "configured --grammar-backend")


def route(schema: Any, engine: str, configured: str | None = None) -> Route:
    """``route_vllm`` or ``route_sglang`` with each engine's default backend."""
    if engine == "vllm":
        return route_vllm(schema, configured or "auto")
    if engine == "sglang":
        return route_sglang(schema, configured or "xgrammar")
    raise ValueError(f"unknown engine {engine!r}: expected one of {', '.join(ENGINES)}")


# --- the gate --------------------------------------------------------------------------

LATCH_NOTE = (
    "vLLM 0.32 builds ONE grammar backend per engine, from the first structured request after "
    "start, and compiles every later schema with it whatever auto routed it to (verified on "
    "the dev server: a schema auto routes to outlines was compiled by xgrammar on an engine "
    "whose first request was an xgrammar schema; an xgrammar schema got HTTP 500 on an "
    "engine whose first request went to outlines)"
)


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in ("xgrammar", "llguidance", "outlines_core"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def configured_backend(engine: str, backend: str | None) -> str:
    """The engine's own name for ``backend`` (``llguidance`` is ``guidance`` in vLLM)."""
    if engine not in ENGINES:
        from schemaops.errors import InputError

        raise InputError(f"unknown engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if backend is None:
        return "auto" if engine == "vllm" else "xgrammar"
    name = "guidance" if engine == "vllm" and backend == "llguidance" else backend
    allowed = VLLM_BACKENDS if engine == "vllm" else SGLANG_BACKENDS
    if name not in allowed:
        from schemaops.errors import InputError

        raise InputError(f"{engine} has no backend {backend!r}: expected {', '.join(allowed)}")
    return name


def run_engine_check(
    registry: Any = "schemas",
    engine: str = "vllm",
    backend: str | None = None,
    *,
    tokenizer: str = "qwen2.5",
    compile_budget_ms: float = 1000.0,
    jobs: int = 1,
    timeout_s: float | None = None,
    mem_mb: int | None = None,
    progress: Any = None,
    compile_threads: int | None = None,
    ray: str | None = None,
) -> Any:
    """``run_check`` for a serving engine: each schema gated on the backend that serves it.

    A schema the engine rejects (HTTP 400) fails the gate with the engine's reason. The
    others are measured on their backend and judged by ``evaluate``; each case carries its
    route in ``result["engine_route"]``. Options as for ``run_check``.
    """
    from schemaops.check.gate import CheckCase, CheckReport, Problem, evaluate, gate_options
    from schemaops.compare.run import (
        connect_ray,
        host_cpus,
        measure_items,
        registry_items,
    )

    configured = configured_backend(engine, backend)
    timeout_s, mem_mb, compile_threads = gate_options(
        compile_budget_ms, timeout_s, jobs, mem_mb, compile_threads
    )
    items = registry_items(registry)
    ray_info = connect_ray(ray)
    routes: dict[str, Route] = {}
    for it in items:
        try:
            routes[it.name] = route(json.loads(it.schema_text), engine, configured)
        except ValueError as exc:
            routes[it.name] = Route(engine, configured, None, True, f"not a JSON schema: {exc}")
    cases: dict[str, CheckCase] = {}
    for compare_backend in sorted(
        {r.compare_backend for r in routes.values() if r.compare_backend}
    ):
        subset = [it for it in items if routes[it.name].compare_backend == compare_backend]
        # the worker settings keyword by keyword, as in run_check (measure_items' signature)
        results = measure_items(
            subset,
            [compare_backend],
            tokenizer,
            jobs=jobs,
            timeout_s=timeout_s,
            mem_mb=mem_mb,
            progress=progress,
            compile_threads=compile_threads,
            ray=ray,
        )
        for res in results:
            case = evaluate(res, compare_backend, compile_budget_ms, timeout_s)
            cases[case.schema] = case
    served = {r.served_by for r in routes.values() if not r.rejected}
    latch = engine == "vllm" and configured == "auto" and len(served) > 1
    release = ENGINE_RELEASE[engine]
    label = f"{engine} {release} ({configured})"
    out = []
    for it in items:
        r = routes[it.name]
        case = cases.get(it.name)
        if case is None:
            case = CheckCase(it.name, "rejected", None, "rejected")
            case.problems.append(
                Problem(
                    "engine_rejects",
                    f"{label} answers HTTP 400: {r.reason}",
                    "drop or rewrite the construct and enforce it in application validation, "
                    "or configure a backend that serves it (`schemaops check --engine "
                    f"{engine} --backend ...`)",
                )
            )
        else:
            case.warnings.insert(0, f"{label} serves it with {r.served_by} ({r.reason})")
        case.result["engine_route"] = r.to_dict()
        if latch and not r.rejected:
            case.warnings.append(
                f"this registry mixes auto routes ({', '.join(sorted(map(str, served)))}): on "
                "vLLM 0.32 the first structured request after start fixes the engine's backend "
                "for all (settings.latch)"
            )
        out.append(case)
    settings = {
        "compile_threads": compile_threads,
        "host": host_cpus(),
        "engine": engine,
        "engine_release": release,
        "engine_backend": configured,
        "engine_pins": ENGINE_PINS[engine],
        "measured_with": _versions(),
        "routes": {
            str(b): sorted(n for n, r in routes.items() if r.served_by == b) for b in served
        },
        "latch": LATCH_NOTE if latch else None,
    }
    if ray_info:
        settings["ray"] = ray_info
    return CheckReport(label, tokenizer, str(registry), float(compile_budget_ms), out, settings)


def versions_line(settings: dict[str, Any]) -> str:
    """One line for the text report: what the engine pins vs what the walk measured with."""
    pins = ", ".join(f"{k} {v}" for k, v in (settings.get("engine_pins") or {}).items())
    measured = ", ".join(f"{k} {v}" for k, v in (settings.get("measured_with") or {}).items())
    line = (
        f"{settings.get('engine')} {settings.get('engine_release')} pins {pins}; "
        f"enforcement measured with {measured}"
    )
    if settings.get("latch"):
        line += f"\nlatch: {settings['latch']}"
    return line
