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
        "Compile every schema in a running SGLang's or vLLM's grammar caches (every server, "
        "every DP replica) before traffic does, and prove each one is cached.",
        "Each schema is sent once with its exact wire string (the cache key), then probed "
        "again: hit, miss, suspect or unproven. A timeout or an HTTP 400 (cached as invalid) "
        "is reported, never retried; connection errors, 5xx and 429 are retried.",
        "Example: schemaops warm --server http://127.0.0.1:30000 --wait-ready 600",
        "Exit 0 ok; 1 a schema not warmed, a probe miss, an eviction or an unknown DP size; "
        "2 usage error. How it works (vLLM, DP ranks, the grammar cache, credentials): "
        "docs/contracts/warm.md.",
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
        help="vLLM, --api openai: the request field that carries the schema: "
        "response_format, structured_outputs (an object: the same cache key) or its _string "
        "form (the registry's exact bytes: their own cache entry).",
    ),
    vllm_backend: str = typer.Option(
        "auto",
        "--vllm-backend",
        help="The backend the vLLM server runs (auto, xgrammar, guidance, outlines), for the "
        "pre-check only (vLLM does not report it).",
    ),
    tool_choice: list[str] = typer.Option(
        [],
        "--tool-choice",
        help="How the registry's tool sets (NAME.tools.json) are warmed, repeatable: required "
        "(default), named (each tool in turn), named:FN, auto, or none (no tool set); "
        "required:PARSER / auto:PARSER / named:FN:PARSER name the row as check does. Each is "
        "the application's chat request with tools + tool_choice: the engine derives the key.",
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
        auth=call(build_auth, api_key, header, json_out=json_out),
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
        tool_choice=tuple(tool_choice),
    )
    doc, code = call(
        run_warm,
        settings,
        json_out=json_out,
        show_progress=progress,
        notify=lambda m: typer.echo(m, err=True),
    )
    report(doc, json_out=json_out, render=render, prometheus=prometheus, metrics="warm_metrics")
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add ``warm`` to the root app."""
    app.command("warm", help=WARM_HELP, no_args_is_help=True)(warm_cmd)
