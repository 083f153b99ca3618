"""``schemaops warm`` as one library call: check the settings, plan, warm, report.

The CLI (``schemaops.commands.warm``) parses options into a ``WarmSettings`` and calls
``run_warm``; everything that decides something lives here, callable from Python too.
Settings that cannot work raise ``InputError`` (exit 2) before any request is sent.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from schemaops.engines.capacity import DEFAULT_HEADROOM_PCT, Fit, check_headroom
from schemaops.engines.decision import Decision
from schemaops.errors import InputError
from schemaops.http.client import ServerClient, ServerUnavailable
from schemaops.http.retry import AttemptOutcome, RetryPolicy
from schemaops.http.urls import check_server_url
from schemaops.warm import latch
from schemaops.warm.cache import capacity, judge_cache
from schemaops.warm.detect import identify
from schemaops.warm.engine import MAX_DP, WarmOptions, warm
from schemaops.warm.plan import SchemaField, ToolsMode, WarmItem, plan_from_registry
from schemaops.warm.progress import progress_bar
from schemaops.warm.report import document, exit_code
from schemaops.warm.toolsets import DEFAULT_TOOL_CHOICE, NONE, check_modes, toolset_items

Notify = Callable[[str], None]


@dataclass
class WarmSettings:
    """What to warm (a registry or a request log) and how (``options``)."""

    options: WarmOptions
    registry: Path
    from_log: Path | None = None
    tools: ToolsMode = "off"
    tools_file: Path | None = None
    parallel_tool_calls: bool | None = None
    require_proof: bool = False
    # True when --api was not given: vLLM then gets response_format (it has no /generate).
    api_auto: bool = False
    schema_field: SchemaField = "response_format"
    # The backend the vLLM server was started with (--structured-outputs-config), for the
    # latch pre-check only: vLLM does not report it.
    vllm_backend: str = "auto"
    # --schema: warm only these registry names (a glob such as ``billing.*`` selects several);
    # only they are read and checked (a platform registry has thousands). Empty: all.
    schemas: tuple[str, ...] = ()
    # The served tokenizer, for the compiled footprint against vLLM's grammar cache.
    tokenizer: str = "qwen2.5"
    # The server's VLLM_XGRAMMAR_CACHE_MB (None: vLLM's default, 512): vLLM does not report it.
    cache_mb: int | None = None
    # The share of the grammar cache left free for traffic outside the registry (percent).
    cache_headroom_pct: float = DEFAULT_HEADROOM_PCT
    # --tool-choice: the modes each registry tool set (NAME.tools.json) is warmed with
    # (required, named, named:FN, auto; none: no tool set). Empty: the default, required.
    tool_choice: tuple[str, ...] = ()


def check(settings: WarmSettings) -> None:
    """Raise ``InputError`` for settings that cannot work (bad URL, contradictory options)."""
    opts = settings.options
    for url in opts.servers:
        why = check_server_url(url)
        if why:
            raise InputError(why)
    if settings.schemas and settings.from_log is not None:
        raise InputError("--schema selects registry schemas; --from-log warms what the log has")
    check_modes(settings.tool_choice)
    if settings.tool_choice and settings.tool_choice != (NONE,):
        if settings.from_log is not None:
            raise InputError("--tool-choice warms registry tool sets; --from-log warms the log")
        if settings.schemas:
            raise InputError(
                "--tool-choice warms the registry's tool sets, --schema selects schemas only: "
                "give one of them"
            )
    if settings.tools != "off" and opts.api != "openai" and not settings.api_auto:
        raise InputError("--tools needs --api openai (tool calling is an OpenAI API path)")
    if opts.dp is not None and not 1 <= opts.dp <= MAX_DP:
        raise InputError(f"--dp must be 1..{MAX_DP} (one request per schema and replica)")
    check_headroom(settings.cache_headroom_pct)
    if settings.require_proof and not opts.probe:
        raise InputError("--require-proof needs the probes: drop --no-probe")
    if opts.engine not in ("auto", "sglang", "vllm"):
        raise InputError(f"unknown engine {opts.engine!r}: expected auto, sglang or vllm")
    if settings.vllm_backend not in ("auto", "xgrammar", "guidance", "outlines"):
        raise InputError(
            f"unknown vLLM backend {settings.vllm_backend!r}: expected auto, xgrammar, "
            "guidance or outlines"
        )
    if settings.schema_field != "response_format":
        if opts.engine == "sglang":
            raise InputError("--schema-field structured_outputs* is vLLM's (SGLang: none)")
        if settings.tools != "off":
            raise InputError("--schema-field and --tools are two different request shapes")


async def _detect(opts: WarmOptions) -> str | None:
    """The engine of the first server (``None`` when it does not answer; the run reports
    that); ``EngineMismatch`` (exit 2) when it is neither SGLang nor vLLM, before any
    schema is sent."""
    async with httpx.AsyncClient(trust_env=False) as http:
        client = ServerClient(
            opts.servers[0],
            http,
            timeout_s=min(opts.timeout_s, 30.0),
            policy=RetryPolicy(0),
            auth=opts.auth,
        )
        try:
            if opts.wait_ready_s > 0:
                await client.wait_ready(opts.wait_ready_s, since=opts.ready_since)
            elif (await client.probe_health()).outcome is not AttemptOutcome.OK:
                return None
        except ServerUnavailable:
            return None
        return (await identify(client, opts.engine)).engine


def resolve_engine(settings: WarmSettings) -> str | None:
    """``--engine``, or what the first server is; vLLM gets ``--api openai`` unless the
    user chose one (vLLM has no SGLang ``/generate``)."""
    opts = settings.options
    engine = opts.engine if opts.engine != "auto" else asyncio.run(_detect(opts))
    if engine == "vllm" and settings.api_auto:
        opts.api = "openai"
    elif engine == "vllm" and opts.api == "native":
        raise InputError(
            "--api native is SGLang's /generate; vLLM has none: drop --api (vLLM gets openai)"
        )
    if settings.tools != "off" and opts.api != "openai":
        raise InputError("--tools needs --api openai (tool calling is an OpenAI API path)")
    if settings.schema_field != "response_format":
        if engine == "sglang":
            raise InputError("--schema-field structured_outputs* is vLLM's; SGLang answers here")
        if opts.api != "openai":
            raise InputError("--schema-field structured_outputs* needs --api openai")
    return engine


def load_tools(path: Path | None) -> list[dict[str, Any]] | None:
    """The application's tool definitions: a JSON array, or an object with ``tools``."""
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"--tools-file {path}: {exc}") from None
    tools = data.get("tools") if isinstance(data, dict) else data
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise InputError(f"--tools-file {path}: expected a JSON array of tool definitions")
    return tools


