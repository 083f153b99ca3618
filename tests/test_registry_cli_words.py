"""Registry and audit output a newcomer reads (issue 34, item 9): counts in words that agree
with their number (no "1 libraries", "1 schemas"), ``registry hash NAME`` like ``show NAME``
and ``export NAME``, and ``audit --html/--markdown`` saying where the report went."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from schemaops.cli import app

REPO = Path(__file__).resolve().parents[1]
#: a count of one before a plural noun, as the reports used to print
ONE_PLURAL = re.compile(
    r"(?<![\d.,])1 (schemas|libraries|outputs|errors|input errors|problems|warnings|records)\b"
)


def _run(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def _one_and_one(tmp_path: Path) -> Path:
    reg = tmp_path / "reg"
    reg.mkdir()
    (reg / "lib.json").write_text(
        json.dumps({"x-schemaops-library": True, "$defs": {"id": {"type": "string"}}})
    )
    (reg / "item.json").write_text(
        json.dumps({"type": "object", "properties": {"id": {"$ref": "lib.json#/$defs/id"}}})
    )
    return reg


def test_plural() -> None:
    from schemaops.strings import plural

    assert plural(1, "schema") == "1 schema"
    assert plural(2, "schema") == "2 schemas"
    assert plural(0, "library", "libraries") == "0 libraries"
    assert plural(1, "library", "libraries") == "1 library"
    assert plural(1234, "output") == "1,234 outputs"


def test_registry_validate_and_list_say_one_schema_one_library(tmp_path: Path) -> None:
    reg = _one_and_one(tmp_path)
    res = _run("registry", "validate", str(reg))
    assert res.exit_code == 0, res.output
    assert "ok: 1 schema, 1 library, no problems" in res.stdout
    listed = _run("registry", "list", "--registry", str(reg))
    # the title holds the folder's path, which rich wraps at 80 columns where it is long
    assert "(1 schema)" in " ".join(listed.stdout.split()), listed.stdout
    for out in (res.output, listed.output):
        assert not ONE_PLURAL.search(out), out


def test_registry_one_problem_one_warning(tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    reg.mkdir()
    (reg / "a.json").write_text(json.dumps({"type": "string", "nullable": True, "maxLenght": 3}))
    res = _run("registry", "validate", str(reg))
    assert res.exit_code == 1
    assert "1 problem in" in res.stderr and "1 warning in" in res.stderr, res.stderr
    assert not ONE_PLURAL.search(res.output), res.output


def test_registry_hash_takes_a_name_like_show_and_export() -> None:
    reg = str(REPO / "schemas")
    one = _run("registry", "hash", "get_order", "--registry", reg, "--json")
    assert one.exit_code == 0, one.output
    doc = json.loads(one.stdout)
    assert [r["name"] for r in doc["schemas"]] == ["get_order"]
    every = json.loads(_run("registry", "hash", "--registry", reg, "--json").stdout)
    (same,) = [r for r in every["schemas"] if r["name"] == "get_order"]
    assert same == doc["schemas"][0]
    table = _run("registry", "hash", "get_order", "--registry", reg)
    assert table.exit_code == 0 and "get_order" in table.stdout and "kb_search" not in table.stdout
    unknown = _run("registry", "hash", "get_ordr", "--registry", reg)
    assert unknown.exit_code == 2 and "unknown schema 'get_ordr'" in unknown.stderr


def test_audit_headline_with_one_output(tmp_path: Path) -> None:
    f = tmp_path / "one.jsonl"
    f.write_text(json.dumps({"schema": "get_order", "text": '{"order_id": "ORD-20481357"}'}) + "\n")
    res = _run("audit", str(f), "--registry", str(REPO / "schemas"))
    assert res.exit_code == 0, res.output
    text = " ".join(res.stdout.split())
    assert "1 total: 1 output classified, 1 ok, 0 input errors" in text, text
    assert not ONE_PLURAL.search(text), text


def test_audit_reports_say_where_they_were_written(tmp_path: Path) -> None:
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    res = _run(
        "audit",
        str(REPO / "audits" / "example-outputs.jsonl"),
        "--markdown",
        str(md),
        "--html",
        str(page),
        "--json",
    )
    assert res.exit_code == 0, res.output
    assert f"wrote {md}" in res.stderr and f"wrote {page}" in res.stderr, res.stderr
    json.loads(res.stdout)  # stdout still carries exactly the one document


def test_audit_of_one_unusable_line_says_one_input_error(tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text("garbage\n")
    res = _run("audit", str(f), "--registry", str(REPO / "schemas"))
    assert res.exit_code == 2
    assert "(1 input error):" in res.stderr, res.stderr


def test_markdown_says_one_episode(tmp_path: Path) -> None:
    f = tmp_path / "ep.jsonl"
    ok = '{"order_id": "ORD-20481357"}'
    rows = [{"schema": "get_order", "text": ok, "episode_id": "e1", "step": i} for i in (1, 2)]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    md = tmp_path / "r.md"
    res = _run("audit", str(f), "--registry", str(REPO / "schemas"), "--markdown", str(md))
    assert res.exit_code == 0, res.output
    text = md.read_text()
    assert "1 episode" in text and not re.search(r"\b1 episodes\b", text), text
