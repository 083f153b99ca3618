"""Duplicate keys in an output (issue 14.9). RFC 8259 only says names SHOULD be unique; what
audit does with ``{"a": 2, "a": 1}``: it reads it as Python's json, orjson and JavaScript's
``JSON.parse`` do (the last value wins), validates that, and annotates the output: the record
row lists the pointers, the report counts them. p does not change."""

from __future__ import annotations

import json
from pathlib import Path

from schemaops.audit import AuditOptions, run_audit
from schemaops.audit.verdict.classify import parse_output
from schemaops.audit.verdict.repeats import duplicate_keys

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer", "maximum": 1}}}


def _dups(text: str) -> list[str]:
    value, failure = parse_output(text)
    assert failure is None
    return duplicate_keys(text, value)


def test_duplicate_keys_are_found_with_their_pointers() -> None:
    assert _dups('{"a": 2, "a": 1}') == ["/a"]
    assert _dups('{"x": {"b~/": 1, "b~/": 2}, "y": [{"c": 1, "c": 1}]}') == ["/x/b~0~1", "/y/0/c"]
    assert _dups('{"a": "12:00:00", "b": "http://x"}') == []  # colons in strings are not keys
    assert _dups('{"a": 1, "b": {"a": 2}}') == []  # the same name in two objects is fine
    assert _dups("[1, 2]") == [] and _dups('"a:b"') == []
    assert _dups('{"a" : 1, "a"\n:2}') == ["/a"]  # whitespace before the colon
    assert _dups('{"a\\":": 1, "a\\":": 2, "b": "x\\":"}') == ['/a":']  # '":' inside names
    assert _dups('{"t": "12:00", "t": "13:00"}') == ["/t"]


def test_duplicate_keys_are_annotated_and_do_not_change_p(tmp_path: Path) -> None:
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(SCHEMA))
    texts = ['{"a": 2, "a": 1}', '{"a": 1, "a": 2}', '{"a": 1}']
    f = tmp_path / "o.jsonl"
    f.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    records = tmp_path / "r.jsonl"
    doc = run_audit(str(f), AuditOptions(schema=str(schema), records=str(records))).to_json()
    # Last value wins: the first output is valid (a = 1), the second is not (a = 2).
    assert doc["ok"] == 2 and doc["categories"]["schema_violation:maximum"] == 1
    assert doc["duplicate_keys"] == {"count": 2, "lines": [1, 2]}
    rows = [json.loads(x) for x in records.read_text().splitlines()]
    assert [r.get("duplicate_keys") for r in rows] == [["/a"], ["/a"], None]
    assert rows[0]["category"] == "ok"


def test_reports_show_the_count(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from schemaops.audit.report.markdown import render_markdown
    from schemaops.audit.report.terminal import render_terminal

    f = tmp_path / "o.jsonl"
    f.write_text(json.dumps({"text": '{"a": 2, "a": 1}'}) + "\n")
    doc = run_audit(str(f), AuditOptions(registry=str(tmp_path))).to_json()
    assert "1 output(s) repeat a name in one object" in render_markdown(doc)
    buf = io.StringIO()
    render_terminal(doc, Console(file=buf, color_system=None, width=200))
    assert "1 output(s) repeat a name in one object" in buf.getvalue()


#: texts where the lean loop's key-count test and the written-back test meet their edges: a
#: repeat next to a colon in a string, an escaped colon (``\u003a``) that hides a repeat from
#: a plain colon count, floats and 19-digit integers, repeats below the top level
_EDGES = [
    '{"a": 1, "a": 1}',
    '{"a": "x:y", "a": 1}',
    '{"a": "x\\u003ay", "a": 1}',
    '{"a\\u003a": 1, "a\\u003a": 1}',
    '{"a": 1.5, "a": 1}',
    '{"a": 18446744073709551616}',
    '{"a": [1, {"b": 2, "b": 3}]}',
    '[{"b": 1}, {"b": 1, "b": 2}]',
    '{"a": 1, "b": {"c": [true, null, "d:e"]}}',
    '{"a": 1}',
    '{"a": 1.0}',
]


def test_the_lean_loop_finds_what_the_general_path_finds(tmp_path: Path) -> None:
    """Differential: the audit's lean loop (no ``--records``) against its general path (with
    ``--records``, which writes every row) on each edge, one audit per text so a count names
    its text: the same category and duplicate-key count for each."""
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": ["object", "array"]}))
    for i, text in enumerate(_EDGES):
        f = tmp_path / f"o{i}.jsonl"
        f.write_text(json.dumps({"text": text}) + "\n")
        lean = run_audit(str(f), AuditOptions(schema=str(schema), jobs=1)).to_json()
        rows = tmp_path / f"r{i}.jsonl"
        general = run_audit(
            str(f), AuditOptions(schema=str(schema), jobs=1, records=str(rows))
        ).to_json()
        for key in ("ok", "categories", "duplicate_keys"):
            assert lean[key] == general[key], (text, key)
        expected = 0 if i in (5, 8, 9, 10) else 1  # the rest repeat a name once
        assert lean["duplicate_keys"]["count"] == expected, text