def plan(settings: WarmSettings, notify: Notify, engine: str | None = None) -> list[WarmItem]:
    """The items to warm; ``notify`` gets a line about unusable log lines, if any.

    A whole registry also warms its tool sets (``warm.toolsets``: one request per tool set
    and ``--tool-choice`` mode, rows named for ``engine``); ``--schema`` selects schemas
    only, and ``--from-log`` warms what the log holds."""
    from schemaops.registry import load_registry

    if settings.from_log is not None:
        from schemaops.registry.drift import registry_index
        from schemaops.warm.fromlog import plan_from_log

        names = (
            registry_index(load_registry(settings.registry)) if settings.registry.is_dir() else None
        )
        items, scan = plan_from_log(settings.from_log, names)
        if scan.input_errors:
            notify(
                f"{settings.from_log}: {len(scan.input_errors)} unusable line(s), "
                f"first: {scan.input_errors[0]}"
            )
        if not items:
            raise InputError(f"no grammar found in {settings.from_log} ({scan.records} records)")
        return items
    reg: Any = (
        select_schemas(settings.registry, settings.schemas)
        if settings.schemas
        else load_registry(settings.registry)
    )
    items = plan_from_registry(
        reg,
        settings.options.api,
        settings.tools,
        load_tools(settings.tools_file),
        settings.parallel_tool_calls,
        settings.schema_field,
    )
    if not settings.schemas:
        items += registry_toolset_items(reg, settings, engine)
    if not items:
        raise InputError(f"registry {settings.registry} has no schemas")
    return items


