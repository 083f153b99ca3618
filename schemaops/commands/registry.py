"""``schemaops registry ...``: list, show, validate, export, diff and hash registry schemas.

Options are parsed here; the work is done by ``schemaops.registry`` functions. ``registry
drift`` is defined in ``commands/drift.py`` and added to ``registry_app`` by ``cli.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from schemaops.commands._common import (
    ApiChoice,
    call,
    emit_json,
    fail,
    markup_safe,
    terminal_lines,
)
from schemaops.registry.defaults import DEFAULT_REGISTRY, EXAMPLE_TIMEOUT
from schemaops.strings import plural, sha256_hex

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from schemaops.registry import Schema
    from schemaops.registry.loader import Registry
    from schemaops.registry.toolsets import ToolSet

# rich and the registry library (jsonschema, referencing) are imported in the commands that
# use them: every ``schemaops`` process imports this module to build the app (issue 24).

registry_app = typer.Typer(
    name="registry",
    help="The schema registry: a folder of NAME.json schemas with NAME.examples.json sidecars.",
    no_args_is_help=True,
)

REGISTRY_OPT = typer.Option(DEFAULT_REGISTRY, "--registry", "-r", help="Registry folder.")
JSON_OPT = typer.Option(False, "--json", help="Print exactly one JSON document on stdout.")
TIMEOUT_OPT = typer.Option(
    EXAMPLE_TIMEOUT,
    "--timeout",
    help="Seconds one schema's sidecar example check may take (a pattern can backtrack "
    "forever); past it the example is reported unproven. 0 = no bound.",
)


def _out() -> Console:
    """Stdout console; wide when piped so tables are not truncated to 80 columns."""
    from rich.console import Console

    return Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def schema_summary(s: Schema) -> dict:
    """The JSON row for one schema (list/validate/hash share it)."""
    from schemaops.registry.drafts import draft_label

    return {
        "name": s.name,
        "version": s.version,
        "draft": draft_label(s.draft),
        "hash": s.hash,
        "path": str(s.path) if s.path else None,
        "title": s.title,
        "examples": {"valid": len(s.valid), "invalid": len(s.invalid)},
        "self_contained": s.self_contained is None,
        "wire_bytes": {
            "native": len(s.wire("native").encode()),
            "openai": len(s.wire("openai").encode()),
        },
    }


def _schema_table(schemas: list[Schema], title: str) -> Table:
    from rich.table import Table

    table = Table(title=title)
    for col in ("name", "version", "draft", "hash", "examples", "wire bytes", "title"):
        table.add_column(col)
    for s in schemas:
        row = schema_summary(s)
        ex = f"{row['examples']['valid']} valid / {row['examples']['invalid']} invalid"
        table.add_row(  # names and titles are user text: never rich markup
            markup_safe(s.name),
            markup_safe(s.version),
            row["draft"],
            s.hash[:16],
            ex,
            str(row["wire_bytes"]["native"]),
            markup_safe(s.title),
        )
    return table


@registry_app.command("list")
def list_cmd(
    registry: Path = REGISTRY_OPT, json_out: bool = JSON_OPT, timeout: float = TIMEOUT_OPT
) -> None:
    """List the registry's schemas with version, draft, hash and example counts."""
    from schemaops.registry.loader import load_registry

    reg = call(load_registry, registry, timeout, json_out=json_out)
    if json_out:
        emit_json(
            {
                "registry": str(registry),
                "schemas": [schema_summary(s) for s in reg],
                "toolsets": [t.summary() for t in reg.toolsets.values()],
            }
        )
        return
    title = f"registry {registry} ({plural(len(reg), 'schema')})"
    _out().print(_schema_table(list(reg), markup_safe(title)))
    _print_toolsets(reg)


def _print_toolsets(reg: Registry) -> None:
    """One line per tool set (``NAME.tools.json``): name, hash, tools."""
    for t in reg.toolsets.values():
        row = t.summary()
        line = f"tool set {t.name}: {row['hash'][:16]}, {', '.join(t.names)}"
        _out().print(markup_safe(line))


