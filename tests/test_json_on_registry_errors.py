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


# Found by a mutation run over real schemas (2026-12-05): the hosted-only ``check --target``,
# the ``registry`` commands, ``drift``, ``audit`` and ``watch`` still printed nothing on stdout
# when they could not start, though their contracts say ``--json`` is one document.
@pytest.mark.parametrize(
    "args",
    [
        ("check", "--target", "openai"),
        ("check", "--target", "anthropic", "--backend", "xgrammar"),
        ("registry", "list"),
        ("registry", "hash"),
        ("registry", "show", "ticket"),
        ("registry", "export", "ticket"),
        # nothing is sent: the registry is read before any request (port 9: discard)
        ("probe", "--server", "http://127.0.0.1:9"),
    ],
)
def test_json_names_the_registry_problems_everywhere(tmp_path: Path, args: tuple[str, ...]) -> None:
    (tmp_path / "ticket.json").write_text(json.dumps({"type": "object", "oneOf": []}))
    res = run_cli(*args, "--registry", str(tmp_path), "--json")
    assert res.returncode in (1, 2), res.stdout + res.stderr
    doc = json.loads(res.stdout)
    assert doc["ok"] is False and doc["exit_code"] == res.returncode
    assert [p["kind"] for p in doc["problems"]] == ["metaschema"], doc
    assert "error:" in res.stderr  # the terminal still reads the message


@pytest.mark.parametrize(
    "args",
    [
        ("registry", "show", "nope", "--registry", "schemas"),
        ("registry", "diff", "no-such-old", "schemas"),
        ("registry", "drift", "no-such.log", "--registry", "schemas"),
        ("audit", "no-such-outputs.jsonl"),
        ("audit", "audits/example-outputs.jsonl", "--max-failure-rate", "2"),
        ("watch", "no-such.log", "--once", "--interval", "soon"),
        # found by a mutation run over tool sets (2026-12-05): nothing on stdout, and with
        # --target alone a bad level was not even refused
        ("check", "--backend", "xgrammar", "--tool-strict-level", "bogus"),
        ("check", "--target", "openai", "--tool-strict-level", "bogus"),
        ("compare", "--backends", "xgrammar", "--tool-strict-level", "bogus"),
        ("check", "--target", "bogus"),
    ],
)
def test_json_is_one_document_when_a_command_cannot_start(args: tuple[str, ...]) -> None:
    res = run_cli(*args, "--json")
    assert res.returncode == 2, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    assert doc == {"ok": False, "error": doc["error"], "exit_code": 2}
    assert doc["error"] and doc["error"] in res.stderr


def test_json_writes_terminal_acting_characters_as_escapes(tmp_path: Path) -> None:
    """JSON may carry C1 controls, U+2028/2029 and bidi overrides raw; ``--json`` read on a
    terminal then acted on them (a mutation run over tool sets found them in 261 runs,
    2026-12-05). They are written as ``\\u`` escapes: the same document, parsed."""
    title = "a\u202eb\x85c\u2028d\x9be\u2066f"
    (tmp_path / "ticket.json").write_text(json.dumps({"type": "object", "title": title}))
    res = run_cli("registry", "show", "ticket", "--registry", str(tmp_path), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["schema"]["title"] == title
    assert not any(c in res.stdout for c in "\u202e\x85\u2028\x9b\u2066")
    assert "\\u202e" in res.stdout