def registry_toolset_items(reg: Any, settings: WarmSettings, engine: str | None) -> list[WarmItem]:
    """The items of the registry's tool sets for ``--tool-choice`` (default ``required``);
    an explicit ``--tool-choice`` on a registry without tool sets is ``InputError``."""
    modes = settings.tool_choice or DEFAULT_TOOL_CHOICE
    toolsets = getattr(reg, "toolsets", None) or {}
    if modes == (NONE,):
        return []
    if not toolsets:
        if settings.tool_choice:
            raise InputError(
                f"--tool-choice: registry {settings.registry} has no tool sets (NAME.tools.json)"
            )
        return []
    return toolset_items(toolsets, modes, engine, settings.parallel_tool_calls)


def select_schemas(root: Path, patterns: tuple[str, ...]) -> list[Any]:
    """The registry schemas ``patterns`` name (names or globs), loaded and checked lazily.

    A pattern that matches no schema is ``InputError`` (exit 2, a typo must not warm
    nothing); a selected schema whose own file has problems raises ``RegistryError`` with
    them, as a whole-registry load does for any file. The other files are only indexed.
    """
    from fnmatch import fnmatchcase

    from schemaops.registry.lazy import LazyRegistry
    from schemaops.registry.loader import RegistryError, unknown_schema_message

    if not root.is_dir():
        raise InputError(f"registry folder not found: {root}")
    lazy = LazyRegistry(root)
    known = lazy.names()
    chosen: dict[str, None] = {}
    for pattern in patterns:
        hits = [n for n in known if fnmatchcase(n, pattern)] if _is_glob(pattern) else []
        if not hits and pattern in lazy:
            hits = [pattern]
        if not hits:
            raise InputError(
                f"--schema {pattern!r}: " + unknown_schema_message(pattern, root, known)
            )
        chosen.update(dict.fromkeys(hits))
    out, problems = [], []
    for name in chosen:
        schema, own = lazy.load(name)
        problems += own
        if schema is not None and not own:
            out.append(schema)
    if problems:
        raise RegistryError(problems)
    return out


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def run_warm(
    settings: WarmSettings, *, show_progress: bool = False, notify: Notify = print
) -> tuple[dict[str, Any], int]:
    """Check, plan, warm (with a progress bar on a terminal's stderr when asked) and report:
    the ``--json`` document and the exit code."""
    check(settings)
    settings.options.ready_since = time.monotonic()  # --wait-ready counts from here, once
    engine = resolve_engine(settings)
    # the readiness wait of engine detection (--wait-ready) is part of the run's wall time
    detect_s = time.monotonic() - settings.options.ready_since
    items = plan(settings, notify, engine)
    pre: list[dict[str, Any]] = []
    # Most used last: a size-capped cache (vLLM's LRU) keeps what was warmed last.
    send = usage_order(items)
    cache: Fit | None = None
    decision: Decision | None = None
    if engine == "vllm":
        # Before anything is sent: what the backend (auto: the latch) does with each schema.
        pre = latch.precheck(items, settings.vllm_backend)
        for entry in pre:
            notify(latch.line(entry))
        send, decision = capacity(items, settings)
        # one backend compiles everything on vLLM (the latch, or the configured one)
        caches = list(decision.cache.values())
        cache = next((c for c in caches if c.policy.kind.startswith("lru")), None) or next(
            iter(caches), None
        )
        if cache is not None and cache.fits is not True:
            notify(f"grammar cache: {cache.reason}" + (f"; fix: {cache.fix}" if cache.fix else ""))
        if cache is not None and cache.policy.kind.startswith("lru"):
            settings.options.reprove = [it.identity for it in send[:REPROVE_SAMPLE]]
    with progress_bar(show_progress) as progress:
        runs, wall = warm(send, settings.options, progress)
    doc = document(send, runs, settings.options, detect_s + wall)
    doc["engine"] = engine
    if engine == "vllm":
        doc["vllm_precheck"] = {
            "backend": settings.vllm_backend,
            "schemas": pre,
            "latched_backend": decision.latch if decision and decision.mixed else None,
        }
    if cache is not None:
        judge_cache(doc, cache, send, runs, settings)
    return doc, exit_code(doc, settings.require_proof)


# How many of the earliest-warmed schemas are probed again after the run (size-capped caches).
REPROVE_SAMPLE = 8


def usage_order(items: list[WarmItem]) -> list[WarmItem]:
    """``items`` least used first (``seen``: the ``--from-log`` counts; ties keep the plan
    order), so that the most used are the most recently warmed: the last an LRU evicts."""
    return sorted(items, key=lambda it: it.seen)
