"""``--help`` fits a screen (issue 34 item 8): what the command does, the few options that
matter and an example on the first screen; no option name cut off at 100 columns; no Python
type reprs (``<bool>``, ``<list[str]>``) where a value's metavar belongs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import typer.main

from schemaops.cli import app
from tests.cli_support import REPO


def _commands() -> list[str]:
    out = []
    for name, cmd in typer.main.get_command(app).commands.items():  # type: ignore[attr-defined]
        subs = getattr(cmd, "commands", None)
        out += [f"{name} {s}" for s in subs] if subs else [name]
    return sorted(out)


def help_text(command: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "schemaops", *command.split(), "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "100", "LINES": "50", "TERM": "dumb"},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("command", _commands())
def test_help_fits_100_columns_without_cut_names_or_type_reprs(command: str) -> None:
    text = help_text(command)
    assert "…" not in text, text  # rich cuts a name (or an unbreakable word) that does not fit
    for repr_ in ("<list[", "<bool>", "<str>", "<path>", "<int", "<float"):
        assert repr_ not in text, text
    lines = text.rstrip("\n").split("\n")
    first_panel_end = next((i for i, line in enumerate(lines) if line.startswith("╰")), len(lines))
    assert first_panel_end < 50, text  # the description and the main options: one screen
    description = lines[: next(i for i, line in enumerate(lines) if line.startswith("╭"))]
    assert len([line for line in description if line.strip()]) <= 14, text


@pytest.mark.parametrize(
    "command", ["audit", "warm", "watch", "probe", "compare", "check", "lower", "dev-server"]
)
def test_help_gives_an_example(command: str) -> None:
    assert f"Example: schemaops {command}" in help_text(command).replace("\n ", " ")


@pytest.mark.parametrize("command", _commands())
def test_help_text_is_not_eaten_as_markup(command: str) -> None:
    """rich reads ``[word ...]`` in help as a markup tag and drops it (``check --backend`` said
    "the engine's configured backend )"): every help text renders as written."""
    from rich.text import Text

    root = typer.main.get_command(app)
    cmd = root
    for word in command.split():
        cmd = cmd.commands[word]  # type: ignore[attr-defined]
    texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
    for text in texts:
        assert Text.from_markup(text).plain == text.replace("\\[", "["), text


def test_every_registry_option_has_the_same_short_name() -> None:
    """``warm -r DIR`` worked and ``check -r DIR`` said "No such option: -r": a user who types
    one command's short name into another must not meet a usage error. Every command with
    ``--registry`` takes ``-r`` too, and no command gives ``-r`` another meaning."""
    root = typer.main.get_command(app)
    seen = []
    for command in _commands():
        cmd = root
        for word in command.split():
            cmd = cmd.commands[word]  # type: ignore[attr-defined]
        for param in cmd.params:
            opts = set(getattr(param, "opts", ()))
            if "--registry" in opts:
                assert "-r" in opts, f"schemaops {command}: --registry without -r"
                seen.append(command)
            elif "-r" in opts:
                raise AssertionError(f"schemaops {command}: -r is {sorted(opts)}, not --registry")
    assert {"audit", "check", "compare", "lower", "warm", "watch"} <= set(seen), seen


def test_check_takes_r_as_a_user_types_it(tmp_path) -> None:
    """The short name through the real CLI: ``check -r`` on the shipped registry is read as
    ``--registry`` (a usage error would exit 2 naming ``-r``)."""
    proc = subprocess.run(
        [sys.executable, "-m", "schemaops", "check", "-r", str(REPO / "schemas"), "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "No such option" not in proc.stderr, proc.stderr
