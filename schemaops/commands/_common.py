"""Helpers shared by CLI commands: JSON output, error-to-exit-code mapping, and the options
several commands declare alike (``--json``, ``--prometheus``, ``--api-key``, ``--header``) as
typer ``Annotated`` types, so each flag's name and help text live in one place."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import orjson
import typer

from schemaops.errors import SchemaopsError
from schemaops.strings import INVISIBLE_IN_JSON

T = TypeVar("T")


class Backend(str, Enum):
    """The grammar backends a command can take (``schemaops.backends.BACKENDS``): ``check``
    gates on one, ``lower`` serves on one."""

    xgrammar = "xgrammar"
    llguidance = "llguidance"
    outlines = "outlines"


class Process:
    """What the command knows about its process. ``one_shot``: set by the console entry point
    (``cli.main``), which exits after one command; not when a Python caller or a test runner
    invokes the app in its own long-lived process."""

    one_shot = False


#: ``--json`` of every reporting command (the ``--json`` contract: one document on stdout).
JsonOpt = Annotated[bool, typer.Option("--json", help="Print exactly one JSON document on stdout.")]
#: ``--prometheus FILE`` of ``audit``, ``warm`` and ``probe`` (node_exporter textfile collector).
PrometheusOpt = Annotated[
    Path | None,
    typer.Option("--prometheus", help="Write Prometheus text metrics (textfile collector) here."),
]
#: ``--api-key`` of the commands that talk to a server (``warm``, ``probe``).
ApiKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        help="Send 'Authorization: Bearer KEY' with every request (SGLang/vLLM --api-key, "
        "gateways). Default: the SCHEMAOPS_API_KEY environment variable, which keeps the key "
        "out of shell history. Never printed.",
    ),
]
#: ``--header 'Name: value'`` of the commands that talk to a server (``warm``, ``probe``).
HeaderOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--header",
        "-H",
        help="Extra request header 'Name: value' for a gateway (repeatable). Values are sent "
        "with every request and never printed.",
    ),
]


class ApiChoice(str, Enum):
    """The engine API path a schema is sent on (``Schema.wire``): SGLang's native
    ``/generate`` or the OpenAI-compatible chat endpoint. ``warm`` and ``registry`` use it."""

    native = "native"
    openai = "openai"


def _u_escape(m: re.Match) -> str:
    return f"\\u{ord(m.group(0)):04x}"


def emit_json(doc: Any) -> None:
    """Print exactly one JSON document on stdout (the ``--json`` contract).

    orjson writes it (20x the stdlib: 0.07 s for an audit report over 9,525 schemas, a share
    of a run that takes 3 s); the stdlib takes what orjson refuses (lone surrogates, integers
    beyond 64 bits), in the same layout. Characters that would act on a terminal or hide
    text (``strings.INVISIBLE_IN_JSON``) are written as ``\\u`` escapes: outside its strings a JSON
    text is ASCII, so each is in a string, where the escape is the same value (orjson and the
    stdlib escape C0 controls already)."""
    try:
        text = orjson.dumps(
            doc, default=str, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
        ).decode("utf-8")
    except (TypeError, orjson.JSONEncodeError):
        text = json.dumps(doc, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write(INVISIBLE_IN_JSON.sub(_u_escape, text) + "\n")
    sys.stdout.flush()


def terminal_lines(text: object) -> str:
    """``text`` for a terminal: line by line through audit's ``visible`` (the one escaping of
    control characters), so a schema or file name holding ``\x1b[2J`` or ``\r`` cannot drive
    the terminal, while the message keeps its own line breaks."""
    from schemaops.audit.report.text import visible  # imported on use: audit is not small

    return "\n".join(visible(line) for line in str(text).split("\n"))


def markup_safe(text: object) -> str:
    """Untrusted text for a rich string with markup: audit's ``esc`` (controls escaped, then
    markup), imported on use so that every command's start-up does not import audit."""
    from schemaops.audit.report.terminal import esc

    return esc(text)


def fail(message: str, code: int) -> typer.Exit:
    """Print ``message`` on stderr (control characters escaped: it may quote file and schema
    names) and return an Exit to raise with ``code``."""
    typer.echo(terminal_lines(message), err=True)
    return typer.Exit(code)


def call(fn: Callable[..., T], *args: Any, json_out: bool = False, **kwargs: Any) -> T:
    """Call a library function, turning a SchemaopsError into its message and exit code.

    With ``json_out`` (the command's ``--json``) the failure is also the one JSON document on
    stdout (``ok``, ``error``, ``exit_code`` and, for a registry with problems, each
    ``problems`` record as ``registry validate --json`` gives it), so a script reading stdout
    never gets an empty document."""
    try:
        return fn(*args, **kwargs)
    except SchemaopsError as exc:
        if json_out:
            doc: dict[str, Any] = {"ok": False, "error": str(exc), "exit_code": exc.exit_code}
            problems = getattr(exc, "problems", None)
            if isinstance(problems, list):
                doc["problems"] = problems
            emit_json(doc)
        raise fail(f"error: {exc}", exc.exit_code) from None


def report(
    doc: dict[str, Any],
    *,
    json_out: bool,
    render: Callable[[dict[str, Any]], None],
    prometheus: Path | None = None,
    metrics: str = "",
) -> None:
    """Write ``--prometheus`` (when given), then print ``doc`` as JSON or through ``render``.

    The tail ``audit``, ``warm`` and ``probe`` share. ``metrics`` names the builder in
    ``schemaops.metrics`` (``"audit_metrics"``, ...): named, not passed, so prometheus_client
    is imported only by a run that writes the file. Metrics are written before printing, so
    the gate's exit code that follows never leaves the collector without the run's figures."""
    if prometheus is not None:
        from schemaops import metrics as m

        call(m.write_textfile, prometheus, getattr(m, metrics)(doc))
    if json_out:
        emit_json(doc)
    else:
        render(doc)
