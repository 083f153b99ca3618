"""``schemaops watch``: option parsing only; the work is ``schemaops.watch.run_watch``."""

from __future__ import annotations

from pathlib import Path

import typer

from schemaops.commands._common import JsonOpt, call, emit_json
from schemaops.errors import InputError

WATCH_HELP = "\n\n".join(
    [
        "The audit, live: follow growing logs (the formats audit reads), classify each new "
        "output as audit does, serve /metrics (p and p^n per schema over time windows, "
        "diagnoses, lag) and flag a poisoned schema (one that fails on every request) at once. "
        "Runs until SIGTERM/Ctrl-C, or once over what is there with --once.",
        "Example: schemaops watch logs/outputs.jsonl --state-dir state/ "
        "--on-poisoned 'schemaops warm --server URL --schema'",
        "Metrics, poisoned schemas, restarts and deploy files: docs/contracts/watch.md.",
    ]
)


def _windows(values: list[str]) -> list[float]:
    from schemaops.watch.window import parse_duration

    try:
        return [parse_duration(v) for v in values]
    except ValueError as exc:
        raise InputError(f"--window: {exc}") from None


def _steps(value: str) -> list[int]:
    try:
        return sorted({int(s) for s in value.split(",") if s.strip()}) or [1]
    except ValueError:
        raise InputError(f"--steps expects integers like 1,5,10,20, got {value!r}") from None


def _seconds(flag: str, value: str) -> float:
    from schemaops.watch.window import parse_duration

    try:
        return parse_duration(value)
    except ValueError as exc:
        raise InputError(f"{flag}: {exc}") from None


def _listen(value: str | None) -> str | None:
    """``--listen`` as ``WatchOptions`` takes it: not given is its default ("auto")."""
    from schemaops.watch.run import AUTO_LISTEN

    if value is None:
        return AUTO_LISTEN
    return None if value.strip().lower() in ("", "none", "off") else value


# Option declarations look alike across commands (typer's shape); each is its own flag.
def watch_cmd(
    files: list[str] = typer.Argument(
        ..., metavar="FILE|DIR|GLOB|-", help="Logs to follow ('-' = stdin; .gz rolls read)."
    ),
    schema: str = typer.Option(
        None, "--schema", help="Schema for every record: a file or registry name."
    ),
    registry: Path = typer.Option(
        Path("schemas"), "--registry", "-r", help="Registry folder for schema names."
    ),
    field: str = typer.Option(None, "--field", help="Dotted path of the text (as audit)."),
    schema_field: str = typer.Option(
        "schema", "--schema-field", help="Record field naming its schema."
    ),
    steps: str = typer.Option("1,5,10,20", "--steps", help="Step counts n for p^n."),
    no_format: bool = typer.Option(
        False, "--no-format", help="Treat 'format' as an annotation only."
    ),
    timeout: float = typer.Option(1.0, "--timeout", help="Seconds per record (audit's bound)."),
    state_dir: Path = typer.Option(
        None, "--state-dir", help="Save offsets and totals here; a restart resumes from them."
    ),
    listen: str = typer.Option(
        None,
        "--listen",
        help="HOST:PORT of /metrics (default 127.0.0.1:9464; with --once none unless given; "
        "port 0 = any free one; 'none' = no server).",
    ),
    interval: str = typer.Option("1s", "--interval", help="Poll interval (e.g. 0.2s, 1s)."),
    window: list[str] = typer.Option(
        None, "--window", help="Window for p per schema (repeatable; default 5m and 1h)."
    ),
    json_lines: bool = typer.Option(
        False, "--json-lines", help="Print one JSON summary line per --summary-interval."
    ),
    summary_interval: str = typer.Option(
        "10s", "--summary-interval", help="Seconds between --json-lines summaries."
    ),
    on_poisoned: str = typer.Option(
        None,
        "--on-poisoned",
        help="Command run (argv, no shell) with the schema name as last argument (or in "
        "place of a '{schema}' argument) when a schema is flagged as poisoned.",
    ),
    hook_timeout: str = typer.Option("60s", "--hook-timeout", help="Kill the hook after this."),
    hook_cooldown: str = typer.Option(
        "10m", "--hook-cooldown", help="At most one hook run per schema within this."
    ),
    poison_min: int = typer.Option(
        5, "--poison-min", help="Failures in a row (at least) that flag a schema."
    ),
    from_end: bool = typer.Option(
        False, "--from-end", help="Files without saved state: start at their end, not 0."
    ),
    once: bool = typer.Option(
        False,
        "--once",
        help="Read what is there, run pending hooks, print the audit's summary (or --json), "
        "exit; serves no /metrics unless --listen is given.",
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="No schema facts cache."),
    tools: str = typer.Option(
        None, "--tools", help="Judge tool calls against this registry tool set (as audit)."
    ),
    tools_field: str = typer.Option(
        None, "--tools-field", help="Record field naming a registry tool set (as audit)."
    ),
    tool_choice: str = typer.Option(
        None, "--tool-choice", help="required, named[:FUNCTION] or auto (as audit)."
    ),
    json_out: JsonOpt = False,
) -> None:
    """Structured-output reliability of growing logs, live, with a poisoned-schema alarm."""
    from schemaops.audit.options import AuditOptions
    from schemaops.watch import WatchOptions, run_watch

    aopts = call(
        AuditOptions,
        json_out=json_out,
        schema=schema,
        registry=str(registry),
        field=field,
        schema_field=schema_field,
        steps=call(_steps, steps, json_out=json_out),
        assert_format=not no_format,
        timeout=timeout,
        cache=not no_cache,
        tools=tools,
        tools_field=tools_field,
        tool_choice=tool_choice,
    )
    opts = call(
        WatchOptions,
        json_out=json_out,
        targets=files,
        audit=aopts,
        listen=_listen(listen),
        state_dir=str(state_dir) if state_dir else None,
        interval=call(_seconds, "--interval", interval, json_out=json_out),
        windows=call(_windows, window, json_out=json_out) if window else [300.0, 3600.0],
        json_lines=json_lines,
        summary_interval=call(_seconds, "--summary-interval", summary_interval, json_out=json_out),
        on_poisoned=on_poisoned,
        hook_timeout=call(_seconds, "--hook-timeout", hook_timeout, json_out=json_out),
        hook_cooldown=0.0
        if hook_cooldown.strip() == "0"
        else call(_seconds, "--hook-cooldown", hook_cooldown, json_out=json_out),
        poison_min=poison_min,
        from_end=from_end,
        once=once,
        summary=once and not (json_out or json_lines),
    )
    doc = call(run_watch, opts, json_out=json_out)
    if json_out:
        emit_json(doc)


def register(app: typer.Typer) -> None:
    """Add ``watch`` to the root app."""
    app.command("watch", help=WATCH_HELP, no_args_is_help=True)(watch_cmd)
