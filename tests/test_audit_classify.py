"""Classification of single outputs: every parse-failure subtype from real failure shapes,
schema violations with pointer and message, format assertion, limits, and property tests."""

from __future__ import annotations

import json
import time

import pytest
from corpus_paths import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemaops.audit.verdict.classify import MAX_DEPTH, SUBTYPES, parse_output
from schemaops.audit.verdict.validate import SchemaChecker

TOOL = {
    "type": "object",
    "properties": {
        "tool": {"enum": ["get_order", "issue_refund"]},
        "args": {
            "type": "object",
            "properties": {
                "order_id": {"type": "string", "pattern": "^ORD-[0-9]{8}$"},
                "quantity": {"type": "integer", "minimum": 1},
                "email": {"type": "string", "format": "email"},
            },
            "required": ["order_id"],
            "additionalProperties": False,
        },
    },
    "required": ["tool", "args"],
    "additionalProperties": False,
}
GOOD = '{"tool": "get_order", "args": {"order_id": "ORD-20481357"}}'


def subtype(text: str) -> str | None:
    value, outcome = parse_output(text)
    return None if outcome is None else outcome.subtype


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "empty"),
        ("  \n\t ", "empty"),
        ("Sure! Here is the JSON you asked for:\n" + GOOD, "prose_prefix"),
        ("I'll look up the order.\n\n" + GOOD + "\nLet me know if you need more.", "prose_prefix"),
        ("```json\n" + GOOD + "\n```", "code_fence"),
        ("```\n" + GOOD + "\n```", "code_fence"),
        ("Here you go:\n```json\n" + GOOD + "\n```", "code_fence"),
        # opened by a fence: named without parsing what follows, whatever it is
        ("```json\n" + GOOD[:-3], "code_fence"),
        ("```", "code_fence"),
        ("```json\n{'a': 1}\n```", "code_fence"),
        (" \n\t```json\n" + GOOD + "\n```", "code_fence"),
        ("\u00a0```json\n" + GOOD + "\n```", "code_fence"),  # whitespace JSON does not allow
        ("\ufeff```json\n" + GOOD + "\n```", "code_fence"),  # a BOM first: JSON in the fence
        ("Here: ```not json```", "invalid_syntax"),  # a fence inside prose, no JSON in it
        (GOOD[:-1], "truncated"),  # missing closing brace
        ('{"tool": "get_order", "args": {"order_id": "ORD-204', "truncated"),  # token limit
        ('{"tool": "get_order", "args": [1, 2,', "truncated"),
        (GOOD + "\nI hope this helps!", "trailing_text"),
        (GOOD + GOOD, "trailing_text"),
        ('{"score": NaN}', "non_standard_literal"),
        ('{"score": Infinity}', "non_standard_literal"),
        ('{"score": -Infinity}', "non_standard_literal"),
        ('{"ok": True}', "non_standard_literal"),
        ('{"v": None}', "non_standard_literal"),
        ("{'tool': 'get_order'}", "invalid_syntax"),  # Python repr, single quotes
        ('{"tool": "get_order",}', "invalid_syntax"),  # trailing comma
        ('{"a": 1 // comment\n}', "invalid_syntax"),
        ('{"a": "line\nbreak"}', "invalid_syntax"),  # raw control character
        ("[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5), "limit_exceeded"),
        ("[" * 5000 + "]" * 5000, "limit_exceeded"),
        ("1" * 5000, "limit_exceeded"),  # beyond Python's int digit limit
        # issue 13.6: prose that starts lower-case or with a Python literal word
        ("the tool call: " + GOOD, "prose_prefix"),
        ("here it is " + GOOD, "prose_prefix"),
        ("None of the tools fit, but: " + GOOD, "prose_prefix"),
        ("True, I can do that. " + GOOD, "prose_prefix"),
        ("nothing to add " + GOOD, "prose_prefix"),
        ("t: " + GOOD, "prose_prefix"),
        ("fa " + GOOD, "prose_prefix"),
        ("None", "non_standard_literal"),
        ("True", "non_standard_literal"),
        # issue 13.6: output cut inside a literal or a number
        ('{"ok": fal', "truncated"),
        ('{"ok": tr', "truncated"),
        ('{"v": nu', "truncated"),
        ("[true, n", "truncated"),
        ('{"n": 1.', "truncated"),
        ('{"n": -', "truncated"),
        ('{"n": 1e', "truncated"),
        ('{"n": 2.5E+', "truncated"),
        ("[1, 2, 3.", "truncated"),
        ("1.", "truncated"),
        ("-", "truncated"),
        ("nul", "truncated"),
        ('{"s": "caf\\u00', "truncated"),  # cut inside a \u escape
        ('{"s": "\\ud83d\\u', "truncated"),
        ('{"s": "\\u12"}', "invalid_syntax"),
        ('{"n": 1.x}', "invalid_syntax"),  # not at the end: not a cut
        ('{"ok": fals, "b": 1}', "invalid_syntax"),
        # prose that starts with a JSON scalar (a word, a number) before the JSON value
        ('true story: {"a": 1}', "prose_prefix"),
        ("true story: " + GOOD, "prose_prefix"),
        ("null pointer here, so: " + GOOD, "prose_prefix"),
        ("false alarm. [1, 2]", "prose_prefix"),
        ("1. Here is the call: " + GOOD, "prose_prefix"),  # a numbered list
        ("2) " + GOOD, "prose_prefix"),
        ("42 is the answer " + GOOD + " done", "prose_prefix"),
        ('"Sure" is my answer: ' + GOOD, "prose_prefix"),
        ('"see {} here" and then ' + GOOD, "prose_prefix"),
        ('true story: {"a": 1', "truncated"),  # prose, then a value cut at the token limit
        # ... but a value that is all there, then more, stays trailing_text
        ('{"a":1} and more', "trailing_text"),
        ('[1] true story: {"a": 1}', "trailing_text"),
        ("42 apples", "trailing_text"),  # a real scalar output, then junk, no value after
        ("true story", "trailing_text"),
        ('"see {} here" and more', "trailing_text"),  # the braces are inside the string
        ('1 {"a": 1}', "trailing_text"),  # two values, no prose between them
        ('"a": {"b": 1}', "trailing_text"),  # a member without its object, not prose
        ('"Sure" {"a": 1}', "trailing_text"),
    ],
)
def test_parse_subtypes(text: str, expected: str) -> None:
    assert subtype(text) == expected


