"""``schemaops probe``: option parsing only; the work is ``schemaops.probe.run_probe``."""

from __future__ import annotations

from pathlib import Path

import typer

from schemaops.commands._common import ApiKeyOpt, HeaderOpt, JsonOpt, PrometheusOpt, call, report

HELP = "\n\n".join(
    [
        "Is the grammar really applied? Send canary requests on every structured-output path "
        "of a running SGLang or vLLM server (json_schema, regex, ebnf, response_format, tools) "
        "and give each path a verdict: enforced, unconstrained (200, but the answer breaks the "
        "canary), rejected (4xx), error, or unproven (no evidence, with the reason).",
        "Example: schemaops probe --server http://127.0.0.1:30000 "
        "--paths generate.json_schema,tools.required",
        "Exit 0 ok; 1 a path in --paths not enforced (without --paths: a path unconstrained, or "
        "none enforced); 2 nothing could be probed, or a usage error. Canaries, verdict rules "
        "and fields: docs/contracts/probe.md.",
    ]
)


def probe_cmd(
    server: str = typer.Option(..., "--server", "-s", help="Server base URL."),
    paths: list[str] | None = typer.Option(
        None,
        "--paths",
        "-p",
        help="Paths the deployment uses (repeat or comma-separate); exit 1 unless all are "
        "enforced. Default: the engine's usual paths.",
    ),
    registry: Path | None = typer.Option(
        None, "--registry", "-r", help="Also send one real request per registry schema, audited."
    ),
    timeout: float = typer.Option(60.0, "--timeout", min=0.1, help="Deadline per request, s."),
    canaries: int = typer.Option(3, "--canaries", min=1, max=20, help="Canaries per path."),
    max_tokens: int = typer.Option(200, "--max-tokens", min=64, help="Token budget per answer."),
    model: str | None = typer.Option(None, "--model", help="Model name (default: /v1/models)."),
    prometheus: PrometheusOpt = None,
    json_out: JsonOpt = False,
    api_key: ApiKeyOpt = None,
    header: HeaderOpt = None,
) -> None:
    from schemaops.http.auth import build_auth
    from schemaops.probe import ProbeSettings, run_probe
    from schemaops.probe.report import render

    # options passed on keyword by keyword (the shape of the start call in devserver.py)
    settings = ProbeSettings(
        server=server,
        paths=paths or None,
        registry=registry,
        timeout_s=timeout,
        canaries=canaries,
        max_tokens=max_tokens,
        model=model,
        auth=call(build_auth, api_key, header, json_out=json_out),
    )
    doc, code = call(run_probe, settings, json_out=json_out)
    report(doc, json_out=json_out, render=render, prometheus=prometheus, metrics="probe_metrics")
    if json_out and doc.get("error"):  # the terminal report has printed it already
        typer.echo(f"error: {doc['error']}", err=True)
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add ``probe`` to the root app."""
    app.command("probe", help=HELP, no_args_is_help=True)(probe_cmd)
