"""The latch and grammar-cache decision of a deploy, made once for ``check --engine`` and ``warm``.

Both commands ask the same questions of the same requests, and used to answer them apart
(which schemas count against the cache, the measuring deadline, which schema is "first" for
vLLM's latch), so ``check --engine vllm`` could gate a latch ``warm`` never created. Here:

- the send order: least used first (``seen``; ties keep the given order), so an LRU keeps
  the most used longest; then, on an engine that latches (vLLM ``auto``), the first request
  whose every schema the default route serves with xgrammar is moved to the front, because
  the first structured request after start fixes the engine's backend for all
  (``engines/vllm.py``, ``LATCH_NOTE``);
- the latch: the engine model's ``latched`` over the routes in that order;
- what each request is compiled with on that engine (``run_route``);
- the cache verdict per backend (``capacity.fit``) over every request the engine caches: every
  request it does not refuse with HTTP 400 (a schema the gate fails for its compile time or
  an unenforced keyword still compiles and takes room), measured in send order with one
  deadline rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from schemaops.engines import get_engine
from schemaops.engines.base import Route
from schemaops.engines.capacity import (
    DEFAULT_HEADROOM_PCT,
    Fit,
    check_headroom,
    fit,
    version_notes,
    xgrammar_footprint,
)


@dataclass
class Request:
    """One structured request of the deploy: a registry schema or a log's grammar.

    ``name`` is unique among the requests; ``schemas`` the JSON schemas it carries (several
    for a tools request, none for a regex); ``key`` the cache key string the engine derives
    from it (None: the server derives it, e.g. tools); ``refused``: why it is no valid
    request at all (the engine answers 400)."""

    name: str
    schemas: list[Any]
    key: str | None
    key_type: str = "json"
    seen: int = 0
    refused: str | None = None


@dataclass
class Decision:
    """What the engine does with the requests, in the order they are sent."""

    engine: str
    configured: str
    order: list[str]
    routes: dict[str, list[Route]]  # on a fresh engine, per request
    runs: dict[str, list[Route]]  # on the latched engine, per request
    latch: str | None
    mixed: bool  # the requests' fresh-engine routes differ: the latch matters
    cache: dict[str, Fit] = field(default_factory=dict)  # per backend that compiles requests

    def backend_of(self, name: str) -> str | None:
        """The backend that compiles request ``name`` (None: refused with HTTP 400)."""
        runs = self.runs[name]
        if any(r.rejected for r in runs):
            return None
        return runs[0].served_by if runs else (self.latch or self.configured)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "configured": self.configured,
            "order": self.order,
            "latched_backend": self.latch if self.mixed else None,
            "grammar_cache": {b: v.to_dict() for b, v in self.cache.items()},
        }


def measure_deadline(timeout_s: float, schemas: int) -> float:
    """The measuring child's deadline: ``timeout_s`` per schema plus a minute to start."""
    return timeout_s * schemas + 60.0


def send_order(
    requests: list[Request], routes: Mapping[str, list[Route]], latches: bool
) -> list[Request]:
    """``requests`` least used first; when the engine ``latches``, the first request whose
    every schema is served by xgrammar on a fresh engine (``routes``) moved to the front."""
    ordered = sorted(requests, key=lambda r: r.seen)
    if not latches:
        return ordered

    def xgrammar_only(req: Request) -> bool:
        rs = routes[req.name]
        return bool(rs) and all(r.served_by == "xgrammar" and not r.rejected for r in rs)

    first = next((i for i, r in enumerate(ordered) if xgrammar_only(r)), None)
    if first is None:
        return ordered
    return [ordered[first], *ordered[:first], *ordered[first + 1 :]]


def fresh_routes(eng: Any, req: Request, configured: str) -> list[Route]:
    """What a fresh engine does with each schema of ``req`` (its 400 when ``refused``)."""
    if req.refused is not None:
        return [Route(eng.name, configured, None, True, req.refused)]
    return [eng.route(s, configured) for s in req.schemas]


def latches(eng: Any, configured: str) -> bool:
    """Whether ``eng`` under ``configured`` fixes one backend for all (vLLM ``auto``)."""
    probe = Route(eng.name, configured, "xgrammar", False, "probe")
    return eng.latched([probe], configured) is not None


def decide(
    engine: str,
    requests: list[Request],
    configured: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    tokenizer: str = "qwen2.5",
    headroom_pct: float = DEFAULT_HEADROOM_PCT,
    timeout_s: float = 60.0,
    engine_xgrammar: tuple[str | None, str] | None = None,
) -> Decision:
    """The order, latch, compiling backend and cache verdict of ``requests`` on ``engine``.

    ``env``: the server's environment for the cache cap (``VLLM_XGRAMMAR_CACHE_MB``; empty:
    the engine's default); ``timeout_s``: the measuring deadline per schema;
    ``engine_xgrammar``: (the engine's xgrammar version or None, where that was read),
    default the version the engine model's release pins."""
    eng = get_engine(engine)
    configured = eng.configured_backend(configured)
    headroom_pct = check_headroom(headroom_pct)
    routes = {req.name: fresh_routes(eng, req, configured) for req in requests}
    ordered = send_order(requests, routes, latches(eng, configured))
    every = [r for req in ordered for r in routes[req.name]]
    latch = eng.latched(every, configured)
    served = {r.served_by for r in every if not r.rejected}
    runs = {
        req.name: [
            eng.run_route(r, latch, s) for r, s in zip(routes[req.name], req.schemas, strict=False)
        ]
        if req.refused is None
        else routes[req.name]
        for req in ordered
    }
    decision = Decision(
        engine,
        configured,
        [r.name for r in ordered],
        routes,
        runs,
        latch,
        latch is not None and len(served) > 1,
    )
    if engine_xgrammar is None:
        engine_xgrammar = (
            eng.pins.get("xgrammar"),
            f"pinned by {eng.name} {eng.release}, the engine model's release",
        )
    server_env = dict(env or {})
    cached: dict[str, list[Request]] = {}
    for req in ordered:
        backend = decision.backend_of(req.name)
        if backend is not None:  # by the cache's own backend name (vLLM auto: xgrammar's)
            cached.setdefault(eng.cache_policy(backend, server_env).backend, []).append(req)
    for backend, reqs in cached.items():
        policy = eng.cache_policy(backend, server_env)
        footprint = None
        if backend == "xgrammar" and policy.kind in ("lru_bytes", "unbounded"):
            texts = {r.name: r.key for r in reqs if r.key is not None and r.key_type == "json"}
            footprint = xgrammar_footprint(  # type: ignore[arg-type]
                texts, tokenizer, measure_deadline(timeout_s, len(texts))
            )
            for r in reqs:
                if r.key is None:
                    footprint.unknown[r.name] = "the server derives this key (tools)"
                elif r.key_type != "json":
                    footprint.unknown[r.name] = f"a {r.key_type} grammar: not measured"
        verdict = fit(policy, len(reqs), footprint, headroom_pct)
        verdict.versions = version_notes(footprint, *engine_xgrammar)
        decision.cache[backend] = verdict
    return decision
