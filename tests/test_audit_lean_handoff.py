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
from spies import calls_to

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
    # a schema field that is not a name: an input error on either path, with or without
    # ``--schema`` (a list or an object could not even be looked up: unhashable)
    lines.append(json.dumps({"id": "odd", "text": '{"name": "ok"}', "schema": {"x": 1}}))
    lines.append(json.dumps({"id": "odd2", "text": "[]", "schema": {"x": 1}}))
    lines.append(json.dumps({"id": "odd3", "text": '{"name": "ok"}', "schema": ["s"]}))
    # a record naming a tool set (here one the registry lacks), or carrying its request: a
    # tool set may judge its text, so the lean loop must leave it (it counted a valid text ok)
    for t in ('{"name": "ok"}', '{"name": "x"}'):
        lines.append(json.dumps({"id": "ts", "text": t, "schema": "s", "toolset": "nope"}))
        lines.append(json.dumps({"id": "rq", "text": t, "schema": "s", "request": {"x": 1}}))
    f = tmp_path / "o.jsonl"
    f.write_text("\n".join(lines) + "\n")
    kw = {"schema": str(tmp_path / "s.json")} if fixed else {"registry": str(tmp_path)}
    lean = _report(f, None, **kw)
    general = _report(f, tmp_path / "rows.jsonl", **kw)
    assert lean == general
    # "ok", the full one, the repeat whose last value passes (3 each), and the valid text
    # beside a request that offers no tools
    assert lean["ok"] == 3 * 3 + 1
    assert lean["input_errors"] == 5


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


#: ``SCHEMA`` without a keyword that reads a number as more than "a number"
#: (``rsscan.numbers_matter`` is False): the lean loop counts an ok output whose text has as
#: many colons as its root has keys without walking the value
PLAIN_NUMBERS = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
        "n": {"type": "number"},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
        "sub": {"type": "object", "properties": {"k": {"type": "string"}}},
    },
    "required": ["name"],
    "additionalProperties": False,
}

PLAIN_TEXTS = [
    '{"name": "ok"}',
    '{"name": "ok", "n": 3, "tags": ["a"]}',
    '{"name": "ok", "n": 2.5}',
    '{"name": "ok", "n": 18446744073709551616}',  # orjson reads a float: judged alike
    '{"name": "ok", "n": 123456789012345678901234567890}',
    '{"name": "ok", "n": -9223372036854775809}',
    '{"name": 18446744073709551616}',  # refused: its message names the exact number
    '{"name": "ok", "n": 18446744073709551616, "tags": 1}',
    '{"name": "ok", "name": "x"}',  # repeated: the colons outnumber the keys
    '{"name": "x", "name": "ok"}',
    '{"name": "ok", "sub": {"k": "a", "k": "b"}}',  # repeated below the root
    '{"name": "ok", "sub": {"k": "a:b"}}',  # a colon in a string, nested
    '{"name": "a:b"}',  # a colon in a string: pattern fails
    '{"name": "ok", "tags": ["a:b"]}',
    '{"name": "ok", "sub": {}}',
    '{"name": "caf\\u00e9"}',
    '{"na\\u006de": "ok"}',  # an escaped name
    '{"name": "ok"\\u003a}',
    '{"name": "ok", "n": 1e999}',
    '["name"]',
    "[]",
    '[{"a": 1}]',
    '{"name": "ok"',
]


@pytest.mark.parametrize("schema", [PLAIN_NUMBERS, SCHEMA])
def test_colons_as_many_as_keys_decide_as_the_walk_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schema: dict
) -> None:
    """Differential: the lean loop's colon count (no walk of the value, where the schema's
    numbers are plain) against the general path, one audit per text so that a difference
    names its text; and the walk is skipped only where the schema allows it."""
    from schemaops.audit.run import lines as lines_module
    from schemaops.audit.verdict.rsscan import numbers_matter

    walks = calls_to(monkeypatch, lines_module, "plain_key_count")
    (tmp_path / "s.json").write_text(json.dumps(schema))
    walked: dict[str, bool] = {}
    for i, text in enumerate(PLAIN_TEXTS):
        f = tmp_path / f"o{i}.jsonl"
        # the first line compiles the checker, so the lean test runs for the second
        first = json.dumps({"text": '{"name": "first"}', "schema": "s"})
        f.write_text(first + "\n" + json.dumps({"text": text, "schema": "s"}) + "\n")
        walks.clear()
        lean = _report(f, None, registry=str(tmp_path))
        walked[text] = bool(walks)
        general = _report(f, tmp_path / f"rows{i}.jsonl", registry=str(tmp_path))
        assert lean == general, text
    flat = ['{"name": "ok"}', '{"name": "ok", "n": 3, "tags": ["a"]}', '{"name": "ok", "n": 2.5}']
    long_ints = [t for t in PLAIN_TEXTS if "8446744073709551616" in t or "234567890123" in t]
    if numbers_matter(schema):
        assert all(walked[t] for t in flat)
    else:
        assert not any(walked[t] for t in flat + long_ints)
        assert walked['{"name": "ok", "sub": {"k": "a:b"}}']  # more colons than root keys


