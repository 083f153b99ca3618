"""``check --fix --out DIR`` gates DIR as it is (issue 22 #6) and refuses a DIR it cannot write
before any work (issue 22 #15, the ``check --fix`` part), on the real xgrammar backend
(milliseconds per compile).

DIR is never emptied (it may be any folder a user names): a schema in DIR that this run did
not write is reported as ``stale`` and fails the run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from shared_schemas import LOOK, LOOK_EXAMPLES
from test_lower_e2e import _cli, _registry

from schemaops.errors import InputError
from schemaops.lower.fix import fix_registry

PLAIN = {"type": "object", "properties": {"q": {"type": "string", "enum": ["a", "b"]}}}
PLAIN_EXAMPLES = {"valid": [{"q": "a"}], "invalid": [{"q": "c"}]}


def _counting() -> tuple[list[str], object]:
    """A check progress callback that records every measured schema."""
    seen: list[str] = []
    return seen, lambda done, total, res: seen.append(str(res.get("schema")))


def test_nothing_failed_still_gates_out_and_a_stale_failing_schema_fails(tmp_path: Path) -> None:
    reg = _registry(tmp_path, {"plain": (PLAIN, PLAIN_EXAMPLES)})
    out = tmp_path / "fixed"
    out.mkdir()
    # an earlier run's deploy folder held a schema the registry has since dropped, one that
    # xgrammar does not enforce (a lookahead): deploying DIR would serve it
    (out / "look.json").write_text(json.dumps(LOOK))
    (out / "look.examples.json").write_text(json.dumps(LOOK_EXAMPLES))
    seen, progress = _counting()
    rep = fix_registry(reg, "xgrammar", out, generate=0, progress=progress)
    assert rep.before.passed and rep.lowered is None
    assert sorted(seen) == ["look", "plain", "plain"]  # the registry, then DIR
    assert [c.schema for c in rep.after.failed] == ["look"]
    assert rep.stale == ["look"] and not rep.passed
    assert "not written by this run" in rep.summary() and "look" in rep.summary()
    assert rep.to_dict()["stale"] == ["look"]


def test_a_stale_passing_schema_fails_the_run(tmp_path: Path) -> None:
    reg = _registry(tmp_path, {"plain": (PLAIN, PLAIN_EXAMPLES)})
    out = tmp_path / "fixed"
    out.mkdir()
    (out / "renamed_away.json").write_text(json.dumps(PLAIN | {"title": "old"}))
    rep = fix_registry(reg, "xgrammar", out, generate=0)
    assert rep.after.passed  # it compiles and is enforced, but the registry no longer has it
    assert rep.stale == ["renamed_away"] and not rep.passed


def test_a_clean_out_passes(tmp_path: Path) -> None:
    reg = _registry(tmp_path, {"plain": (PLAIN, PLAIN_EXAMPLES)})
    rep = fix_registry(reg, "xgrammar", tmp_path / "fixed", generate=0)
    assert rep.passed and rep.stale == [] and rep.after is not rep.before


def test_stale_via_cli_is_exit_1(tmp_path: Path) -> None:
    reg = _registry(tmp_path, {"plain": (PLAIN, PLAIN_EXAMPLES)})
    out = tmp_path / "fixed"
    out.mkdir()
    (out / "gone.json").write_text(json.dumps(PLAIN))
    base = ("check", "--registry", str(reg), "-b", "xgrammar", "-q", "--fix", "--out", str(out))
    res = _cli(*base, "--json")
    assert res.returncode == 1, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    assert doc["stale"] == ["gone"] and doc["passed"] is False and doc["after"]["passed"]
    assert "FAILED (exit 1)" in res.stderr


def _unwritable(tmp_path: Path) -> list[tuple[Path, str]]:
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    cases = [
        (a_file, "exists and is not a folder"),
        (a_file / "sub", "cannot write --out"),
        (Path("/proc/schemaops-no-such/out"), "cannot write --out"),
    ]
    if os.geteuid() != 0:  # root writes into a 0555 folder
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o555)
        cases.append((ro, "cannot write --out"))
    return cases


def test_unwritable_out_is_refused_before_any_compile(tmp_path: Path) -> None:
    reg = _registry(tmp_path, {"plain": (PLAIN, PLAIN_EXAMPLES)})
    for out, why in _unwritable(tmp_path):
        seen, progress = _counting()
        with pytest.raises(InputError, match=why):
            fix_registry(reg, "xgrammar", out, generate=0, progress=progress)
        assert seen == [], out  # nothing was measured


def test_unwritable_out_via_cli_is_exit_2_without_traceback(tmp_path: Path) -> None:
    reg = _registry(tmp_path, {"look": (LOOK, LOOK_EXAMPLES)})
    for out, why in _unwritable(tmp_path):
        res = _cli("check", "--registry", str(reg), "-b", "xgrammar", "--fix", "--out", str(out))
        assert res.returncode == 2, (out, res.stdout, res.stderr)
        assert why in res.stderr and "Traceback" not in res.stderr
        assert "[1/1]" not in res.stderr  # refused before the registry was checked
