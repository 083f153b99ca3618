"""``schemaops audit`` parsed without the typer app (``commands/fastargs.py``, issue 36
start-up): the keyword arguments must be exactly the ones typer passes, and every command
line it is not sure of must go to typer (help, errors and exit codes stay typer's)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from schemaops.commands import audit
from schemaops.commands.fastargs import parse

REPO = Path(__file__).resolve().parents[1]


def typer_kwargs(argv: list[str]) -> dict[str, Any]:
    """What typer calls ``audit_command`` with for ``schemaops audit ARGV``."""
    seen: dict[str, Any] = {}

    @functools.wraps(audit.audit_command)
    def record(**kwargs: Any) -> None:
        seen.update(kwargs)

    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """a group, as the real app"""

    app.command("audit")(record)
    result = CliRunner().invoke(app, ["audit", *argv])
    assert result.exit_code == 0, result.output
    return seen


@pytest.mark.parametrize(
    "argv",
    [
        ["f.jsonl"],
        ["a.jsonl", "b.jsonl", "--json"],
        ["--registry=reg", "f.jsonl", "-j", "3"],
        ["f.jsonl", "--jobs", "-1", "--timeout", "2"],
        ["f.jsonl", "--timeout", "2.5e1", "--open-timeout", ".5"],
        ["--", "-x.jsonl"],
        ["-", "--schema", "s", "--field", "choices.0.text"],
        ["f.jsonl", "--ray", "auto", "--tools", "support_agent"],
        ["f.jsonl", "--all-errors", "--no-format", "--no-cache", "--cache-dir", "c"],
        ["f.jsonl", "--jobs", "2", "--jobs", "3"],
        ["f.jsonl", "--max-input-errors", "0", "--min-compound", "0.5", "--steps", "1,2"],
        ["f.jsonl", "--prometheus", "m.prom", "--markdown", "r.md", "--html", "r.html"],
        ["f.jsonl", "--records", "rows.jsonl", "--max-failure-rate", "0.01"],
        ["f.jsonl", "--target-compound", "0.9", "--episode-field", "", "--step-field", "s"],
    ],
)
def test_same_arguments_as_typer(argv: list[str]) -> None:
    mine = parse(audit.audit_command, argv)
    assert mine is not None
    assert mine == typer_kwargs(argv)
    assert {k: type(v) for k, v in mine.items()} == {
        k: type(v) for k, v in typer_kwargs(argv).items()
    }


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--help"],
        ["f.jsonl", "-h"],
        ["f.jsonl", "--bogus"],
        ["f.jsonl", "-j", "x"],
        ["f.jsonl", "--jobs"],
        ["f.jsonl", "--json=1"],
        ["f.jsonl", "--timeout", "nan"],
        ["f.jsonl", "--field", "-x"],
        ["f.jsonl", "-j4"],
        ["f.jsonl", "--registry", ""],
    ],
)
def test_unsure_command_lines_go_to_typer(argv: list[str]) -> None:
    assert parse(audit.audit_command, argv) is None


def run(*args: str, probe: Path | None = None) -> subprocess.CompletedProcess:
    code = "from schemaops.cli import main; main()"
    if probe is not None:  # the modules imported by the end, as tests/test_startup_imports.py
        code = (
            "import atexit, sys\n"
            f"atexit.register(lambda: open({str(probe)!r}, 'w').write('\\n'.join(sys.modules)))\n"
            + code
        )
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_audit_runs_without_the_app_and_reports_the_same(tmp_path: Path) -> None:
    """The fast path ran (no pydantic coercion, no other command module imported) and its
    report is the one the typer app gives for the same command line."""
    probe = tmp_path / "mods.txt"
    args = ["audit", "audits/example-outputs.jsonl", "--registry", "schemas", "--json"]
    proc = run(*args, "--cache-dir", str(tmp_path / "c1"), probe=probe)
    assert proc.returncode == 0, proc.stderr
    mods = set(probe.read_text().split("\n"))
    assert "schemaops.commands.audit" in mods
    assert not {"pydantic", "typer._adapters", "schemaops.commands.compare"} & mods
    from schemaops.cli import app  # the full app, built on first access

    slow = CliRunner().invoke(app, [*args, "--cache-dir", str(tmp_path / "c2")])
    assert slow.exit_code == 0, slow.output
    fast_doc, slow_doc = json.loads(proc.stdout), json.loads(slow.stdout)
    for doc in (fast_doc, slow_doc):
        doc.pop("elapsed_s", None)
    assert fast_doc == slow_doc


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["audit", "f.jsonl", "--bogus"], 2, "No such option"),
        (["audit", "f.jsonl", "-j", "x"], 2, "--jobs"),
        (["audit", "missing.jsonl", "--registry", "schemas"], 2, "no such file"),
        (["audit"], 2, "Missing argument"),
    ],
)
def test_errors_keep_their_exit_codes(args: list[str], code: int, says: str) -> None:
    proc = run(*args)
    assert proc.returncode == code, proc.stderr
    assert says in proc.stderr


def test_audit_help_is_typers() -> None:
    proc = run("audit", "--help")
    assert proc.returncode == 0
    assert "--jobs" in proc.stdout and "Measure structured-output reliability" in proc.stdout
