"""Every ``schemaops`` command shown in README.md runs (issue 34: the guide cannot drift).

The commands are the lines of the README's fenced code blocks that run ``schemaops`` (``$ ``
prompts and ``.venv/bin/`` stripped, ``# comments`` dropped, an ``install.sh && schemaops ...``
line split at ``&&``). Each runs as ``python -m schemaops`` in a scratch folder holding the
shipped ``schemas/`` and ``audits/example-*.jsonl``, so what a command writes (``served/``,
``report.html``) stays there.

The two commands that need a running server (``warm``, ``probe``) run here against a port
where nothing listens, and must give the bounded failure the README documents: one "not
reachable" message, exit 1 (warm) or 2 (probe), no traceback. Against a real dev server they
are covered by the integration tier (tests/integration/). Everything else runs for real
(grammar backends, tokenizer); ``check`` on a backend or engine may exit 0 or 1 because its
compile budget is wall-clock time on this machine, so for those the test asserts a report, not
the verdict.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.cli_support import REPO, free_port, run_cli

README = REPO / "README.md"
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.M | re.S)
URL = "http://127.0.0.1:30000"

#: commands that exit non-zero by design (the README says so beside them)
EXPECTED = {
    "audit audits/example-outputs.jsonl --max-failure-rate 0.01": {1},
    "check --target openai": {1},
    "check --backend llguidance": {0, 1},  # the compile budget is wall-clock time
    "check --engine sglang": {0, 1},
    "check --backend xgrammar --tool-choice required --tool-choice auto:qwen25"
    " --tool-strict-level parameter": {0, 1},
}


def readme_commands() -> list[str]:
    """The ``schemaops`` command lines of README.md's code blocks, as argument strings."""
    out: list[str] = []
    for block in FENCE.findall(README.read_text()):
        for raw in block.splitlines():
            line = raw.strip().removeprefix("$ ")
            for part in line.split("&&"):
                if part.strip().startswith(("schemaops ", ".venv/bin/schemaops ")):
                    out.append(shlex.join(shlex.split(part, comments=True)[1:]))
    return list(dict.fromkeys(out))


COMMANDS = readme_commands()


def test_the_readme_shows_the_workflow() -> None:
    """The guide's stages are all there (a README that lost them would pass the runs)."""
    verbs = {c.split()[0] for c in COMMANDS}
    assert {"registry", "check", "lower", "warm", "probe", "audit", "watch"} <= verbs, verbs
    assert len(README.read_text().splitlines()) <= 300


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "schemas", tmp_path / "schemas")
    (tmp_path / "audits").mkdir()
    for example in ("example-outputs.jsonl", "example-toolcalls.jsonl"):
        shutil.copy(REPO / "audits" / example, tmp_path / "audits")
    return tmp_path


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs(command: str, scratch: Path) -> None:
    args = shlex.split(command)
    server = URL in args
    if server:  # nothing listens there: the documented bounded failure
        args = [a.replace(URL, f"http://127.0.0.1:{free_port()}") for a in args]
    proc = run_cli(*args, cwd=scratch, timeout=900)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out
    if server:
        assert proc.returncode == {"warm": 1, "probe": 2}[args[0]], out
        assert out.count("not reachable") == 1, out
        return
    assert proc.returncode in EXPECTED.get(command, {0}), out
    assert proc.stdout.strip(), proc.stderr  # it printed its report
    if "--html" in args:
        assert (scratch / args[args.index("--html") + 1]).stat().st_size > 0
    if "--out" in args:
        assert any((scratch / args[args.index("--out") + 1]).glob("*.json"))