def test_valid_json_parses_identically_to_stdlib() -> None:
    for text in [GOOD, "18446744073709551616123", '"\\ud800"', "-0", "[]", " 1 ", "1e-400"]:
        value, outcome = parse_output(text)
        assert outcome is None, text
        assert json.dumps(value) == json.dumps(json.loads(text))
    # beyond double range the stdlib reads inf; the audit reads the number sent (issue 33)
    assert parse_output('{"a": 1e400}') == ({"a": 10**400}, None)


def violation(text: str, schema: dict = TOOL, **kw: object) -> tuple[str, str | None, str | None]:
    value, outcome = parse_output(text)
    assert outcome is None
    out = SchemaChecker("tool", schema, **kw).check(value)
    return out.category, out.path, out.message


def test_violations_name_keyword_pointer_and_message() -> None:
    cat, path, msg = violation('{"tool": "lookup_order", "args": {"order_id": "ORD-20481357"}}')
    assert (cat, path) == ("schema_violation:enum", "/tool") and "lookup_order" in msg
    assert violation('{"tool": "get_order"}')[:2] == ("schema_violation:required", "")
    cat, path, _ = violation(
        '{"tool": "get_order", "args": {"order_id": "ORD-20481357", "quantity": "2"}}'
    )
    assert (cat, path) == ("schema_violation:type", "/args/quantity")
    cat, path, _ = violation('{"tool": "get_order", "args": {"order_id": "20481357"}}')
    assert (cat, path) == ("schema_violation:pattern", "/args/order_id")
    cat, path, _ = violation('{"tool": "get_order", "args": {"order_id": "ORD-20481357", "x": 1}}')
    assert (cat, path) == ("schema_violation:additionalProperties", "/args")
    assert violation(GOOD) == ("ok", None, None)


