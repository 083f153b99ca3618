"""``check --target openai|anthropic|gemini``: the hosted-API side of the pre-deploy gate.

Option handling only; ``schemaops.providers.check_targets`` does the work. Alone it prints the
hosted report; with ``--backend``/``--engine`` the self-hosted report comes first and the
``--json`` document is the self-hosted one (unchanged) with a ``hosted`` key added, the JUnit
file holds both, and the run fails if either side does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from schemaops.commands._common import call, emit_json, fail, terminal_lines
from schemaops.errors import EXIT_GATE


def hosted_report(registry: Path, targets: list[str], json_out: bool = False) -> Any:
    """The library call, with its errors mapped to exit codes: a registry with problems is an
    input error (exit 2, as the contract says; ``RegistryError`` alone would be 1, the gate's).
    ``json_out``: such an error is also the one ``--json`` document (``_common.call``)."""
    from schemaops.errors import InputError
    from schemaops.providers import check_targets
    from schemaops.registry import RegistryError

    def judged() -> Any:
        try:
            return check_targets(registry, targets)
        except RegistryError as exc:
            error = InputError(f"cannot check registry {registry}: {exc}")
            error.problems = exc.problems
            raise error from None

    return call(judged, json_out=json_out)


def print_hosted(report: Any) -> None:
    """The hosted table on stdout, escaped (names and pointers come from the registry)."""
    from schemaops.providers.report import render_text

    typer.echo(terminal_lines(render_text(report)))


def write_junit(report: Any, path: Path, extra: str | None = None) -> None:
    """Write the hosted JUnit file (with ``extra``'s suites first); unwritable: exit 2."""
    from schemaops.errors import InputError
    from schemaops.providers.report import junit_xml

    def write() -> None:
        try:
            path.write_text(junit_xml(report, extra) + "\n", encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write {path}: {exc}") from exc

    call(write)


def failure_line(report: Any, prefix: str = "check failed: ") -> str:
    """The stderr line of a failed hosted gate (``prefix`` empty when it follows the
    self-hosted gate's own failure line)."""
    parts = []
    if report.failed:
        parts.append(
            f"{len(report.failed)} of {len(report.results)} (schema, target) pair(s) refused by "
            f"{', '.join(sorted({r.target for r in report.failed}))}"
        )
    bad = getattr(report, "failed_toolsets", [])
    if bad:  # tool sets (NAME.tools.json): providers/tools.py
        parts.append(
            f"{len(bad)} of {len(report.toolsets)} (tool set, target) pair(s) refused: "
            + ", ".join(f"{t.toolset} by {t.target}" for t in bad[:10])
        )
    line = prefix + "; ".join(parts)
    return line


def check_hosted_only(
    registry: Path, targets: list[str], junit: Path | None, json_out: bool
) -> None:
    """``check --target ...`` without a backend: judge, report, exit 0 or 1."""
    report = hosted_report(registry, targets, json_out)
    if junit is not None:
        write_junit(report, junit)
    if json_out:
        emit_json(report.to_dict())
    else:
        print_hosted(report)
    if not report.passed:
        raise fail(failure_line(report), EXIT_GATE)


def attach(doc: dict[str, Any], report: Any) -> dict[str, Any]:
    """The self-hosted ``--json`` document with the hosted report under ``hosted``."""
    return {**doc, "hosted": report.to_dict(), "passed": doc.get("passed") and report.passed}
