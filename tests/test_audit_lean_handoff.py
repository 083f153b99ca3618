"""The audit's lean loop hands an output it refused to the general path with what it found
out (the parsed value jsonschema-rs said no to, or that orjson refused the text), so nothing is
parsed or checked twice (issue 36). Differential: the same file audited by the lean loop (no
``--records``) and by the general path alone (``--records`` turns the lean loop off) gives
the same report, every count and example, on failures of each kind and the edges where the
lean test must not decide (repeated names, long integers, what only the strict decoder reads,
a schema field that is not a name)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemaops.audit import AuditOptions, run_audit

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
        "n": {"type": "integer", "maximum": 10},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
        "at": {"type": "string", "format": "date"},
    },
    "required": ["name"],
    "additionalProperties": False,
}

TEXTS = [
    '{"name": "ok"}',
    '{"name": "ok", "n": 3, "tags": ["a"]}',
    '{"name": "x"}',  # minLength
    '{"name": "Bad"}',  # pattern
    '{"name": "ok", "n": 11}',  # maximum
    '{"name": "ok", "tags": ["c"]}',  # enum, below the root
    '{"name": "ok", "extra": 1}',  # additionalProperties
    '{"n": 1}',  # required
    '{"name": "ok", "at": "2024-13-45"}',  # format
    '["name"]',  # the root's type
    '"name"',
    "42",
    '{"name": "ok", "name": "x"}',  # a repeated name: the last value fails
    '{"name": "x", "name": "ok"}',  # a repeated name, the last value passes
    '{"name": "ok", "n": 18446744073709551616}',  # beyond 64 bits: orjson reads a float
    '{"name": "ok", "n": 1e999}',  # orjson refuses it; the strict decoder reads it exactly
    '{"name": "ok", "n": NaN}',  # neither reads it
    '{"name": "ok"',  # truncated
    'Here it is: {"name": "ok"}',  # prose before
    '```json\n{"name": "ok"}\n```',  # fenced
    '{"name": "ok"} trailing',
    "",
    "   ",
    '{"name": "caf\\u00e9"}',  # pattern on non-ASCII
    '{"name": "ok", "tags": ["a", "b", "a", "c"]}',
]


def _report(path: Path, records: Path | None, **kw: object) -> dict:
    opts = AuditOptions(jobs=1, records=str(records) if records else None, **kw)  # type: ignore[arg-type]
    doc = run_audit(str(path), opts).to_json()
    for key in ("elapsed_s", "jobs"):
        doc.pop(key, None)
    return doc


@pytest.mark.parametrize("fixed", [True, False])
def test_the_lean_loop_and_the_general_path_give_the_same_report(
    tmp_path: Path, fixed: bool
) -> None:
    (tmp_path / "s.json").write_text(json.dumps(SCHEMA))
    lines = []
    for i, text in enumerate(TEXTS * 3):  # repeats: the memo answers some of them
        rec: dict = {"id": f"r{i}", "text": text}
        if not fixed:
            rec["schema"] = "s"
        lines.append(json.dumps(rec))
    if fixed:  # a schema field that is not a name: an input error on either path
        lines.append(json.dumps({"id": "odd", "text": '{"name": "ok"}', "schema": {"x": 1}}))
        lines.append(json.dumps({"id": "odd2", "text": "[]", "schema": {"x": 1}}))
    f = tmp_path / "o.jsonl"
    f.write_text("\n".join(lines) + "\n")
    kw = {"schema": str(tmp_path / "s.json")} if fixed else {"registry": str(tmp_path)}
    lean = _report(f, None, **kw)
    general = _report(f, tmp_path / "rows.jsonl", **kw)
    assert lean == general
    assert lean["ok"] == 3 * 3  # "ok", the full one, the repeat whose last value passes
    if fixed:
        assert lean["input_errors"] == 2


def test_what_the_lean_test_hands_over_never_reaches_the_next_line(tmp_path: Path) -> None:
    """A refused output whose record is an input error later (a tool set the registry lacks)
    must not be read as the next line's output: the next line's own text (a number) is an
    input error, not a type violation of the line before's ``[]``."""
    (tmp_path / "s.json").write_text(json.dumps({"type": "object"}))
    lines = [
        {"text": "{}", "schema": "s"},  # compiles the checker: the lean test runs from here on
        {"text": "[]", "schema": "s", "toolset": "nope"},
        {"text": 5, "schema": "s"},
    ]
    f = tmp_path / "o.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    doc = _report(f, None, registry=str(tmp_path))
    assert doc["input_errors"] == 2
    assert doc["categories"] == {"ok": 1}