def test_format_asserted_by_default_and_annotation_with_no_format() -> None:
    text = '{"tool": "get_order", "args": {"order_id": "ORD-20481357", "email": "not-an-email"}}'
    assert violation(text)[:2] == ("schema_violation:format", "/args/email")
    assert violation(text, assert_format=False)[0] == "ok"
    uuid = {"type": "string", "format": "uuid"}
    assert violation('"123"', uuid)[0] == "schema_violation:format"
    assert violation('"2b3c6f1e-5d7a-4c1b-9a0e-3f2d1c0b9a87"', uuid)[0] == "ok"
    assert (
        violation('"2026-11-31T25:00:00Z"', {"format": "date-time"})[0] == "schema_violation:format"
    )


def test_pointer_escapes_and_array_indices() -> None:
    schema = {"properties": {"a/b": {"items": {"type": "integer"}}}}
    assert violation('{"a/b": [1, "x"]}', schema)[:2] == ("schema_violation:type", "/a~1b/1")


def test_catastrophic_pattern_is_bounded_and_reported() -> None:
    from schemaops.watchdog import armed

    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
    value, _ = parse_output(json.dumps({"s": "a" * 40 + "!"}))
    checker = SchemaChecker("evil", schema, timeout=0.2)
    start = time.perf_counter()
    with armed(0.2):
        out = checker.check(value)
    # a bound on a hang (2**40 steps would take hours), not a speed race: generous under load
    assert time.perf_counter() - start < 60
    assert out.category == "schema_violation:pattern" and "exceeded" in out.message
    with armed(0.2):
        assert checker.check({"s": "aaa"}).category == "ok"


def test_all_errors_is_cut_by_the_watchdog_and_says_so() -> None:
    """``--all-errors`` counting under the watchdog: ``required`` is counted first (schema
    order), then the backtracking ``pattern`` never ends on any machine, so the cut is
    certain, not a race; the count says it is incomplete and keeps ``required``."""
    from schemaops.watchdog import armed

    schema = {
        "required": ["must"],
        "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}},
    }
    checker = SchemaChecker("evil", schema, timeout=0.2)
    with armed(0.2):
        counts, complete = checker.all_errors({"s": "a" * 40 + "!"})
    assert (dict(counts), complete) == ({"required": 1}, False)
    with armed(0.2):
        counts, complete = checker.all_errors({"s": "aaa"})
    assert (dict(counts), complete) == ({"required": 1}, True)


def test_deep_values_that_parse_are_classified_not_crashing() -> None:
    schema = {
        "$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}},
        "$ref": "#/$defs/n",
    }
    checker = SchemaChecker("deep", schema)
    for depth in (10, MAX_DEPTH, MAX_DEPTH + 1, 900):
        value, outcome = parse_output("[" * depth + "]" * depth)
        out = outcome or checker.check(value)
        assert out.category in ("ok", "json_parse_failure"), depth
    huge = json.dumps({"s": "x" * 2_000_000})
    assert parse_output(huge)[1] is None


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=5), kids, max_size=4)
    ),
    max_leaves=20,
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
CHECKER = SchemaChecker("tool", TOOL)


def _classify(text: str) -> str:
    value, outcome = parse_output(text)
    if outcome is not None:
        assert outcome.subtype in SUBTYPES
        return outcome.category
    return CHECKER.check(value).category


