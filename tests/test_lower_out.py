"""``lower --out`` and ``check --fix --out`` (issue 22, item 15): a folder that cannot be
written, an existing file, or a folder inside the registry is a usage error (exit 2) found
before any lowering or checking work, never a traceback after it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_lower_e2e import _cli, _registry
from test_lower_engine_fix import PLAIN, PLAIN_EXAMPLES

import schemaops.lower.run as run
from schemaops.errors import InputError
from schemaops.lower import lower_registry
from schemaops.lower.fix import fix_registry


def _bad_outs(tmp_path: Path, reg: Path) -> dict[str, Path]:
    afile = tmp_path / "a-file"
    afile.write_text("{}")
    return {
        "an existing file": afile,
        "below a file": afile / "served",
        "/proc": Path("/proc/schemaops-cannot-write-here"),
        "inside the registry": reg / "served",
        "the registry": reg,
    }


def test_an_unusable_out_is_refused_before_any_work(tmp_path: Path, monkeypatch) -> None:
    reg = _registry(tmp_path, {"plain": (PLAIN, PLAIN_EXAMPLES)})
    probed: list[str] = []
    monkeypatch.setattr(run, "probe_backend", lambda b, *a, **k: probed.append(b) or {})
    for what, out in _bad_outs(tmp_path, reg).items():
        with pytest.raises(InputError):
            lower_registry(reg, "xgrammar", out=out, generate=0)
        with pytest.raises(InputError):
            fix_registry(reg, "xgrammar", out)
        assert probed == [], what  # refused before the probes (the first step of the work)
    assert sorted(p.name for p in reg.iterdir()) == ["plain.examples.json", "plain.json"]


def test_the_cli_exits_2_without_a_traceback(tmp_path: Path) -> None:
    reg = _registry(tmp_path, {"plain": (PLAIN, PLAIN_EXAMPLES)})
    for what, out in _bad_outs(tmp_path, reg).items():
        for args in (
            ("lower", "--registry", str(reg), "-b", "xgrammar", "--out", str(out), "-q"),
            ("check", "--registry", str(reg), "-b", "xgrammar", "--fix", "--out", str(out), "-q"),
        ):
            res = _cli(*args)
            assert res.returncode == 2, (what, args[0], res.stdout, res.stderr)
            assert "Traceback" not in res.stderr and "--out" in res.stderr, res.stderr
    good = tmp_path / "served"
    res = _cli("lower", "--registry", str(reg), "-b", "xgrammar", "--out", str(good), "-q")
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads((good / "plain.json").read_text())["x-schemaops-lowered-from"]
