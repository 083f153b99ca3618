"""``schemaops audit``: option parsing only; the work is ``schemaops.audit.run_audit``."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import Any

import typer

from schemaops.commands._common import JsonOpt, Process, PrometheusOpt, call, report
from schemaops.errors import EXIT_GATE, EXIT_USAGE, InputError


def _steps(value: str) -> list[int]:
    try:
        steps = sorted({int(s) for s in value.split(",") if s.strip()})
    except ValueError:
        raise InputError(f"--steps expects integers like 1,5,10,20, got {value!r}") from None
    if not steps or steps[0] < 1:
        raise InputError("--steps expects positive integers")
    return steps


# Option declarations look alike across commands (typer's shape); each is its own flag.
def audit_command(
    files: list[str] = typer.Argument(
        ...,
        metavar="FILE...",
        help="JSONL of model outputs ('-' = stdin; .gz accepted); or several files, folders, "
        "globs or URIs (s3://, gs://, file://) of JSONL, JSONL.gz and Parquet shards.",
    ),
    schema: str = typer.Option(
        None, "--schema", help="Schema for every record: a file or registry name."
    ),
    registry: Path = typer.Option(
        Path("schemas"), "--registry", "-r", help="Registry folder for schema names."
    ),
    field: str = typer.Option(
        None,
        "--field",
        help="Dotted path of the text in each record (default: text, generated_text, output, "
        "or every OpenAI/vLLM choice's message.content, tool_calls arguments or text).",
    ),
    schema_field: str = typer.Option(
        "schema", "--schema-field", help="Record field naming its schema."
    ),
    tools: str = typer.Option(
        None,
        "--tools",
        help="Judge every tool call against this registry tool set (NAME.tools.json): a"
        " function not in it is unknown_tool, a model failure; per-tool p in the report.",
    ),
    tools_field: str = typer.Option(
        None,
        "--tools-field",
        help="Record field naming a registry tool set to judge the record's calls against"
        " (default toolset; --tools wins, a request's own tools come after).",
    ),
    tool_choice: str = typer.Option(
        None,
        "--tool-choice",
        help="required, named[:FUNCTION] or auto: the tool choice of records whose request"
        " does not say; under required/named a response with no call is no_tool_call.",
    ),
    episode_field: str = typer.Option(
        "episode_id", "--episode-field", help="Record field with an episode id."
    ),
    step_field: str = typer.Option(
        "step", "--step-field", help="Record field with the step number."
    ),
    steps: str = typer.Option(
        "1,5,10,20", "--steps", help="Step counts n for compound success p^n."
    ),
    target: float = typer.Option(
        None,
        "--target-compound",
        help="Target compound success p^n: print the per-step p each n needs.",
    ),
    max_failure_rate: float = typer.Option(
        None, "--max-failure-rate", help="Gate: exit 1 above this."
    ),
    min_compound: float = typer.Option(
        None, "--min-compound", help="Gate: exit 1 if p^N below (N = max --steps)."
    ),
    max_input_errors: int = typer.Option(
        None,
        "--max-input-errors",
        metavar="N",
        help="Gate: exit 1 above N input errors (lines that are no usable record: p leaves"
        " them out). Default 0 when --max-failure-rate or --min-compound is given (a gate on p"
        " must not pass on records that never reached p), else no gate.",
    ),
    all_errors: bool = typer.Option(False, "--all-errors", help="Also count every violation."),
    no_format: bool = typer.Option(
        False, "--no-format", help="Treat 'format' as an annotation only."
    ),
    json_out: JsonOpt = False,
    prometheus: PrometheusOpt = None,
    markdown: Path = typer.Option(None, "--markdown", help="Write a Markdown report."),
    html: Path = typer.Option(
        None, "--html", help="Write a self-contained HTML report with a chart."
    ),
    records: Path = typer.Option(
        None,
        "--records",
        help="Write one JSON line per output/input line (with the output's source field).",
    ),
    jobs: int = typer.Option(
        0,
        "--jobs",
        "-j",
        help="Worker processes (default 0 = automatic: all cores for an input of 8 MiB or more,"
        " one below): byte ranges of one file, one shard each, or, with a registry over 256"
        " schemas, a share of the schemas each. Same report.",
    ),
    timeout: float = typer.Option(
        1.0,
        "--timeout",
        help="Seconds per record before its check is cut off (a regex; naming a parse failure).",
    ),
    open_timeout: float = typer.Option(
        30.0,
        "--open-timeout",
        help="Seconds each object-store call may take to open a URI shard (s3://, gs://):"
        " past it the shard is unreadable, exit 2.",
    ),
    cache_dir: Path = typer.Option(
        None,
        "--cache-dir",
        help="Schema facts cache (default: $XDG_CACHE_HOME/schemaops/audit).",
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor write the cache."),
    ray: str | None = typer.Option(
        None,
        "--ray",
        metavar="[ADDRESS]",
        help="Audit each shard as a Ray task: 'auto' (a bare --ray) = the running cluster, "
        "HOST:PORT or ray://HOST:PORT, 'local' = a one-off local Ray (needs schemaops\\[ray]).",
    ),
) -> None:
    """Measure structured-output reliability from logged model outputs.

    Each output gets one category (ok, a JSON parse failure by kind, a schema violation by
    keyword and path); the report gives the per-step success p with a 95 % interval, p^n
    over an agent's n steps, and each failure's likely cause with the server setting that
    removes it. Gates exit 1 for CI.

    Example: schemaops audit outputs.jsonl --registry schemas --max-failure-rate 0.01

    Exit 0 ok, 1 a gate failed, 2 unreadable input or usage error. Inputs, categories and
    fields: docs/contracts/audit.md.
    """
    from schemaops.audit import AuditOptions
    from schemaops.audit.read.shards import leave_at_once

    opts = call(
        AuditOptions,
        json_out=json_out,
        schema=schema,
        registry=str(registry),
        field=field,
        schema_field=schema_field,
        episode_field=episode_field or None,
        step_field=step_field or None,
        steps=call(_steps, steps, json_out=json_out),
        target=target,
        assert_format=not no_format,
        all_errors=all_errors,
        records=str(records) if records else None,
        jobs=jobs,
        timeout=timeout,
        open_timeout=open_timeout,
        max_failure_rate=max_failure_rate,
        min_compound=min_compound,
        max_input_errors=max_input_errors,
        cache_dir=str(cache_dir) if cache_dir else None,
        cache=not no_cache,
        ray=ray or None,
        tools=tools,
        tools_field=tools_field,
        tool_choice=tool_choice,
    )
    code = EXIT_USAGE
    ended = False  # by a report or a clean typer.Exit (a traceback is left to Python)
    try:
        _run(files, opts, json_out, prometheus, markdown, html)
        code, ended = 0, True
    except typer.Exit as exc:
        code, ended = exc.exit_code, True
        raise
    finally:
        if ended and Process.one_shot and leave_at_once():
            # a store call past --open-timeout still runs in a thread, or pyarrow failed in
            # a read: the report is out, and pyarrow's exit handler would wait for that call
            # (minutes) or abort tearing its threads down (shards.leave_at_once); leave now
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)


def _run(
    files: list[str],
    opts: Any,
    json_out: bool,
    prometheus: Path | None,
    markdown: Path | None,
    html: Path | None,
) -> None:
    """Audit, report and exit with the run's code (``typer.Exit``) or return (exit 0)."""
    from schemaops.audit import run_audit
    from schemaops.audit.report.text import visible

    result = call(run_audit, files[0] if len(files) == 1 else files, opts, json_out=json_out)
    if Process.one_shot:
        # This process reports and exits: what the audit leaves behind (thousands of compiled
        # checkers on a platform registry, handed back to the collector by run_audit) is moved
        # out of the collector's reach instead of walked by the next full collection (1.7 s
        # of a 9,525-schema audit went there, inside the report's first allocations).
        gc.freeze()
    doc = result.to_json()
    if markdown:
        from schemaops.audit.report.markdown import write_markdown

        call(write_markdown, doc, markdown, json_out=json_out)
        typer.echo(visible(f"wrote {markdown}"), err=True)
    if html:
        from schemaops.audit.report.html import write_html

        call(write_html, doc, html, json_out=json_out)
        typer.echo(visible(f"wrote {html}"), err=True)
    report(
        doc,
        json_out=json_out,
        render=_render_terminal,
        prometheus=prometheus,
        metrics="audit_metrics",
    )
    failed = [g for g in doc["gates"] if not g["passed"]]
    for g in failed:
        typer.echo(f"gate failed: {g['gate']}: {g['reason']}", err=True)
    for d in (doc.get("shards") or {}).get("duplicates_skipped") or []:
        typer.echo(
            visible(f"warning: duplicate path skipped: {d['shard']} is the same file as")
            + visible(f" {d['same_as']} (read once)"),
            err=True,
        )
    unreadable = (doc.get("shards") or {}).get("unreadable") or []
    for u in unreadable:  # the rest was audited and reported; the input was not all read
        typer.echo(f"error: unreadable shard: {u['message']}", err=True)
    if unreadable:
        raise typer.Exit(EXIT_USAGE)
    if failed:
        raise typer.Exit(EXIT_GATE)


def _render_terminal(doc: dict[str, Any]) -> None:
    """The terminal report; rich is imported only by a run that prints it (not ``--json``)."""
    from schemaops.audit.report.terminal import render_terminal

    render_terminal(doc)


def register(app: typer.Typer) -> None:
    """Add ``audit`` to the root app."""
    app.command("audit")(audit_command)