def _oracle(text: str) -> str:
    """The category from independent oracles: the stdlib's strict ``json.loads`` (RFC 8259
    constants refused) decides "parses", then plain jsonschema decides ok vs violation."""

    def refuse(name: str) -> None:
        raise ValueError(name)

    try:
        value = json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError):
        return "json_parse_failure"
    if _depth(value) > MAX_DEPTH:  # the documented nesting limit (RFC 8259 section 9)
        return "json_parse_failure"
    return "ok" if CHECKER.validator.is_valid(value) else "schema_violation"


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _agrees(text: str) -> None:
    got = _classify(text)
    assert got.split(":", 1)[0] == _oracle(text), (text, got)
    if got.startswith("schema_violation:"):
        keyword = got.split(":", 1)[1]
        value, _ = parse_output(text)
        assert keyword in {e.validator for e in CHECKER.validator.iter_errors(value)}, got


@SETTINGS
@given(st.text())
def test_any_text_gets_the_oracles_category(text: str) -> None:
    _agrees(text)


@SETTINGS
@given(JSON)
def test_any_json_parses_and_gets_the_oracles_verdict(value: object) -> None:
    text = json.dumps(value)
    assert _classify(text) != "json_parse_failure"
    _agrees(text)


@SETTINGS
@given(st.binary())
def test_any_bytes_get_the_oracles_category(data: bytes) -> None:
    _agrees(data.decode("utf-8", errors="surrogateescape"))


TOOLISH = st.fixed_dictionaries(
    {"tool": st.sampled_from(["get_order", "issue_refund", "x"])},
    optional={
        "args": st.fixed_dictionaries(
            {},
            optional={
                "order_id": st.sampled_from(["ORD-20481357", "ORD-1", 7]),
                "quantity": st.sampled_from([0, 1, 2, 1.0, 2.5, "2"]),
                "email": st.sampled_from(["a@b.co", "not-an-email"]),
                "x": st.none(),
            },
        )
    },
)


@SETTINGS
@given(TOOLISH)
def test_near_valid_tool_calls_get_the_oracles_verdict(value: object) -> None:
    """Values close to the schema, so that both ok and violations are drawn often."""
    _agrees(json.dumps(value))


@SETTINGS
@given(
    st.one_of(
        st.lists(JSON, min_size=1, max_size=4),
        st.dictionaries(st.text(max_size=5), JSON, min_size=1, max_size=4),
    ),
    st.data(),
    st.booleans(),
)
def test_any_cut_object_or_array_is_truncated(
    value: object, data: st.DataObject, ascii_: bool
) -> None:
    """An object or array cut anywhere (the token limit) is ``truncated``, whatever token the
    cut falls in: a literal, a number, a string, an escape, between tokens (issue 13.6)."""
    text = json.dumps(value, ensure_ascii=ascii_)
    cut = text[: data.draw(st.integers(1, len(text) - 1))]
    assert subtype(cut) == "truncated", cut[-60:]


@SETTINGS
@given(JSON)
def test_fast_path_agrees_with_jsonschema(value: object) -> None:
    for schema in (
        TOOL,
        TOOL["properties"]["args"],
        {"anyOf": [{"type": "integer"}, {"enum": [None, True]}]},
    ):
        checker = SchemaChecker("s", schema)
        assert checker.fast is not None
        assert checker.fast(value) == checker.validator.is_valid(value)
        assert checker.tree is not None  # the closure form (treecheck.py)
        assert checker.tree(value) == checker.validator.is_valid(value)


def test_fast_path_declines_what_it_cannot_answer() -> None:
    from schemaops.audit.verdict.rscheck import compile_rs

    assert compile_rs({"type": "object"}, "draft-03", True).is_valid is None
    assert compile_rs({"pattern": "(a)\\1"}, "2020-12", True).is_valid is None
    # ``\\W`` reads the same on printable ASCII only: answered behind the ASCII gate
    gated = compile_rs({"pattern": "\\W"}, "2020-12", True)
    assert gated.ascii_only and not gated.is_valid("\u00e9")
    assert compile_rs({"pattern": "a\\Z"}, "2020-12", True).is_valid is None


