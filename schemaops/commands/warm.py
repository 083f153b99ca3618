"""``schemaops warm``: option parsing only.

The work is ``schemaops.warm.run.run_warm`` (check, plan, warm, report), callable from
Python as well; this module turns options into its ``WarmSettings`` and prints the result.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from schemaops.commands._common import (
    ApiChoice,
    ApiKeyOpt,
    HeaderOpt,
    JsonOpt,
    PrometheusOpt,
    call,
    report,
)
from schemaops.engines.capacity import DEFAULT_HEADROOM_PCT
from schemaops.registry.defaults import DEFAULT_REGISTRY

WARM_HELP = "\n\n".join(
    [
        "Warm SGLang's or vLLM's grammar cache: compile every schema on every server before "
        "traffic does.",
        "The engine is detected (SGLang answers /server_info; vLLM says owned_by vllm in "
        "/v1/models) or given with --engine; a server that is neither, or not the engine "
        "given, is a usage error. vLLM gets --api openai (response_format) unless --api is "
        "given, one request per schema per DP rank (X-data-parallel-rank; ranks from the "
        "engine labels of /metrics, or --dp), and before anything is sent the schemas its "
        "'auto' backend would route away from xgrammar are listed with what an engine latched "
        "on xgrammar does with them (vLLM 0.32 fixes one backend per engine at the first "
        "structured request; warm sends an xgrammar schema first, alone, to choose it).",
        "For each schema and server one 1-token request carries the schema's exact wire string "
        "(the cache key is the exact text); then a probe proves the entry is there "
        "(cold_ms vs probe_ms).",
        "--timeout must be longer than the slowest compile (default 600 s). A client that gives "
        "up first leaves the server compiling for nothing: SGLang drops the result of a request "
        "whose client went away, so a retry compiles again (double the work), and a compile "
        "that runs past the server's own limit is cached as invalid: every later request with "
        "that schema fails. Timeouts are therefore reported, never retried.",
        "A 400 is a verdict (the schema failed to compile and is cached as invalid): never "
        "retried, reported as 'invalid' with the server's message. Connection errors, 5xx and "
        "429 are retried (--retries, exponential backoff with jitter).",
        "Every cache: each --server is warmed; DP replicas (dp_size from /server_info, or --dp) "
        "are each addressed with routed_dp_rank (vLLM: the X-data-parallel-rank header). "
        "Behind a router, warming the router warms one "
        "worker only: pass every worker's URL instead.",
        "A 2xx counts only when its body is a completed answer (/generate: text and meta_info; "
        "chat: choices); anything else is 'failed' with what came back. --timeout bounds each "
        "whole request, and an answer over 8 MiB is cut off and 'failed'.",
        "Credentials in a --server URL (http://user:pass@host), --api-key (or "
        "SCHEMAOPS_API_KEY) and --header values are sent with every request but never printed.",
        "vLLM keeps compiled grammars in an LRU capped by VLLM_XGRAMMAR_CACHE_MB (512 MiB by "
        "default; --cache-mb says what the server has): before sending, the registry's "
        "compiled footprint (xgrammar, --tokenizer) is measured against it; schemas are sent "
        "least used first (--from-log counts), and the earliest warmed are probed again at "
        "the end: one that compiles again was evicted.",
        "Exit 0 ok (every row warmed, no probe miss, no eviction, a known DP size, a registry "
        "that fits the grammar cache), 1 otherwise (why_not_ok says why; with "
        "--require-proof also any probe 'suspect'), 2 usage error.",
    ]
)


# The choices of four options as typer enums (one class each: the same shape, each its own
# flag's values).
class ToolsChoice(str, Enum):
    off = "off"
    named = "named"
    required = "required"


class EngineOpt(str, Enum):
    auto = "auto"
    sglang = "sglang"
    vllm = "vllm"


class SchemaFieldOpt(str, Enum):
    response_format = "response_format"
    structured_outputs = "structured_outputs"
    structured_outputs_string = "structured_outputs_string"


class DpRoutingChoice(str, Enum):
    auto = "auto"
    rank = "rank"
    round_robin = "round-robin"


# Option declarations look alike across commands (typer's shape); each is its own flag.
def warm_cmd(
    server: list[str] = typer.Option(
        ..., "--server", "-s", help="Server base URL; repeat for every worker/replica host."
    ),
    registry: Path = typer.Option(DEFAULT_REGISTRY, "--registry", "-r", help="Registry folder."),
    schema: list[str] = typer.Option(
        [],
        "--schema",
        help="Warm only this registry schema (repeat, or a glob such as 'billing.*'); only "
        "the named schemas are read and checked. Default: every schema.",
    ),
    from_log: Path | None = typer.Option(
        None,
        "--from-log",
        help="Warm the schema strings seen in this request log (JSONL of /generate or "
        "OpenAI bodies), bytes kept.",
    ),
    api: ApiChoice | None = typer.Option(
        None,
        "--api",
        help="native (/generate json_schema) or openai (/v1/chat/completions). Default: "
        "native on SGLang, openai on vLLM.",
    ),
    engine: EngineOpt = typer.Option(
        EngineOpt.auto, "--engine", help="auto (detect), sglang or vllm."
    ),
    schema_field: SchemaFieldOpt = typer.Option(
        SchemaFieldOpt.response_format,
        "--schema-field",
        help="vLLM, --api openai: response_format, structured_outputs (schema as an object: "
        "the same key as response_format) or structured_outputs_string (the registry's compact "
        "text, keyed by its exact bytes: its own cache entry).",
    ),
    vllm_backend: str = typer.Option(
        "auto",
        "--vllm-backend",
        help="The backend the vLLM server runs (auto, xgrammar, guidance, outlines), for the "
        "pre-check only (vLLM does not report it).",
    ),
    tools: ToolsChoice = typer.Option(
        ToolsChoice.off,
        "--tools",
        help="openai only: off (response_format), named (tool_choice per tool), required.",
    ),
    tools_file: Path | None = typer.Option(
        None,
        "--tools-file",
        help="The application's own tool definitions (JSON array), sent verbatim.",
    ),
    parallel_tool_calls: bool | None = typer.Option(
        None,
        "--parallel-tool-calls/--no-parallel-tool-calls",
        help="Send parallel_tool_calls as the application does (it changes the key).",
    ),
    concurrency: int = typer.Option(
        2, "--concurrency", "-c", min=1, help="Requests in flight per server."
    ),
    timeout: float = typer.Option(
        600.0,
        "--timeout",
        min=0.1,
        help="Deadline per request (connect to last byte), seconds; must exceed the slowest "
        "compile.",
    ),
    retries: int = typer.Option(
        4,
        "--retries",
        min=0,
        help="Retries on connection errors, 5xx and 429 (never on 400 or timeout).",
    ),
    backoff: float = typer.Option(
        0.5,
        "--backoff",
        min=0.0,
        help="First retry delay, seconds; doubles each retry (cap 8 s), with jitter.",
    ),
    wait_ready: float = typer.Option(
        0.0,
        "--wait-ready",
        min=0.0,
        help="Poll readiness (/ready, or /health where there is no /ready) up to this many "
        "seconds first (one deadline for the whole start: engine detection and discovery "
        "together), and again after a connection loss.",
    ),
    dp: int | None = typer.Option(
        None,
        "--dp-size",
        "--dp",
        min=1,
        max=256,
        help="DP replicas (engines) per server when /server_info (vLLM: /metrics) cannot tell "
        "(at most 256). Without it, a vLLM server whose /metrics has no engine labels has an "
        "unknown DP size: its rows are unproven and the run is not ok.",
    ),
    tokenizer: str = typer.Option(
        "qwen2.5",
        "--tokenizer",
        help="The served model's tokenizer (a schemaops tokenizer name or a local folder), for "
        "the compiled footprint against vLLM's grammar cache.",
    ),
    cache_mb: int | None = typer.Option(
        None,
        "--cache-mb",
        min=0,
        help="The vLLM server's VLLM_XGRAMMAR_CACHE_MB (vLLM does not report it; default "
        "vLLM's 512).",
    ),
    cache_headroom: float = typer.Option(
        DEFAULT_HEADROOM_PCT,
        "--cache-headroom",
        min=0.0,
        max=99.0,
        help="Percent of vLLM's grammar cache left free for grammars outside the registry "
        "(other traffic shares the LRU); 0 when the registry is the server's only "
        "structured traffic.",
    ),
    dp_routing: DpRoutingChoice = typer.Option(
        DpRoutingChoice.auto,
        "--dp-routing",
        help="auto|rank (routed_dp_rank) or round-robin (dp consecutive requests).",
    ),
    probe: bool = typer.Option(
        True, "--probe/--no-probe", help="Probe each schema again after warming (proof of warmth)."
    ),
    require_proof: bool = typer.Option(
        False,
        "--require-proof",
        help="Exit 1 also when a probe is a miss or suspect (unproven passes: a schema cached "
        "before the run cannot be shown warm by latency). Needs --probe.",
    ),
    model: str | None = typer.Option(
        None, "--model", help="Model name for --api openai (default: first of /v1/models)."
    ),
    json_out: JsonOpt = False,
    prometheus: PrometheusOpt = None,
    progress: bool = typer.Option(
        True, "--progress/--no-progress", help="Progress bar on stderr (only on a terminal)."
    ),
    api_key: ApiKeyOpt = None,
    header: HeaderOpt = None,
) -> None:
    from schemaops.http.auth import build_auth
    from schemaops.http.retry import RetryPolicy
    from schemaops.warm import WarmOptions
    from schemaops.warm.report import render
    from schemaops.warm.run import WarmSettings, run_warm

    options = WarmOptions(
        servers=server,
        api=(api or ApiChoice.native).value,  # type: ignore[arg-type]
        concurrency=concurrency,
        timeout_s=timeout,
        policy=RetryPolicy(retries=retries, base_s=backoff),
        wait_ready_s=wait_ready,
        dp=dp,
        dp_routing=dp_routing.value,  # type: ignore[arg-type]
        probe=probe,
        model=model,
        engine=engine.value,  # type: ignore[arg-type]
        auth=call(build_auth, api_key, header),
    )
    settings = WarmSettings(
        options=options,
        registry=registry,
        from_log=from_log,
        tools=tools.value,  # type: ignore[arg-type]
        tools_file=tools_file,
        parallel_tool_calls=parallel_tool_calls,
        require_proof=require_proof,
        api_auto=api is None,
        schema_field=schema_field.value,  # type: ignore[arg-type]
        vllm_backend=vllm_backend,
        schemas=tuple(schema),
        tokenizer=tokenizer,
        cache_mb=cache_mb,
        cache_headroom_pct=cache_headroom,
    )
    doc, code = call(
        run_warm, settings, show_progress=progress, notify=lambda m: typer.echo(m, err=True)
    )
    report(doc, json_out=json_out, render=render, prometheus=prometheus, metrics="warm_metrics")
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add ``warm`` to the root app."""
    app.command("warm", help=WARM_HELP, no_args_is_help=True)(warm_cmd)
