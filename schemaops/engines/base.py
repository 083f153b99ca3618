"""What every serving-engine model has: a route per schema, a grammar-cache policy, cache keys.

One module per engine (``sglang.py``, ``vllm.py``) subclasses ``Engine`` with the rules read
in that release's code; ``check --engine``, ``warm`` and ``lower --engine`` ask the engine
object, never a copy of its rules. Adding an engine is one module plus its tests, and one
line in ``schemaops/engines/__init__.py``.

The three library probes below (``xgrammar_compile_error``, ``llguidance_error``,
``outlines_error``) are what the engines' own validation calls: a schema the library refuses
is refused by every engine that uses that library.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from schemaops.errors import InputError

# engine backend name -> this project's compare backend name
TO_COMPARE = {
    "xgrammar": "xgrammar",
    "guidance": "llguidance",
    "llguidance": "llguidance",
    "outlines": "outlines",
}

# The string formats xgrammar implements (the same list in vLLM's
# has_xgrammar_unsupported_json_features and SGLang's json_schema_validation.py).
XGRAMMAR_FORMATS = frozenset(
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


@dataclass(frozen=True)
class CachePolicy:
    """How one engine backend keeps compiled grammars, as read in the engine's code.

    ``kind``: ``lru_bytes`` (evicts least recently used past ``cap_bytes``), ``lru_entries``
    (past ``cap_entries``), ``unbounded`` (keeps every grammar until restart: memory grows
    with every distinct schema) or ``none`` (compiles on every request: nothing to warm).
    ``setting`` names what changes the cap; ``source`` is where the rule was read.
    """

    engine: str
    backend: str
    kind: str
    source: str
    cap_bytes: int | None = None
    cap_entries: int | None = None
    setting: str | None = None
    default: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def xgrammar_compile_error(schema: Any) -> str | None:
    """Why ``xgrammar.Grammar.from_json_schema`` refuses ``schema`` (None: it compiles)."""
    try:
        import xgrammar as xgr

        xgr.Grammar.from_json_schema(json.dumps(schema))
    except Exception as exc:  # noqa: BLE001 - any failure is the engines' refusal trigger
        return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    return None


def llguidance_error(schema: Any) -> str | None:
    """llguidance's own grammar validation of ``schema`` (None: valid), as the engines run it."""
    try:
        import llguidance

        grammar = llguidance.LLMatcher.grammar_from_json_schema(
            json.dumps(schema), defaults={"whitespace_flexible": True}
        )
        err = llguidance.LLMatcher.validate_grammar(grammar, None)
    except Exception as exc:  # noqa: BLE001 - the engines map these to HTTP 400 too
        return str(exc).splitlines()[0][:300]
    return err or None


def outlines_error(schema: Any) -> str | None:
    """Why outlines_core cannot build a regex for ``schema`` (None: it can)."""
    try:
        from outlines_core import json_schema

        json_schema.build_regex_from_schema(json.dumps(schema))
    except Exception as exc:  # noqa: BLE001
        return str(exc).splitlines()[0][:300]
    return None


def has_key_anywhere(obj: Any, key: str) -> bool:
    """``key`` appears as an object key anywhere in ``obj`` (vLLM's patternProperties test)."""
    if isinstance(obj, dict):
        return key in obj or any(has_key_anywhere(v, key) for v in obj.values())
    if isinstance(obj, list):
        return any(has_key_anywhere(v, key) for v in obj)
    return False


#: the structured-output paths of any OpenAI-compatible chat endpoint (response_format,
#: tools with each tool_choice); an engine adds its own native ones
OPENAI_PATHS = (
    "response_format.json_schema",
    "response_format.json_object",
    "tools.required",
    "tools.required_strict",
    "tools.named",
    "tools.named_strict",
    "tools.auto",
    "tools.auto_strict",
)


class Engine:
    """One serving engine release: subclasses fill in the class attributes and ``route``."""

    name: str = ""
    release: str = ""
    #: what the release pins (its wheel metadata); measurements use this project's own
    pins: dict[str, str] = {}
    #: the engine's own backend names, the default first
    backends: tuple[str, ...] = ()
    #: ``--backend llguidance`` spelled the engine's way (vLLM: ``guidance``)
    aliases: dict[str, str] = {}
    #: the structured-output request paths the release offers (``probe/paths.py`` builds
    #: each path's request; the OpenAI-compatible ones are ``OPENAI_PATHS``)
    request_paths: tuple[str, ...] = ()

    @property
    def default_backend(self) -> str:
        return self.backends[0]

    def label(self, configured: str) -> str:
        return f"{self.name} {self.release} ({configured})"

    def configured_backend(self, backend: str | None) -> str:
        """The engine's own name for ``backend`` (None: its default); ``InputError`` if none."""
        if backend is None:
            return self.default_backend
        name = self.aliases.get(backend, backend)
        if name not in self.backends:
            raise InputError(
                f"{self.name} has no backend {backend!r}: expected {', '.join(self.backends)}"
            )
        return name

    def route(self, schema: Any, configured: str | None = None) -> Route:
        """The backend serving ``schema`` under ``configured`` for one request, or its 400."""
        raise NotImplementedError

    def latched(self, routes: list[Route], configured: str) -> str | None:
        """The one backend every schema is compiled with, when the engine fixes one for all
        (``routes`` in the order they are first sent); None when each request keeps its
        route. Only vLLM's ``auto`` latches."""
        return None

    def run_route(self, route: Route, latch: str | None, schema: Any) -> Route:
        """What really compiles ``schema`` on an engine latched on ``latch`` (None: ``route``)."""
        return route

    def unenforced_under_latch(self, schema: Any, latch: str) -> str | None:
        """What a backend latched on ``latch`` compiles in ``schema`` without enforcing it
        (None: nothing known)."""
        return None

    def cache_policy(self, backend: str, env: dict[str, str] | None = None) -> CachePolicy:
        """The grammar-cache policy of ``backend`` (``env``: the server's environment)."""
        raise NotImplementedError

    def cache_keys(self, native_wire: str, bundled: Any) -> dict[str, str]:
        """The cache key string each API path of this engine derives from one registry schema."""
        raise NotImplementedError
