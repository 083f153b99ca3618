"""Every suggestion a message makes names a flag the command has (issue 34 item 5).

Two walks over the real sources: the help of every command (its own text and each option's)
read from the typer app, and every string literal of the library modules behind a command
(``schemaops/probe/`` is what ``probe`` prints, ``schemaops/http/`` what ``warm`` and
``probe`` both print). Each ``--flag`` in them must be an option of that command, or a flag of
the serving engine the message tells the user to start the server with (``SERVER_FLAGS``).
And the dead-server messages of ``probe`` and ``warm``, run for real: one message, once.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import typer.main

from schemaops.cli import app
from tests.cli_support import REPO, run_cli

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]")

#: flags of SGLang's / vLLM's own command lines (and their request logs), which messages name
#: as what to start the server with; never options of schemaops
SERVER_FLAGS = {
    "--grammar-backend",
    "--reasoning-parser",
    "--tool-call-parser",
    "--enable-auto-tool-choice",
    # vLLM 0.32's server floor for tool-call tags (entrypoints/launchers/cli_args.py); also an
    # option of check/compare, which mirrors it
    "--tool-strict-level",
    "--constrained-json-disable-any-whitespace",
    "--constrained-json-max-whitespace-cnt",
    "--structured-outputs-config",
    "--log-requests",
    "--log-requests-level",
    "--log-requests-format",
}


def _commands() -> dict[str, object]:
    """'audit', 'registry validate', ... -> the click command."""
    out: dict[str, object] = {}

    def walk(cmd: object, path: tuple[str, ...]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, (*path, name))
        else:
            out[" ".join(path)] = cmd

    walk(typer.main.get_command(app), ())
    return out


COMMANDS = _commands()


def options(command: str) -> set[str]:
    cmd = COMMANDS[command]
    return {
        o
        for p in cmd.params  # type: ignore[attr-defined]
        for o in [*getattr(p, "opts", []), *getattr(p, "secondary_opts", [])]
        if o.startswith("--")
    } | {"--help"}


#: library module (prefix) -> the commands that print its messages. Modules that build
#: another program's command line (devserver/, corpora.py: pip and server argv) are not
#: messages and are left out.
AREAS: list[tuple[str, set[str]]] = [
    ("schemaops/lower/fix.py", {"check"}),
    ("schemaops/probe/", {"probe"}),
    ("schemaops/warm/", {"warm"}),
    ("schemaops/http/answer.py", {"warm"}),  # its server_config_hint is warm's alone
    ("schemaops/http/", {"warm", "probe"}),
    ("schemaops/watch/", {"watch"}),
    ("schemaops/audit/", {"audit"}),
    ("schemaops/check/", {"check"}),
    ("schemaops/compare/", {"compare"}),
    ("schemaops/lower/", {"lower"}),
    ("schemaops/providers/", {"check", "lower"}),
    ("schemaops/metrics.py", {"audit", "warm", "probe"}),
    ("schemaops/raycluster.py", {"audit", "compare", "check"}),
    ("schemaops/outdir.py", {"check", "lower"}),
]
NOT_MESSAGES = ("schemaops/devserver/", "schemaops/corpora.py", "schemaops/commands/")


def _area(rel: str) -> set[str] | None:
    for prefix, commands in AREAS:
        if rel.startswith(prefix):
            return commands
    return None


def _message_strings(path: Path) -> list[str]:
    """The string literals of a module, docstrings left out (they speak to developers)."""
    tree = ast.parse(path.read_text())
    docs: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


def _library_cases() -> list[tuple[str, str, str]]:
    cases = []
    for path in sorted((REPO / "schemaops").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith(NOT_MESSAGES):
            continue
        for text in _message_strings(path):
            for flag in FLAG.findall(text):
                cases.append((rel, flag, text))
    return cases


def test_library_messages_name_only_flags_their_command_has() -> None:
    every = set().union(*(options(c) for c in COMMANDS)) | {"--version"}  # the root's
    wrong = []
    for rel, flag, text in _library_cases():
        if flag in SERVER_FLAGS:
            continue
        commands = _area(rel)
        missing = (
            [c for c in sorted(commands) if flag not in options(c)]
            if commands is not None
            else ([] if flag in every else ["any command"])
        )
        if missing:
            wrong.append(f"{rel}: {flag} (not an option of {', '.join(missing)}): {text[:80]!r}")
    assert wrong == [], "\n".join(wrong)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_names_only_flags_the_command_has(command: str) -> None:
    """A command's help and its options' help name its own flags (or the server's). A flag of
    another command is named with that command (``schemaops lower --backend``), which this
    accepts when the text names that command right before it."""
    cmd = COMMANDS[command]
    texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]  # type: ignore[attr-defined]
    own = options(command)
    wrong = []
    for text in texts:
        for m in FLAG.finditer(text):
            flag = m.group(0)
            if flag in own or flag in SERVER_FLAGS:
                continue
            before = text[max(0, m.start() - 60) : m.start()]
            named = re.findall(r"(?:schemaops |`)([a-z-]+(?: [a-z]+)?)[^`]*$", before)
            other = [c for c in COMMANDS if named and named[-1].startswith(c.split()[0])]
            if not any(flag in options(c) for c in other):
                wrong.append(f"{flag}: {text[max(0, m.start() - 50) : m.end() + 20]!r}")
    assert wrong == [], "\n".join(wrong)


def test_probe_dead_server_says_it_once_without_flags_probe_lacks() -> None:
    proc = run_cli("probe", "--server", "http://127.0.0.1:9")
    assert proc.returncode == 2
    out = proc.stdout + proc.stderr
    assert "--wait-ready" not in out  # probe has no such option
    assert out.count("not reachable") == 1, out


def test_warm_dead_server_names_the_server_once_and_the_error_once() -> None:
    proc = run_cli("warm", "--server", "http://127.0.0.1:9", "--retries", "0")
    assert proc.returncode == 1
    out = proc.stdout + proc.stderr
    assert out.count("not reachable") == 1, out  # not once more in every row
    assert out.count("http://127.0.0.1:9") == 1, out
    assert "--wait-ready" in out  # warm has it: the hint stays


def test_target_names_a_hosted_provider_on_every_command() -> None:
    """One meaning per flag name (issue 34 item 9): ``--target`` is a hosted API on ``check``
    and ``lower``; audit's target compound success is ``--target-compound``."""
    having = sorted(c for c in COMMANDS if "--target" in options(c))
    assert having == ["check", "lower"]
    assert "--target-compound" in options("audit")
    proc = run_cli(
        "audit", "audits/example-outputs.jsonl", "--target-compound", "0.9", "--json", "--no-cache"
    )
    assert proc.returncode == 0, proc.stderr
    assert '"target"' in proc.stdout
