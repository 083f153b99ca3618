"""One ``format`` semantics everywhere (``schemaops/formats.py``): RFC 3339 for dates and times,
Python ``re`` for ``regex``, and the registry's sidecar check agrees with the audit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from corpus_paths import JSTS
from spies import calls_to

from schemaops.audit import AuditOptions, run_audit
from schemaops.audit.verdict.classify import parse_output
from schemaops.audit.verdict.validate import SchemaChecker
from schemaops.formats import conforms


@pytest.mark.parametrize(
    ("value", "fmt", "ok"),
    [
        ("12:00:00Z", "time", True),
        ("12:00:00z", "time", True),
        ("12:00:00.123+05:30", "time", True),
        # a leap second only at 23:59:60 UTC, the offset applied (issue 33 item 21; the
        # JSON-Schema-Test-Suite's tests/draft2020-12/optional/format/time.json and
        # date-time.json, draft7 the same)
        ("23:59:60Z", "time", True),
        ("15:59:60-08:00", "time", True),
        ("01:29:60+01:30", "time", True),
        ("00:29:60-23:30", "time", True),
        ("22:59:60-01:00", "time", True),
        ("23:59:60-01:00", "time", False),
        ("12:00:60Z", "time", False),
        ("22:59:60Z", "time", False),
        ("23:58:60Z", "time", False),
        ("23:59:60+00:30", "time", False),
        ("1998-12-31T23:59:60Z", "date-time", True),
        ("1998-12-31T15:59:60.123-08:00", "date-time", True),
        ("2026-12-03T12:00:60Z", "date-time", False),
        ("1998-12-31T22:59:60Z", "date-time", False),
        ("12:00:00", "time", False),  # RFC 3339 full-time needs an offset
        ("24:00:00Z", "time", False),
        ("12:60:00Z", "time", False),
        ("12:00:00+24:00", "time", False),
        ("1:00:00Z", "time", False),
        ("2024-02-29", "date", True),
        ("2023-02-29", "date", False),
        ("2026-11-31", "date", False),
        ("2026-1-01", "date", False),
        ("2026-11-30T12:00:00Z", "date-time", True),
        ("2026-11-30t12:00:00.5z", "date-time", True),
        ("2026-11-30 12:00:00Z", "date-time", False),
        ("2026-11-30T12:00:00", "date-time", False),
        ("2026-11-31T12:00:00Z", "date-time", False),
        ("^[a-z]+$", "regex", True),
        ("a{99999999999}", "regex", False),  # OverflowError in re: not a regex, no crash
        ("(unclosed", "regex", False),
        (12, "time", True),  # formats only constrain strings
    ],
)
def test_format_semantics(value: object, fmt: str, ok: bool) -> None:
    assert conforms(value, fmt) is ok


@pytest.mark.corpus("json-schema-test-suite")
@pytest.mark.parametrize("draft", ["draft2020-12", "draft7"])
@pytest.mark.parametrize("fmt", ["time", "date-time", "date"])
def test_the_suite_s_dates_and_times(draft: str, fmt: str) -> None:
    """Every case of the official suite's ``optional/format/{time,date-time,date}.json``
    (leap seconds, offsets, impossible days), as the audit asserts formats: the same answer,
    and the audit's verdict of a draft-07 or 2020-12 schema with it."""
    path = JSTS / "tests" / draft / "optional" / "format" / f"{fmt}.json"
    cases = [t for group in json.loads(path.read_text()) for t in group["tests"]]
    strings = [t for t in cases if isinstance(t["data"], str)]
    assert len(strings) > 10, path
    wrong = [t["data"] for t in strings if conforms(t["data"], fmt) is not t["valid"]]
    assert not wrong, wrong
    d = "http://json-schema.org/draft-07/schema#" if draft == "draft7" else None
    schema = {"format": fmt, **({"$schema": d} if d else {})}
    for t in strings:
        got = _audit_category(schema, json.dumps(t["data"]))
        assert (got == "ok") is t["valid"], (t["data"], got)


def _audit_category(schema: dict, text: str) -> str:
    value, failure = parse_output(text)
    assert failure is None
    return SchemaChecker("s", schema).check(value).category


def test_audit_uses_the_project_semantics() -> None:
    time = {"type": "string", "format": "time"}
    assert _audit_category(time, '"12:00:00Z"') == "ok"
    assert _audit_category(time, '"12:00:00"') == "schema_violation:format"


def test_regex_overflow_is_an_output_with_a_category(tmp_path: Path) -> None:
    """``a{99999999999}`` used to raise OverflowError and become an input error (issue 13.12)."""
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"re": {"format": "regex"}}}))
    f = tmp_path / "o.jsonl"
    f.write_text(
        json.dumps({"text": json.dumps({"re": "a{99999999999}"})})
        + "\n"
        + json.dumps({"text": json.dumps({"re": "^a+$"})})
        + "\n"
    )
    doc = run_audit(str(f), AuditOptions(schema=str(schema))).to_json()
    assert doc["input_errors"] == 0
    assert doc["categories"] == {"ok": 1, "schema_violation:format": 1}