def test_numbers_matter_finds_each_keyword_that_reads_a_number() -> None:
    from schemaops.audit.verdict.rsscan import numbers_matter

    assert not numbers_matter({"type": "object", "properties": {"a": {"type": "number"}}})
    assert not numbers_matter({"enum": ["a", "b", True, None]})
    assert not numbers_matter({"const": {"a": ["x", False]}})
    assert not numbers_matter(True)
    for keyword, value in [
        ("minimum", 1),
        ("maximum", 1),
        ("exclusiveMinimum", 1),
        ("exclusiveMaximum", 1),
        ("multipleOf", 2),
        ("divisibleBy", 2),
        ("uniqueItems", True),
        ("type", "integer"),
        ("type", ["string", "integer"]),
        ("enum", ["a", 1]),
        ("const", {"a": [1.5]}),
    ]:
        assert numbers_matter({"properties": {"x": {keyword: value}}}), keyword
        assert numbers_matter({"$defs": {"x": {"items": {keyword: value}}}}), keyword


#: ``dependencies`` is not a 2020-12 keyword: ``jsonschema`` (the authority) ignores it where
#: jsonschema-rs still reads it, so an output it names is refused by the lean test and ok in
#: the report (JSONSchemaBench has 228 such outputs among (b)'s 943,500 of issue 36)
STRICTER_RS = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
    "dependencies": {"a": ["b"]},
    "required": ["a"],
}


def test_the_lean_failure_branch_counts_as_the_general_path_does(tmp_path: Path) -> None:
    """The lean loop counts a refused output of a plain record itself (issue 36: the general
    path's per-output tests cost a twentieth of a many-schema audit): every kind of failure,
    an output jsonschema-rs refuses and the authority accepts, and records that carry what
    the report reads beside the verdict (SGLang's ``meta_info``, a hosted body's
    ``finish_reason`` and ``usage``, an agent's episode and step) give the report the
    general path gives, line by line and repeated (the memo's entries)."""
    (tmp_path / "s.json").write_text(json.dumps(STRICTER_RS))
    texts = [  # each line's text distinct (%d), as in a real log, then all of them again
        '{"a": %d, "b": "x"}',
        '{"a": %d}',  # jsonschema-rs: dependencies; the authority: ok
        '{"a": "%d"}',  # type, below the root
        '{"b": "%d"}',  # required
        "[%d]",  # the root's type
        '{"a": %d',  # truncated
        '```json\n{"a": %d}\n```',
        'Sure: {"a": %d}',
        '{"a": %d, "b": "\t"}',  # a raw control character: a parse failure, its diagnosis
    ]
    extras: list[dict] = [
        {},
        {"meta_info": {"finish_reason": {"type": "length"}, "completion_tokens": 64}},
        {"meta_info": {"finish_reason": {"type": "stop"}, "completion_tokens": 9}},
        {"finish_reason": "length"},
        {"usage": {"completion_tokens": 12}},
        {"episode_id": "e1", "step": 1},
        {"episode_id": "e2"},
    ]
    lines = [json.dumps({"text": '{"a": 2, "b": "y"}', "schema": "s"})]  # compiles the check
    # (first number, which record shape a text gets): distinct texts; the same texts again,
    # each beside another record shape (a memo entry's diagnoses must be the record's own: a
    # text cut at finish_reason length is seen again in a plain record); distinct again, so
    # that the report's last run of failures is the lean branch's
    for rnd, (first, shift) in enumerate([(0, 0), (0, 3), (1000, 0)]):
        n = first
        for text in texts:
            for j in range(len(extras)):
                n += 1
                rec = {"id": f"{rnd}.{n}", "text": text % n, "schema": "s"}
                lines.append(json.dumps(rec | extras[(j + shift) % len(extras)]))
    f = tmp_path / "o.jsonl"
    f.write_text("\n".join(lines) + "\n")
    lean = _report(f, None, registry=str(tmp_path))
    general = _report(f, tmp_path / "rows.jsonl", registry=str(tmp_path))
    assert lean == general
    assert lean["ok"] == 1 + 3 * 2 * len(extras)
    assert lean["categories"]["json_parse_failure"] == 3 * 4 * len(extras)


def test_a_checker_that_raises_is_the_records_input_error_on_either_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An explanation that raises is the schema's fault, not the output's: the record is an
    input error naming the schema, on the lean loop as on the general path. A test double
    stands in for the fault (``_slow`` raising): the registry refuses the schemas that make
    ``jsonschema`` raise (a missing or remote ``$ref``) before any output is judged."""
    from schemaops.audit.verdict.validate import SchemaChecker

    real = SchemaChecker._slow

    def faulty(self: SchemaChecker, value: object) -> object:
        if isinstance(value, dict) and value.get("a") == 13:
            raise ValueError("explanation failed")
        return real(self, value)

    monkeypatch.setattr(SchemaChecker, "_slow", faulty)
    (tmp_path / "s.json").write_text(json.dumps(STRICTER_RS))
    texts = ['{"a": 1, "b": "x"}', '{"a": 13, "b": 1}', '{"a": "x"}', '{"a": 13, "b": 2}']
    f = tmp_path / "o.jsonl"
    f.write_text("".join(json.dumps({"text": t, "schema": "s"}) + "\n" for t in texts))
    lean = _report(f, None, registry=str(tmp_path))
    general = _report(f, tmp_path / "rows.jsonl", registry=str(tmp_path))
    assert lean == general
    assert lean["input_errors"] == 2 and lean["ok"] == 1
    assert "cannot validate against schema 's'" in lean["input_error_groups"][0]["reason"]
