"""``lower --engine sglang|vllm``: the serving engine's own rules on top of the library's.

A bare-library lowering answers "does xgrammar compile and enforce the served schema?"; a
deploy sends it through an engine, which may answer HTTP 400 first (SGLang 0.5.23 refuses
schemas whose keywords its xgrammar/outlines backend would ignore; vLLM 0.32.0 configured
with xgrammar refuses its ``has_xgrammar_unsupported_json_features``) and keys its grammar
cache on its own string. The rules are the engine models' (``schemaops.engines``, as for
``check --engine``): the engine is configured with the lowered backend (SGLang
``--grammar-backend B``, vLLM ``structured_outputs_config.backend B``, where llguidance is
``guidance``).

Two steps: ``engine_caps`` marks the keywords the engine refuses as ``refused`` before the
rewrite (so they go to an exact rewrite or to the residual instead of a 400), and
``engine_verdict`` routes the served document through the engine's rules afterwards (the
proof: a served schema the engine would refuse is a problem, never a pass).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schemaops.engines import Route, get_engine, route
from schemaops.engines.sglang import OUTLINES_UNSUPPORTED as SGLANG_OUTLINES_UNSUPPORTED
from schemaops.engines.sglang import XGRAMMAR_UNSUPPORTED as SGLANG_XGRAMMAR_UNSUPPORTED
from schemaops.registry.model import canonical_text, openai_text
from schemaops.strings import sha256_hex

#: probe keys per JSON Schema keyword, for the keyword lists the engines refuse
_KEYS = {
    "contains": ("array.contains",),
    "minContains": ("array.contains",),
    "maxContains": ("array.contains",),
    "uniqueItems": ("array.uniqueItems",),
    "multipleOf": ("integer.multipleOf", "number.multipleOf"),
    "minimum": ("integer.minimum", "number.minimum"),
    "maximum": ("integer.maximum", "number.maximum"),
    "exclusiveMinimum": ("integer.exclusiveMinimum", "number.exclusiveMinimum"),
    "exclusiveMaximum": ("integer.exclusiveMaximum", "number.exclusiveMaximum"),
    "dependentRequired": ("object.dependentRequired",),
    "if": ("if",),
    "then": ("if",),
    "else": ("if",),
    "not": ("not",),
    "allOf": ("allOf",),
    "oneOf": ("oneOf",),
}
#: vLLM 0.32.0 with xgrammar configured: what ``has_xgrammar_unsupported_json_features``
#: refuses, as probe keys (a pattern or format with a length bound; allOf with 2+ branches)
_VLLM_XGRAMMAR = (
    "integer.multipleOf",
    "number.multipleOf",
    "array.uniqueItems",
    "array.contains",
    "pattern.with_length",
    "format.with_length",
    "allOf",
)
#: SGLang 0.5.23 refuses format/pattern/length together on one string for both backends
_SGLANG_STRING_GROUPS = ("pattern.with_length", "format.with_length")


@dataclass
class EngineTarget:
    """The engine a lowering is for: its release, its configured backend name, its pins."""

    engine: str
    configured: str

    @property
    def label(self) -> str:
        return get_engine(self.engine).label(self.configured)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.engine,
            "release": get_engine(self.engine).release,
            "configured": self.configured,
            "pins": get_engine(self.engine).pins,
        }


def engine_target(engine: str, backend: str) -> EngineTarget:
    """``engine`` configured with ``backend``; ``InputError`` (exit 2) for an unknown engine."""
    return EngineTarget(engine, get_engine(engine).configured_backend(backend))


def engine_caps(caps: dict[str, str], target: EngineTarget) -> dict[str, str]:
    """``caps`` with every keyword the engine refuses (HTTP 400) marked ``refused``."""
    refused: set[str] = set()
    if target.engine == "sglang":
        words = {"xgrammar": SGLANG_XGRAMMAR_UNSUPPORTED, "outlines": SGLANG_OUTLINES_UNSUPPORTED}
        for kw in words.get(target.configured, ()):
            refused.update(_KEYS.get(kw, (f"keyword.{kw}",)))
        if target.configured in words:
            refused.update(_SGLANG_STRING_GROUPS)
    elif target.engine == "vllm" and target.configured == "xgrammar":
        refused.update(_VLLM_XGRAMMAR)
    return {**caps, **dict.fromkeys(sorted(refused), "refused")}


def request_wire(doc: Any, engine: str) -> tuple[str, str]:
    """(request path, key string) the engine caches the served schema's grammar under.

    SGLang's ``/generate`` ``json_schema`` keys on the string as sent (the registry's native
    bytes); vLLM's ``response_format``/``structured_outputs.json`` object keys on
    ``json.dumps(schema)`` (docs/contracts/wire-strings.md).
    """
    if engine == "sglang":
        return "sglang:/generate json_schema", canonical_text(doc)
    return "vllm:response_format json_schema (json.dumps of the object)", openai_text(doc)


def engine_verdict(doc: Any, target: EngineTarget) -> tuple[Route, str | None]:
    """The engine's route for the served document, and the problem it raises (or None)."""
    r = route(doc, target.engine, target.configured)
    if r.rejected:
        return r, f"{target.label} answers HTTP 400 for the served schema: {r.reason}"
    return r, None


def engine_case(doc: Any, r: Route) -> dict[str, Any]:
    """The ``engine`` entry of a case: route, request path, key string and its sha256."""
    path, wire = request_wire(doc, r.engine)
    return {"route": r.to_dict(), "path": path, "wire": wire, "wire_sha256": sha256_hex(wire)}