def test_registry_sidecar_and_audit_agree_on_time(tmp_path: Path) -> None:
    """The registry accepted a sidecar saying "12:00:00Z" is a valid ``time`` while audit
    called it a violation (issue 13.11); both now follow RFC 3339."""
    from schemaops.registry import inspect_registry

    reg = tmp_path / "reg"
    reg.mkdir()
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"at": {"type": "string", "format": "time"}},
        "required": ["at"],
    }
    (reg / "slot.json").write_text(json.dumps(schema))
    valid, invalid = [{"at": "12:00:00Z"}, {"at": "08:30:00+02:00"}], [{"at": "12:00:00"}]
    (reg / "slot.examples.json").write_text(json.dumps({"valid": valid, "invalid": invalid}))
    _, problems = inspect_registry(reg)
    assert problems == []
    lines = [{"schema": "slot", "text": json.dumps(x)} for x in valid + invalid]
    f = tmp_path / "o.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    doc = run_audit(str(f), AuditOptions(registry=str(reg))).to_json()
    assert doc["categories"] == {"ok": 2, "schema_violation:format": 1}

    # The other way round: the registry must flag a sidecar that calls an offset-less time
    # valid, because the audit would call it a violation.
    (reg / "slot.examples.json").write_text(json.dumps({"valid": invalid, "invalid": valid}))
    _, problems = inspect_registry(reg)
    kinds = sorted(p["kind"] for p in problems)
    assert kinds == ["example_invalid_passes"] * 2 + ["example_valid_fails"], problems


def test_schema_with_an_uncompilable_pattern_is_a_clean_input_error(tmp_path: Path) -> None:
    """A schema whose ``pattern`` is ``a{99999999999}`` (OverflowError in ``re``) is refused
    with a message, exit 2, never a traceback: as ``--schema FILE`` and as a registry entry
    (then the other schemas' outputs are still audited)."""
    from typer.testing import CliRunner

    from schemaops.cli import app

    bad = {"type": "string", "pattern": "a{99999999999}"}
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(bad))
    out = tmp_path / "o.jsonl"
    out.write_text(json.dumps({"text": '"a"'}) + "\n")
    result = CliRunner().invoke(app, ["audit", str(out), "--schema", str(f)])
    assert result.exit_code == 2, result.output
    assert "is not a 'regex'" in result.stderr and result.exception.__class__ is SystemExit

    reg = tmp_path / "reg"
    reg.mkdir()
    (reg / "bad.json").write_text(json.dumps(bad))
    (reg / "good.json").write_text(json.dumps({"type": "string"}))
    out.write_text(
        json.dumps({"schema": "bad", "text": '"a"'})
        + "\n"
        + json.dumps({"schema": "good", "text": '"a"'})
        + "\n"
    )
    doc = run_audit(str(out), AuditOptions(registry=str(reg))).to_json()
    assert doc["ok"] == 1 and doc["input_errors"] == 1
    assert "is not a 'regex'" in doc["input_error_lines"][0]["message"]


def test_invalid_schema_file_is_exit_2(tmp_path: Path) -> None:
    """An invalid ``--schema`` file is an input error (exit 2), not a failed gate (exit 1)."""
    from typer.testing import CliRunner

    from schemaops.cli import app

    f = tmp_path / "bad.json"
    f.write_text(json.dumps({"type": 5}))
    out = tmp_path / "o.jsonl"
    out.write_text(json.dumps({"text": '"a"'}) + "\n")
    result = CliRunner().invoke(app, ["audit", str(out), "--schema", str(f)])
    assert result.exit_code == 2, result.output


def test_a_regex_answer_is_kept_and_the_same_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """``is_python_regex`` keeps its answers (a registry's schemas repeat their patterns past
    ``re``'s own cache): each pattern compiles once while kept, every answer is ``re``'s, and
    the kept answers are bounded."""
    from schemaops import formats

    monkeypatch.setattr(formats, "_REGEX_SEEN", {})
    monkeypatch.setattr(formats, "_REGEX_KEPT", 3)
    compiled = calls_to(monkeypatch, formats.re, "compile")
    asked = ["^a+$", "(", "^a+$", "(", "[z-a]", "x", "^a+$"]
    got = [formats.is_python_regex(p) for p in asked]
    assert got == [True, False, True, False, False, True, True]
    # "^a+$" and "(" kept; "[z-a]" fills the three; "x" starts the memo afresh
    assert [args[0] for args in compiled] == ["^a+$", "(", "[z-a]", "x", "^a+$"]
    assert len(formats._REGEX_SEEN) <= 3