@pytest.mark.parametrize("fmt", ["uuid", "date", "date-time"])
@SETTINGS
@given(data=st.data())
def test_format_prefilters_only_accept_what_jsonschema_accepts(
    fmt: str, data: st.DataObject
) -> None:
    from schemaops.audit.verdict.subset import FORMAT_PREFILTERS
    from schemaops.formats import conforms

    pattern = FORMAT_PREFILTERS[fmt].__self__.pattern
    text = data.draw(st.from_regex(pattern, fullmatch=True))
    assert conforms(text, fmt), text


LINE = st.one_of(
    st.binary(max_size=60),
    st.text(max_size=60).map(lambda t: json.dumps({"schema": "tool", "text": t}).encode()),
    JSON.map(lambda v: json.dumps({"text": json.dumps(v)}).encode()),
    JSON.map(lambda v: json.dumps(v).encode()),
    st.just(b""),
)


@SETTINGS
@given(st.lists(LINE, max_size=30))
def test_every_line_is_accounted_for(lines: list[bytes]) -> None:
    from schemaops.audit.run.pipeline import AuditOptions, audit_lines
    from schemaops.audit.verdict.resolver import SchemaResolver

    lines = [x.replace(b"\n", b" ") for x in lines]
    resolver = SchemaResolver(None, "no-such-registry")
    tally = audit_lines(lines, AuditOptions(registry="no-such-registry"), resolver)
    assert tally.lines == len(lines)
    assert tally.outputs == sum(tally.categories.values()) + tally.ok
    assert tally.outputs + tally.input_errors >= len(lines)  # fan-out adds outputs, never loses
    assert all(1 <= e["line"] <= len(lines) for e in tally.input_error_lines)


@pytest.mark.parametrize("depth", [MAX_DEPTH, MAX_DEPTH + 1, 200, 256, 300, 1000, 5000])
def test_deep_valid_outputs_through_the_audit_loop(tmp_path, depth: int) -> None:
    """A deeply nested but well-formed output on the audit loop's lean path (a plain record
    whose text parses): beyond MAX_DEPTH it is ``limit_exceeded``, never a traceback (orjson
    parses 1,024 levels but writes only 255, and the lean path writes the value back)."""
    from schemaops.audit import AuditOptions, run_audit

    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"type": ["array", "object"]}))
    data = tmp_path / "out.jsonl"
    texts = ["[" * depth + "]" * depth, '{"a": ' * depth + "1" + "}" * depth]
    data.write_text("".join(json.dumps({"schema": "s", "text": t}) + "\n" for t in texts))
    doc = run_audit(str(data), AuditOptions(schema=str(schema), jobs=1)).to_json()
    if depth <= MAX_DEPTH:
        assert doc["ok"] == 2
    else:
        assert doc["parse_failures"] == {"limit_exceeded": 2}