@registry_app.command("show")
def show_cmd(
    name: str,
    registry: Path = REGISTRY_OPT,
    json_out: bool = JSON_OPT,
    timeout: float = TIMEOUT_OPT,
) -> None:
    """Show one schema: metadata, its wire strings' hashes and the schema itself."""
    from schemaops.registry.loader import load_registry

    reg = call(load_registry, registry, timeout, json_out=json_out)
    if name not in reg and name in reg.toolsets:
        _show_toolset(reg.toolsets[name], json_out)
        return
    s = call(reg.get, name, True, json_out=json_out)
    doc = {
        **schema_summary(s),
        "description": s.description,
        "wire_sha256": {api: sha256_hex(s.wire(api)) for api in ("native", "openai")},
        "schema": s.schema,
        "bundled": s.bundled() if s.self_contained is not None else None,
        "valid": s.valid,
        "invalid": s.invalid,
    }
    if json_out:
        emit_json(doc)
        return
    out = _out()
    for key in ("name", "version", "draft", "hash", "path", "title", "description"):
        out.print(f"[bold]{key}[/bold]: {markup_safe(str(doc[key]))}")
    for api, h in doc["wire_sha256"].items():
        out.print(f"[bold]wire {api}[/bold]: {doc['wire_bytes'][api]} bytes, sha256 {h[:16]}")
    out.print(f"[bold]examples[/bold]: {len(s.valid)} valid, {len(s.invalid)} invalid")
    out.print_json(data=s.bundled())


def _show_toolset(ts: ToolSet, json_out: bool) -> None:
    """``registry show`` for a tool set: summary, then the exact ``tools`` array sent."""
    doc = {**ts.summary(), "wire_sha256": sha256_hex(ts.wire()), "tools": ts.request_tools()}
    if json_out:
        emit_json(doc)
        return
    out = _out()
    for key in ("name", "hash", "path"):
        out.print(f"[bold]{key}[/bold]: {markup_safe(str(doc[key]))}")
    out.print(f"[bold]tools[/bold]: {markup_safe(', '.join(ts.names))}")
    out.print(f"[bold]wire[/bold]: {doc['wire_bytes']} bytes, sha256 {doc['wire_sha256'][:16]}")
    out.print_json(data=doc["tools"])


@registry_app.command("validate")
def validate_cmd(
    folder: Path = typer.Argument(None, help="Registry folder (default: --registry)."),
    registry: Path = REGISTRY_OPT,
    json_out: bool = JSON_OPT,
    timeout: float = TIMEOUT_OPT,
) -> None:
    """Check every schema, ref and example; report every problem at once.

    Exit 0 when clean, 1 for invalid content, 2 when input could not be read. Warnings
    (e.g. two names for one wire string) are shown but never change the exit code.
    """
    from schemaops.registry.loader import exit_code_for, format_problem, inspect_registry

    root = folder if folder is not None else registry
    reg, problems = inspect_registry(root, timeout)
    code = exit_code_for(problems)
    if json_out:
        emit_json(
            {
                "registry": str(root),
                "ok": not problems,
                "schemas": [schema_summary(s) for s in reg],
                "libraries": [schema_summary(s) for s in reg.libraries.values()],
                "toolsets": [t.summary() for t in reg.toolsets.values()],
                "problems": problems,
                "warnings": reg.warnings,
            }
        )
        raise typer.Exit(code)
    out = _out()
    if len(reg):
        out.print(_schema_table(list(reg), markup_safe(f"registry {root}")))
    _print_toolsets(reg)
    if reg.warnings:
        typer.echo(terminal_lines(f"{plural(len(reg.warnings), 'warning')} in {root}:"), err=True)
        for p in reg.warnings:
            typer.echo(terminal_lines("  " + format_problem(p)), err=True)
    if problems:
        # plain lines, never truncated or wrapped: ``file#pointer: reason [kind]``
        typer.echo(terminal_lines(f"{plural(len(problems), 'problem')} in {root}:"), err=True)
        for p in problems:
            typer.echo(terminal_lines("  " + format_problem(p)), err=True)
    else:
        schemas, libraries = (
            plural(len(reg), "schema"),
            plural(len(reg.libraries), "library", "libraries"),
        )
        toolsets = f"{plural(len(reg.toolsets), 'tool set')}, " if reg.toolsets else ""
        out.print(f"ok: {schemas}, {libraries}, {toolsets}no problems")
    raise typer.Exit(code)


