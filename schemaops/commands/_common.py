"""Helpers shared by CLI commands: JSON output, error-to-exit-code mapping."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from enum import Enum
from typing import Any, TypeVar

import typer

from schemaops.errors import SchemaopsError

T = TypeVar("T")


class ApiChoice(str, Enum):
    """The engine API path a schema is sent on (``Schema.wire``): SGLang's native
    ``/generate`` or the OpenAI-compatible chat endpoint. ``warm`` and ``registry`` use it."""

    native = "native"
    openai = "openai"


def emit_json(doc: Any) -> None:
    """Print exactly one JSON document on stdout (the ``--json`` contract)."""
    sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def fail(message: str, code: int) -> typer.Exit:
    """Print ``message`` on stderr and return an Exit to raise with ``code``."""
    typer.echo(message, err=True)
    return typer.Exit(code)


def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call a library function, turning a SchemaopsError into its message and exit code."""
    try:
        return fn(*args, **kwargs)
    except SchemaopsError as exc:
        raise fail(f"error: {exc}", exc.exit_code) from None