def test_a_parse_failure_is_classified_alike_with_the_strict_decoders_error_reused() -> None:
    """``parse_output`` hands ``classify_parse_failure`` what the strict decoder raised, so the
    whole text is not decoded a second time; the classification (subtype and message) is the
    same as when it decodes afresh, on cut, padded, prefixed, fenced and broken texts."""
    import random

    from schemaops.audit.verdict.classify import classify_parse_failure, strict_loads

    rng = random.Random(36)
    texts = []
    with open(REPO / "audits" / "example-outputs.jsonl", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if isinstance(rec.get("text"), str):
                texts.append(rec["text"])
    extra = ['{"a": NaN}', "[1, Infinity]", '{"a": 1} {"b": 2}', '{"a": "\\u12', "-", "1."]
    extra += ["```json\n{}\n```", 'Sure: {"a": 1}', '{"a": "x\ty"}', '{"a" 1}', "\u00a0{}"]
    extra += ['"s" is fine', "true story: {}", "[" * 50, '{"a": [1, 2', "nul", "1. item"]
    extra += ['{"a": "abc  ', '{"a": "abc \n', '{"a": 12 ', '{"a": tru ', '{"a": - \t', "[1, \n"]
    cases = list(extra)
    for t in rng.sample(texts, min(300, len(texts))):
        for cut in {0, 1, len(t) // 2, max(0, len(t) - 1), rng.randrange(len(t) + 1)}:
            cases += [t[:cut], t[:cut] + " ", "\n" + t[:cut], t + " trailing", "x" + t]
            # cut, then padded with whitespace JSON reads and whitespace it does not
            for pad in ("\n\t ", "\r\n", "  ", "\x0c", "\u00a0", " \u2028", "\t\x0b"):
                cases.append(t[:cut] + pad)
    compared = 0
    for text in cases:
        try:
            strict_loads(text)
        except RecursionError:
            continue
        except Exception as exc:  # noqa: BLE001 (whatever the strict decoder raises)
            assert classify_parse_failure(text, exc) == classify_parse_failure(text), text
            compared += 1
    assert compared > 1000


def test_cut_inside_token_finds_what_the_tail_search_finds() -> None:
    """``_cut_inside_token`` finds the cut token without searching from 64 places; it must
    answer as ``_CUT_TAIL.search`` did, on texts built to hit every edge: a token right at
    64 characters from the end or at the very start, delimiters that are Unicode whitespace
    (``\\s`` in a str pattern is ``str.isspace``), parts that are no token, a final newline."""
    import random

    from schemaops.audit.verdict import classify

    def by_search(s: str, pos: int) -> bool:
        m = classify._CUT_TAIL.search(s, max(0, len(s) - 64))
        if m is None or m.start("part") > pos:
            return False
        part = m.group("part")
        if part[0].isalpha():
            return True
        return part == "-" or part[-1] in ".eE+-"

    rng = random.Random(36)
    pieces = list("truefalsn0123456789.eE+-") + [
        "[",
        ",",
        ":",
        " ",
        "\t",
        "\n",
        "\u2003",
        "\x1c",
        "\x85",
        "\xa0",
        "x",
        "T",
        '"',
        "{",
        "}",
        "]",
        "1.",
        "-1e",
        "fal",
        "tru",
        "nul",
        "12",
        "é",
    ]
    checked = cut = 0
    for _ in range(60_000):
        s = "".join(rng.choice(pieces) for _ in range(rng.choice((0, 1, 3, 8, 30, 62, 63, 70))))
        for pos in (0, len(s) // 2, max(0, len(s) - 3), len(s)):
            got = classify._cut_inside_token(s, pos)
            assert got == by_search(s, pos), (s, pos)
            checked += 1
            cut += got
    assert checked == 240_000 and cut > 5_000  # both answers occur, many times


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    )
)
def test_plain_key_count_counts_names_or_says_float(value: object) -> None:
    """The lean loop's repeated-name test counts the names of a parsed value, or -1 when a
    float is anywhere in it: held to a plain recursive count."""
    from schemaops.audit.verdict.repeats import plain_key_count

    def names(v: object) -> tuple[int, bool]:
        if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
            return 0, False
        if isinstance(v, float):
            return 0, True
        items = list(v.values()) if isinstance(v, dict) else list(v)  # type: ignore[union-attr]
        n, has_float = len(v) if isinstance(v, dict) else 0, False  # type: ignore[arg-type]
        for x in items:
            k, f = names(x)
            n, has_float = n + k, has_float or f
        return n, has_float

    if not isinstance(value, (dict, list)):
        return
    n, has_float = names(value)
    assert plain_key_count(value) == (-1 if has_float else n)