@registry_app.command("export")
def export_cmd(
    name: str,
    api: ApiChoice = typer.Option(
        ApiChoice.native,
        "--api",
        help="native (/generate json_schema) or openai (response_format).",
    ),
    output: Path = typer.Option(None, "--output", "-o", help="Write the bytes to this file."),
    registry: Path = REGISTRY_OPT,
    json_out: bool = JSON_OPT,
    timeout: float = TIMEOUT_OPT,
) -> None:
    """Print the exact wire string a server keys its grammar cache on, byte for byte.

    No trailing newline is added: the bytes on stdout (or in --output) are the cache key.
    """
    from schemaops.registry.loader import load_registry
    from schemaops.warm.plan import key_paths

    reg = call(load_registry, registry, timeout, json_out=json_out)
    ts = reg.toolsets.get(name) if name not in reg else None
    s = call(reg.get, name, True, json_out=json_out) if ts is None else None
    # a tool set: the request's ``{"tools": [...]}`` fragment, the same for both APIs
    wire = ts.wire() if ts is not None else s.wire(api.value)
    data = wire.encode("utf-8")
    if output is not None:
        try:
            output.write_bytes(data)
        except OSError as exc:
            raise fail(f"error: cannot write {output}: {exc.strerror or exc}", 2) from None
    if json_out and ts is not None:
        emit_json(
            {
                "name": ts.name,
                "kind": "toolset",
                "bytes": len(data),
                "sha256": sha256_hex(wire),
                "wire": wire,
            }
        )
    elif json_out:
        emit_json(
            {
                "name": s.name,
                "api": api.value,
                "bytes": len(data),
                "sha256": sha256_hex(wire),
                "wire": wire,
                "key_sha256_by_path": {  # warm.plan.key_paths: SGLang's and vLLM's keys
                    k: sha256_hex(v) for k, v in key_paths(s.wire("native"), s.bundled()).items()
                },
            }
        )
    elif output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


@registry_app.command("diff")
def diff_cmd(
    old: Path,
    new: Path,
    fail_on_breaking: bool = typer.Option(
        False, "--fail-on-breaking", help="Exit 1 if any change is breaking."
    ),
    json_out: bool = JSON_OPT,
) -> None:
    """Classify changes between two schema files or registry folders.

    Breaking for consumers: the model may now produce what it could not. Breaking for
    clients: something valid before is now rejected.
    """
    from rich.table import Table

    from schemaops.registry.diffpaths import diff_paths

    report = call(diff_paths, old, new, json_out=json_out)
    if json_out:
        emit_json(report.to_json())
    else:
        n, b = len(report.changes), len(report.breaking)
        table = Table(title=markup_safe(f"{old} -> {new}: {n} change(s), {b} breaking"))
        for col in ("schema", "path", "kind", "breaking for", "detail"):
            table.add_column(col, overflow="fold")
        for c in report.changes:
            who = ", ".join(c.breaking_for) or "-"
            table.add_row(  # schema text (names, enum values, patterns) is never markup
                markup_safe(c.schema),
                markup_safe(c.path or "/"),
                c.kind,
                f"[red]{who}[/red]" if c.breaking else who,
                markup_safe(c.detail),
            )
        _out().print(table)
    if fail_on_breaking and report.breaking:
        raise typer.Exit(1)


@registry_app.command("hash")
def hash_cmd(
    name: str = typer.Argument(None, help="One schema (default: every schema)."),
    registry: Path = REGISTRY_OPT,
    json_out: bool = JSON_OPT,
    timeout: float = TIMEOUT_OPT,
) -> None:
    """Content hash and the sha256 of each wire string (what the server's cache keys on)."""
    from rich.table import Table

    from schemaops.registry.loader import load_registry

    reg = call(load_registry, registry, timeout, json_out=json_out)
    sets = list(reg.toolsets.values())
    if name is not None and name not in reg and name in reg.toolsets:
        chosen, sets = [], [reg.toolsets[name]]
    else:
        chosen = [call(reg.get, name, json_out=json_out)] if name is not None else list(reg)
        sets = sets if name is None else []
    rows = [
        {
            "name": s.name,
            "hash": s.hash,
            "native_sha256": sha256_hex(s.wire("native")),
            "openai_sha256": sha256_hex(s.wire("openai")),
        }
        for s in chosen
    ]
    if json_out:
        toolsets = [
            {"name": t.name, "hash": t.hash, "wire_sha256": sha256_hex(t.wire())} for t in sets
        ]
        emit_json({"registry": str(registry), "schemas": rows, "toolsets": toolsets})
        return
    table = Table(title=markup_safe(f"registry {registry}"))
    for col in ("name", "hash", "native wire sha256", "openai wire sha256"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            markup_safe(r["name"]), r["hash"][:16], r["native_sha256"][:16], r["openai_sha256"][:16]
        )
    for t in sets:  # a tool set's one wire string is the {"tools": [...]} fragment
        w = sha256_hex(t.wire())[:16]
        table.add_row(markup_safe(f"{t.name} (tool set)"), t.hash[:16], w, w)
    _out().print(table)


def register(app: typer.Typer) -> None:
    """Add ``registry`` and its subcommands to the root app."""
    app.add_typer(registry_app, name="registry")
