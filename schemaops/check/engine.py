"""``check --engine``: each schema gated on the backend the serving engine really runs for it.

A bare-library gate answers "does xgrammar enforce this schema?"; a deploy needs "what does
SGLang 0.5.23 / vLLM 0.32.0 do with it?". What each engine does is ``schemaops.engines``
(one module per engine: routes, refusals, vLLM's one-backend latch, the grammar-cache
policy); this module only runs the gate on it:

- a schema the engine rejects (HTTP 400) fails with the engine's reason;
- the others are measured and judged (``check.gate.evaluate``) on the backend that really
  compiles them: under vLLM ``auto`` with a registry of mixed routes, that is the latched
  backend (the one ``warm`` latches on purpose), not the one ``auto`` would pick on a fresh
  engine; a schema whose constructs the latched backend does not enforce fails
  (``engine_latch``);
- the registry's compiled footprint on the served tokenizer is measured against the
  engine's grammar cache (``engines.capacity``), with ``cache_headroom_pct`` of the cap left
  free for traffic outside the registry: a registry that does not fit fails every schema it
  would evict (``cache_capacity``) with the setting that makes it fit.

The order, the latch and the cache verdict are ``engines.decision.decide``'s, the one
function ``warm`` uses too, on the requests ``warm`` sends for a registry (each schema as
``response_format``, keyed by ``json.dumps`` of the object), so the two cannot disagree.

The walk uses this project's library versions (reported next to the versions the engine
pins: they can differ). Checked against the real dev servers in tests/integration/
(test_vllm_auto_routes, test_vllm_check_engine, test_check_engine_servers).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from schemaops.engines import get_engine, route
from schemaops.engines.capacity import DEFAULT_HEADROOM_PCT
from schemaops.engines.decision import Request, decide
from schemaops.engines.vllm import LATCH_NOTE

__all__ = ["route", "run_engine_check", "versions_line"]


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in ("xgrammar", "llguidance", "outlines_core"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


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
    engine_env: Mapping[str, str] | None = None,
    cache_headroom_pct: float = DEFAULT_HEADROOM_PCT,
    tool_choice: list[str] | None = None,
    tool_strict_level: int = 0,
) -> Any:
    """``run_check`` for a serving engine: each schema gated on the backend that runs it.

    Each case carries its route in ``result["engine_route"]`` (with ``auto_route`` when the
    latch makes another backend compile it). ``engine_env``: the server's environment for
    the cache cap (default: this process's, e.g. ``VLLM_XGRAMMAR_CACHE_MB``);
    ``cache_headroom_pct``: the share of a byte-capped cache left free for other traffic.
    ``tool_choice``/``tool_strict_level``: the registry's tool sets as this engine compiles
    them (``tool_cases``). Other options as for ``run_check``.
    """
    from schemaops.check.gate import CheckCase, CheckReport, Problem, gate_items, gate_options
    from schemaops.compare.run import connect_ray, host_cpus, registry_items

    eng = get_engine(engine)
    configured = eng.configured_backend(backend)
    timeout_s, mem_mb, compile_threads = gate_options(
        compile_budget_ms, timeout_s, jobs, mem_mb, compile_threads
    )
    items = registry_items(registry)
    ray_info = connect_ray(ray)
    schemas: dict[str, Any] = {}
    requests = []
    for it in items:
        try:
            schemas[it.name] = json.loads(it.schema_text)
            requests.append(Request(it.name, [schemas[it.name]], json.dumps(schemas[it.name])))
        except ValueError as exc:
            requests.append(Request(it.name, [], None, refused=f"not a JSON schema: {exc}"))
    decision = decide(
        engine,
        requests,
        configured,
        env=dict(os.environ if engine_env is None else engine_env),
        tokenizer=tokenizer,
        headroom_pct=cache_headroom_pct,
        timeout_s=timeout_s,
    )
    auto = {n: rs[0] for n, rs in decision.routes.items()}
    runs = {n: rs[0] for n, rs in decision.runs.items()}
    latch, mixed = decision.latch, decision.mixed
    served = {r.served_by for r in auto.values() if not r.rejected}
    cases: dict[str, CheckCase] = {}
    for compare_backend in sorted({r.compare_backend for r in runs.values() if r.compare_backend}):
        subset = [it for it in items if runs[it.name].compare_backend == compare_backend]
        for case in gate_items(
            subset,
            compare_backend,
            tokenizer,
            compile_budget_ms,
            timeout_s,
            jobs=jobs,
            mem_mb=mem_mb,
            progress=progress,
            compile_threads=compile_threads,
            ray=ray,
        ):
            cases[case.schema] = case
    label = eng.label(configured)
    out = []
    for it in items:
        r, run = auto[it.name], runs[it.name]
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
            case.notes.append(f"{label} serves it with {run.served_by} ({run.reason})")
        case.result["engine_route"] = run.to_dict()
        if run is not r:
            case.result["engine_route"]["auto_route"] = r.served_by
            unenforced = eng.unenforced_under_latch(schemas[it.name], run.served_by or "")
            if unenforced:
                case.problems.append(
                    Problem(
                        "engine_latch",
                        f"{label} routes it to {r.served_by} on a fresh engine, but the engine "
                        f"is latched on {run.served_by} (the first structured request; warm "
                        f"latches it so), which compiles it without enforcing {unenforced}",
                        f"start a server with a fixed backend that serves every schema "
                        f"(`check --engine {engine} --backend {r.served_by}` gates that), or "
                        f"rewrite the construct ({unenforced}) and enforce it in application "
                        "validation",
                    )
                )
        elif mixed and not r.rejected:
            case.warnings.append(
                f"this registry mixes auto routes ({', '.join(sorted(map(str, served)))}): on "
                "vLLM 0.32 the first structured request after start fixes the engine's backend "
                "for all (settings.latch)"
            )
        out.append(case)
    capacity = decision.cache
    for backend_name, verdict in capacity.items():
        if verdict.fits is False:
            for case in out:
                if runs[case.schema].served_by == backend_name and case.status == "ok":
                    case.problems.append(
                        Problem("cache_capacity", verdict.reason, verdict.fix or "serve fewer")
                    )
        elif verdict.fits is None:
            for case in out:
                if runs[case.schema].served_by == backend_name and case.status == "ok":
                    case.warnings.append(f"grammar cache: {verdict.reason}")
    more, tool_notes = tool_cases(
        registry, engine, runs, tokenizer, compile_budget_ms, timeout_s, tool_choice or [],
        tool_strict_level, label,
        jobs=jobs, mem_mb=mem_mb, progress=progress, compile_threads=compile_threads, ray=ray,
    )  # fmt: skip
    out += more
    settings = {
        "compile_threads": compile_threads,
        "host": host_cpus(),
        "engine": engine,
        "engine_release": eng.release,
        "engine_backend": configured,
        "engine_pins": eng.pins,
        "measured_with": _versions(),
        "send_order": decision.order,
        "routes": {str(b): sorted(n for n, r in auto.items() if r.served_by == b) for b in served},
        "latch": LATCH_NOTE if mixed else None,
        "latched_backend": latch if mixed else None,
        "grammar_cache": {b: v.to_dict() for b, v in capacity.items()},
    }
    if ray_info:
        settings["ray"] = ray_info
    if tool_notes:
        settings["tool_sets"] = tool_notes
    return CheckReport(label, tokenizer, str(registry), float(compile_budget_ms), out, settings)


def tool_cases(
    registry: Any,
    engine: str,
    runs: Mapping[str, Any],
    tokenizer: str,
    compile_budget_ms: float,
    timeout_s: float,
    modes: list[str],
    strict_level: int,
    label: str,
    **worker: Any,
) -> tuple[list[Any], list[str]]:
    """The registry's tool sets gated as ``engine`` compiles them (``check/toolsets.py``),
    on the backend the engine serves the registry with: xgrammar when any schema is
    xgrammar's (vLLM's latch; SGLang's default), else the one backend the schemas use, and
    xgrammar for a registry of tool sets only (both engines' default)."""
    from schemaops.check.toolsets import registry_toolset_cases

    used = {r.compare_backend for r in runs.values() if r.compare_backend}
    backend = "xgrammar" if "xgrammar" in used or not used else sorted(used)[0]
    cases, notes = registry_toolset_cases(
        registry, backend, tokenizer, compile_budget_ms, timeout_s, modes, strict_level,
        engines=(engine,), **worker,
    )  # fmt: skip
    for case in cases:
        case.notes.append(f"{label} compiles this tool set's grammar with {backend}")
        case.result["engine_route"] = {"served_by": backend, "compare_backend": backend}
    return cases, notes


def versions_line(settings: dict[str, Any]) -> str:
    """Lines for the text report: what the engine pins vs what the walk measured with, the
    latch and the grammar cache."""
    pins = ", ".join(f"{k} {v}" for k, v in (settings.get("engine_pins") or {}).items())
    measured = ", ".join(f"{k} {v}" for k, v in (settings.get("measured_with") or {}).items())
    line = (
        f"{settings.get('engine')} {settings.get('engine_release')} pins {pins}; "
        f"enforcement measured with {measured}"
    )
    if settings.get("latch"):
        line += f"\nlatch: {settings['latch']}"
        if settings.get("latched_backend"):
            line += f"; gated on the latched backend, {settings['latched_backend']}"
    for b, v in (settings.get("grammar_cache") or {}).items():
        line += f"\ngrammar cache ({b}, {v['policy']['kind']}): {v['reason']}"
        if v.get("fix"):
            line += f"; fix: {v['fix']}"
        for note in (v.get("versions") or {}).get("notes", []):
            line += f"\n  footprint: {note}"
    return line
