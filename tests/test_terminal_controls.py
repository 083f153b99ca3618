"""Control characters in schema names and file names never reach the terminal raw (issue 22
#18): ``registry validate`` (table, problem and warning lines), ``check`` (report lines,
progress lines, the ``error:`` line of a registry it cannot load). ``audit`` escaped them
already; every command uses its one function (``schemaops.audit.report.text.visible``).

``CliRunner(color=True)``: click otherwise strips ANSI sequences itself when stdout is not a
terminal, which would hide the raw bytes a real terminal receives. Real xgrammar compiles
(milliseconds) behind ``check``.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from schemaops.cli import app

CLEAR = "\x1b[2J"  # clears the screen
TITLE = "\x1b]0;pwned\x07"  # sets the terminal's title (OSC)
PLAIN = {"type": "object", "properties": {"q": {"type": "string", "enum": ["a", "b"]}}}


def _registry(root: Path, broken_ref: bool) -> Path:
    root.mkdir()
    (root / f"clear{CLEAR}me.json").write_text(json.dumps(PLAIN))
    titled = {**PLAIN, "x-schemaops-name": f"title{TITLE}me"}
    (root / "titled.json").write_text(json.dumps(titled))
    if broken_ref:  # a problem line that names a file holding a carriage return
        bad = {"type": "object", "properties": {"a": {"$ref": "nope.json"}}}
        (root / "back\rover.json").write_text(json.dumps(bad))
    return root


def _raw_free(text: str) -> None:
    assert CLEAR not in text and TITLE not in text and "\r" not in text, repr(text)


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args), color=True)


def test_registry_validate_escapes_names_and_file_names(tmp_path: Path) -> None:
    reg = _registry(tmp_path / "reg", broken_ref=True)
    res = _invoke("registry", "validate", str(reg))
    assert res.exit_code == 1, res.stdout + res.stderr
    _raw_free(res.stdout + res.stderr)
    assert "clear\\x1b[2Jme" in res.stdout and "title\\x1b]0;pwned\\x07me" in res.stdout
    assert "back\\rover.json" in res.stderr and "[ref_outside]" in res.stderr
    js = _invoke("registry", "validate", str(reg), "--json")  # --json keeps the names as is
    names = {s["name"] for s in json.loads(js.stdout)["schemas"]}
    assert f"clear{CLEAR}me" in names and f"title{TITLE}me" in names


def test_check_report_and_progress_lines_escape_names(tmp_path: Path) -> None:
    reg = _registry(tmp_path / "reg", broken_ref=False)
    res = _invoke("check", "--registry", str(reg), "-b", "xgrammar")
    assert res.exit_code == 0, res.stdout + res.stderr
    _raw_free(res.stdout + res.stderr)
    assert "PASS clear\\x1b[2Jme" in res.stdout and "title\\x1b]0;pwned\\x07me" in res.stdout
    assert "clear\\x1b[2Jme xgrammar: ok" in res.stderr  # the progress line
    js = _invoke("check", "--registry", str(reg), "-b", "xgrammar", "--json", "-q")
    assert f"clear{CLEAR}me" in {c["schema"] for c in json.loads(js.stdout)["cases"]}


def test_check_error_line_escapes_file_names(tmp_path: Path) -> None:
    reg = _registry(tmp_path / "reg", broken_ref=True)
    res = _invoke("check", "--registry", str(reg), "-b", "xgrammar")
    assert res.exit_code == 1, res.stdout + res.stderr
    _raw_free(res.stderr)
    lines = res.stderr.splitlines()  # the message keeps its own line breaks
    assert lines[0].startswith("error:") and "back\\rover.json" in res.stderr and len(lines) > 1
