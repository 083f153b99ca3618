"""Schema names never become paths outside ``--out`` (issue 33 item 28).

``lower`` (``--backend`` and ``--target``) and ``check --fix`` write ``OUT/<name>.json``; an
``x-schemaops-name`` of ``../../X`` or an absolute path (which ``registry validate`` accepted)
wrote outside ``--out``, and a name with ``/`` or a NUL byte was a traceback. Now the registry
refuses such a name (problem ``bad_name`` at ``/x-schemaops-name``) and every writer derives its
paths through ``schemaops.lower.outfiles.out_paths``. Real files, the real CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.errors import InputError
from schemaops.lower.outfiles import out_paths

runner = CliRunner()
SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "string"}},
    "required": ["a"],
    "additionalProperties": False,
}


def _layout(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """``tmp_path/deep/er/reg`` holding one schema named ``name``; ``out`` beside it."""
    reg = tmp_path / "deep" / "er" / "reg"
    reg.mkdir(parents=True)
    (reg / "a.json").write_text(json.dumps({"x-schemaops-name": name, **SCHEMA}))
    return reg, tmp_path / "deep" / "er" / "out"


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


BAD = ["../../X", "../X", "sub/X", "a\x00b", ".hidden", "..", "x" * 250]


@pytest.mark.parametrize("name", BAD)
def test_registry_validate_refuses_a_name_that_is_no_file_name(tmp_path: Path, name: str) -> None:
    reg, _ = _layout(tmp_path, name)
    r = runner.invoke(app, ["registry", "validate", str(reg), "--json"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert r.exit_code == 1, r.output
    (p,) = [p for p in json.loads(r.stdout)["problems"] if p["kind"] == "bad_name"]
    assert p["pointer"] == "/x-schemaops-name" and p["file"].endswith("a.json") and p["reason"]


def test_an_absolute_name_is_refused(tmp_path: Path) -> None:
    reg, _ = _layout(tmp_path, str(tmp_path / "abs"))
    r = runner.invoke(app, ["registry", "validate", str(reg), "--json"])
    assert r.exit_code == 1 and "bad_name" in r.stdout


def test_an_ordinary_override_is_still_a_name(tmp_path: Path) -> None:
    reg, _ = _layout(tmp_path, "orders v2 (é)")
    r = runner.invoke(app, ["registry", "validate", str(reg), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["schemas"][0]["name"] == "orders v2 (é)"


@pytest.mark.parametrize("name", ["../../X", "sub/X", "a\x00b", "/abs/X"])
@pytest.mark.parametrize(
    "args",
    [["lower", "--target", "openai"], ["lower", "--backend", "xgrammar"]],
    ids=["lower-target", "lower-backend"],
)
def test_lower_writes_nothing_outside_out(tmp_path: Path, name: str, args: list[str]) -> None:
    if name.startswith("/"):
        name = str(tmp_path / "abs" / "X")
    reg, out = _layout(tmp_path, name)
    before = _files(tmp_path)
    r = runner.invoke(app, [*args, "--registry", str(reg), "--out", str(out), "-q"])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code == 2, r.output
    assert "x-schemaops-name" in r.output
    outside = {f for f in _files(tmp_path) - before if not f.startswith("deep/er/out/")}
    assert outside == set(), outside


def test_check_fix_writes_nothing_outside_out(tmp_path: Path) -> None:
    reg, out = _layout(tmp_path, "../../X")
    before = _files(tmp_path)
    r = runner.invoke(
        app, ["check", "--fix", "--backend", "xgrammar", "--registry", str(reg), "--out", str(out)]
    )
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code != 0
    outside = {f for f in _files(tmp_path) - before if not f.startswith("deep/er/out/")}
    assert outside == set(), outside


@pytest.mark.parametrize("name", [*BAD, "/abs"])
def test_out_paths_refuses_what_is_no_file_name(tmp_path: Path, name: str) -> None:
    """The one helper every writer goes through: also for a Python caller's own name."""
    with pytest.raises(InputError, match="cannot be a file name"):
        out_paths(tmp_path, name)
    p = out_paths(tmp_path, "ok name")
    assert p.served == tmp_path / "ok name.json" and p.report.parent == tmp_path / ".lower"
