"""The ``schemaops`` command: a thin typer app.

Each area registers its commands from ``schemaops/commands/<area>.py``; every command only
parses options and calls one library function that a Python user can call too.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any

from schemaops.commands._common import Process

#: the typer app, built on first use (``app`` below): a command that ``fastargs`` parses
#: (``audit``) runs without it, and so without importing every other command module and
#: typer's pydantic coercion (issue 36: start-up)
_APP: list[Any] = []


def _build() -> Any:
    """The ``schemaops`` typer app with every command registered."""
    import typer

    from schemaops import __version__
    from schemaops.commands import (
        audit,
        compare,
        devserver,
        drift,
        lower,
        probe,
        registry,
        warm,
        watch,
    )
    from schemaops.commands._help import PlainCommand

    app = typer.Typer(
        name="schemaops",
        help="Structured-output and schema reliability for LLM serving.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    def _version(value: bool) -> None:
        if value:
            typer.echo(f"schemaops {__version__}")
            raise typer.Exit(0)

    @app.callback()
    def _root(
        version: bool = typer.Option(
            False,
            "--version",
            callback=_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ) -> None:
        """Registry, grammar warm-up, output audit and backend comparison for constrained
        decoding."""

    for area in (registry, audit, warm, watch, probe, compare, devserver, lower):
        area.register(app)
    drift.register(registry.registry_app)  # `registry drift`: the key-drift report of a log
    for info in [*app.registered_commands, *registry.registry_app.registered_commands]:
        info.cls = PlainCommand  # plain metavars, main options first (commands/_help.py)
    return app


def __getattr__(name: str) -> Any:
    """``schemaops.cli.app``: built on first access (PEP 562)."""
    if name == "app":
        if not _APP:
            _APP.append(_build())
        return _APP[0]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _run_fast(argv: list[str]) -> bool:
    """Run ``schemaops audit ...`` without the typer app when ``fastargs`` reads its command
    line exactly as typer would (else False: the app runs it). Ends as typer's standalone
    mode does: ``typer.Exit`` -> its code, a return -> 0, Ctrl-C -> 130, a click error shown
    with its code."""
    if not argv or argv[0] != "audit":
        return False
    from schemaops.commands import audit
    from schemaops.commands.fastargs import parse

    kwargs = parse(audit.audit_command, argv[1:])
    if kwargs is None:
        return False
    import typer
    from typer._click.exceptions import ClickException

    try:
        audit.audit_command(**kwargs)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except EOFError:
        typer.echo(err=True)
        typer.echo("Aborted!", err=True)
        sys.exit(1)
    except typer.Abort:
        typer.echo("Aborted!", err=True)
        sys.exit(1)
    except ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    sys.exit(0)


class _ClosedPipeSafe:
    """stdout that survives its reader leaving (``schemaops audit ... | head``): from the
    first ``BrokenPipeError`` on, output goes to /dev/null and the command runs to its end,
    so the exit code still says what it means (0 ok, 1 a gate failed, 2 usage or input).
    Without it click turns the error into exit 1, which reads as "gate failed"."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.closed_by_reader = False

    def _divert(self) -> None:
        self.closed_by_reader = True
        try:  # the interpreter's own last flush too
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):  # no descriptor: writes are dropped anyway
            pass

    def write(self, text: str) -> int:
        if self.closed_by_reader:
            return len(text)
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._divert()
            return len(text)

    def flush(self) -> None:
        if self.closed_by_reader:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._divert()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main() -> None:
    """Console entry point. Usage errors exit 2 (click's convention matches ours)."""
    from schemaops.raycluster import normalise_ray_flag  # a bare --ray means --ray auto

    # Python's ``re`` warns about a schema pattern's ``[[`` or ``--`` (a possible future set
    # syntax) once per pattern: noise on stderr about the user's schemas, not about their data.
    warnings.filterwarnings("ignore", message="Possible (nested set|set )", category=FutureWarning)
    Process.one_shot = True
    sys.stdout = _ClosedPipeSafe(sys.stdout)
    argv = normalise_ray_flag(sys.argv[1:])
    try:
        if not _run_fast(argv):
            __getattr__("app")(args=argv)
    except ModuleNotFoundError as exc:  # an optional extra not installed: say which, exit 2
        from schemaops.extras import missing_extra_message

        message = missing_extra_message(exc.name, argv)
        if message is None:
            raise
        sys.stderr.write(message + "\n")
        sys.exit(2)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)


if __name__ == "__main__":
    main()
