"""``--json`` is one JSON document on stdout also when the registry has problems: ``check``
and ``lower`` printed nothing on stdout for a registry with a typo'd keyword (the message went
to stderr only), so a script reading stdout got an empty document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run_cli

TYPO = {
    "type": "object",
    "proprties": {"a": {"type": "string"}},
    "requried": ["a"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "args",
    [
        ("check", "--backend", "xgrammar"),
        ("lower", "--backend", "xgrammar", "--generate", "0"),
        ("compare", "--backends", "xgrammar"),
    ],
)
def test_json_names_the_registry_problems(tmp_path: Path, args: tuple[str, ...]) -> None:
    (tmp_path / "ticket.json").write_text(json.dumps(TYPO))
    res = run_cli(*args, "--registry", str(tmp_path), "--json")
    assert res.returncode in (1, 2), res.stdout + res.stderr
    doc = json.loads(res.stdout)
    assert doc["ok"] is False and doc["exit_code"] == res.returncode
    kinds = {p["kind"] for p in doc["problems"]}
    assert "unknown_keyword_typo" in kinds, doc
