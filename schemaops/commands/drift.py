"""``schemaops registry drift``: option parsing only; the work is ``schemaops.registry.drift``.

Key drift is a cache-warming concern (its library lives with warm), but the command reads a
request log against the registry, so it is a ``registry`` subcommand: ``cli.py`` adds it to
the ``registry`` sub-app.
"""

from __future__ import annotations

from pathlib import Path

import typer

from schemaops.commands._common import call, emit_json, fail
from schemaops.registry.defaults import DEFAULT_REGISTRY


def drift_cmd(
    log: Path = typer.Argument(
        ...,
        help="Request log: JSONL of SGLang /generate or OpenAI chat bodies "
        "('-' for stdin, .gz ok).",
    ),
    registry: Path | None = typer.Option(
        DEFAULT_REGISTRY, "--registry", "-r", help="Registry folder to match schemas against."
    ),
    json_out: bool = typer.Option(
        False, "--json", help="Print exactly one JSON document on stdout."
    ),
) -> None:
    """Schemas sent as several byte strings (key order, whitespace, escaping): one cache entry
    and one compile each. Exit 1 when any schema drifts, 2 on unreadable input."""
    from rich.console import Console

    from schemaops.registry.drift import exit_code, render, run_drift, unusable_message

    reg = registry if registry is not None and registry.is_dir() else None
    doc = call(run_drift, log, reg, json_out=json_out)
    if json_out:
        emit_json(doc)
    else:
        render(doc, Console(highlight=False))
    code = exit_code(doc)
    if code == 2:
        raise fail(unusable_message(doc), code)
    raise typer.Exit(code)


def register(registry_app: typer.Typer) -> None:
    """Add ``drift`` to the ``registry`` sub-app."""
    registry_app.command("drift")(drift_cmd)
