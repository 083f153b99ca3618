"""The ASCII gate (``rsscan.ascii_fit``, ``rscheck.ascii_text``, ``rspattern.ascii_pattern``):
schemas whose patterns read the same in jsonschema-rs and Python's ``re`` only on printable ASCII
strings are judged by jsonschema-rs for outputs whose strings are all such, by ``jsonschema``
for every other output.

Held here: every admitted pattern matches exactly the same printable ASCII strings in both
libraries (seeded random patterns and every JSONSchemaBench pattern, alone, under ``not`` and
as a ``patternProperties`` key, so both polarities); the gate admits exactly the outputs whose
strings are printable ASCII; and each routed-back JSONSchemaBench schema classifies every
mutated output (ASCII and not) exactly as ``jsonschema``'s ``best_match`` does: category,
path and message. The non-ASCII agreement tests of ``test_audit_rs_agreement.py`` run
through the same gate.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections import Counter
from typing import Any

import jsonschema_rs
import pytest
from jsonschema.exceptions import best_match
from test_audit_rs_agreement import (
    UNICODE_STRINGS,
    _instance,
    _jsb_sample,
    _mutations,
    _random_pattern,
)

from schemaops.audit.verdict.classify import parse_output
from schemaops.audit.verdict.rscheck import BACKTRACK_LIMIT, ascii_text, compile_rs
from schemaops.audit.verdict.rspattern import ascii_pattern, portable_pattern
from schemaops.audit.verdict.rsscan import scan
from schemaops.audit.verdict.validate import MESSAGE_LIMIT, SchemaChecker
from schemaops.errors import InputError
from schemaops.strings import pointer, truncate

PRINTABLE = string.ascii_letters + string.digits + string.punctuation + " "


def test_ascii_pattern_admits_what_reads_the_same_on_ascii() -> None:
    for pattern in ("^\\d+$", "^[^\\w]$", "\\bfoo\\b", "^\\S+$", "(?!.)", "(?m)^a$", "^\\W\\D\\s$"):
        assert ascii_pattern(pattern), pattern
    for pattern in ("a{1, 2}", "^[a[b]]", "(?i)a", "(a)\\1", "\\<a", "a{,3}", "(?x)a", "\\p{L}"):
        assert not ascii_pattern(pattern), pattern


@pytest.mark.parametrize(
    ("value", "admitted"),
    [
        ({"a": "text", "n": [1, 2.5, None, True]}, True),
        ("é", False),
        ({"é": 1}, False),
        ("a\nb", False),
        ("\x1c", False),
        ('a"b', False),  # a quote: orjson escapes it, so refused (stricter than needed)
        ("a\\b", False),
        (2**70, False),  # orjson cannot write it: not known, not admitted
        ("~\x7f", True),
    ],
)
def test_ascii_text_admits_printable_ascii_only(value: Any, admitted: bool) -> None:
    assert ascii_text(value) is admitted


def _ascii_strings(pattern: str, rng: random.Random, n: int) -> list[str]:
    """Printable ASCII strings, biased to the pattern's own characters."""
    own = [c for c in pattern if c in PRINTABLE] or ["a"]
    out = ["", " ", "a", "0", "_", "-"]
    for _ in range(n):
        k = rng.randint(1, 10)
        out.append("".join(rng.choice(own if rng.random() < 0.6 else PRINTABLE) for _ in range(k)))
    return out


def _exact_on_ascii(pattern: str, rng: random.Random, stats: Counter) -> list[str]:
    """Strings on which jsonschema-rs's ``pattern`` and Python's ``re.search`` disagree."""
    try:
        rx = re.compile(pattern)
        rs = jsonschema_rs.Draft202012Validator(
            {"pattern": pattern},
            pattern_options=jsonschema_rs.FancyRegexOptions(backtrack_limit=BACKTRACK_LIMIT),
        )
    except Exception:  # noqa: BLE001 (either refuses it: the schema is never routed)
        stats["refused"] += 1
        return []
    stats["patterns"] += 1
    bad = []
    for s in _ascii_strings(pattern, rng, 60):
        stats["strings"] += 1
        if rs.is_valid(s) != (rx.search(s) is not None):
            bad.append(f"{pattern!r} on {s!r}")
    return bad


def test_random_admitted_patterns_read_the_same_on_ascii() -> None:
    rng = random.Random(36)
    stats: Counter = Counter()
    bad: list[str] = []
    for _ in range(1500):
        pattern = _random_pattern(rng)
        if ascii_pattern(pattern):
            bad += _exact_on_ascii(pattern, rng, stats)
    assert not bad, f"{len(bad)} disagreements: {bad[:5]}"
    assert stats["patterns"] > 300, stats


def _jsb_patterns() -> set[str]:
    seen: set[str] = set()
    for schema in _jsb_sample(1, 0):
        stack = [schema]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                if isinstance(node.get("pattern"), str):
                    seen.add(node["pattern"])
                if isinstance(node.get("patternProperties"), dict):
                    seen.update(node["patternProperties"])
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
    return seen


@pytest.mark.corpus("jsonschemabench")
def test_jsonschemabench_admitted_patterns_read_the_same_on_ascii() -> None:
    """Every JSONSchemaBench pattern and ``patternProperties`` key the ASCII reading admits
    matches the same printable ASCII strings in both libraries (exact: both directions, so
    under ``not`` and as a key too)."""
    rng = random.Random(361)
    stats: Counter = Counter()
    bad: list[str] = []
    for pattern in sorted(_jsb_patterns()):
        if ascii_pattern(pattern):
            stats["admitted"] += 1
            stats["admitted_not_portable"] += not portable_pattern(pattern)
            bad += _exact_on_ascii(pattern, rng, stats)
    print(f"\njsonschemabench patterns: {dict(stats)}")
    assert not bad, f"{len(bad)} disagreements: {bad[:5]}"
    assert stats["patterns"] > 1_000, stats


def _oracle(checker: SchemaChecker, value: Any) -> tuple:
    schema, cls, fmt = checker._fast_args
    err = best_match(cls(schema, format_checker=fmt).iter_errors(value))
    if err is None:
        return ("ok", None, None)
    keyword = err.validator if err.validator is not None else "false"
    message = truncate(err.message, MESSAGE_LIMIT)
    return (f"schema_violation:{keyword}", pointer(err.absolute_path), message)


@pytest.mark.corpus("jsonschemabench")
def test_routed_back_schemas_classify_as_jsonschema() -> None:
    """Every 6th JSONSchemaBench schema (offset 1) that only the ASCII gate puts on
    jsonschema-rs: each mutated instance (ASCII strings and the non-ASCII ones of the
    agreement tests) gets ``jsonschema``'s category, path and message from the checker."""
    rng = random.Random(3636)
    stats: Counter = Counter()
    bad: list[str] = []
    for schema in _jsb_sample(6, 1):
        try:
            checker = SchemaChecker("t", schema)
        except InputError:
            continue
        if scan(schema)[0] or not compile_rs(checker.schema, checker.label, True).ascii_only:
            continue
        stats["schemas"] += 1
        base = [_instance(schema, schema, rng) for _ in range(3)]
        instances = [m for b in base for m in _mutations(b, rng)]
        instances += [{u: u} for u in UNICODE_STRINGS[:8]]
        for inst in instances:
            value, failure = parse_output(json.dumps(inst))
            if failure is not None:
                continue
            stats["instances"] += 1
            stats["ascii"] += ascii_text(value)
            got = checker.check(value)
            want = _oracle(checker, value)
            stats["failures"] += want[0] != "ok"
            if (got.category, got.path, got.message) != want:
                bad.append(f"{json.dumps(schema)[:150]} on {json.dumps(inst)[:80]}: {got} {want}")
    print(f"\nrouted back: {dict(stats)}")
    assert not bad, f"{len(bad)} classifications differ: {bad[:5]}"
    assert stats["schemas"] > 30 and stats["ascii"] > 500, stats


@pytest.mark.corpus("jsonschemabench")
def test_fewer_jsonschemabench_schemas_off_jsonschema_rs() -> None:
    """The sample of ``test_jsonschemabench_never_lenient`` (every 6th schema, offset 5):
    192 of them were off jsonschema-rs after issue 33's routing (49 before it)."""
    off = total = 0
    for schema in _jsb_sample(6, 5):
        try:
            checker = SchemaChecker("t", schema)
        except InputError:
            continue
        total += 1
        off += checker.fast is None
    print(f"\noff jsonschema-rs: {off} of {total}")
    assert off < 120, (off, total)


def test_gate_sends_non_ascii_outputs_to_jsonschema() -> None:
    """A key only Python's ``\\d`` matches (Arabic-Indic three) escapes nothing: the gate
    refuses the output and jsonschema names the violation."""
    schema = {"patternProperties": {"^\\d$": {"type": "integer"}}, "additionalProperties": False}
    checker = SchemaChecker("t", schema)
    assert checker.fast is not None and compile_rs(checker.schema, checker.label, True).ascii_only
    assert checker.check({"3": 1}).category == "ok"
    assert checker.check({"3": "x"}).category == "schema_violation:type"
    c = checker.check({"\u0663": "x"})
    assert (c.category, c.path) == ("schema_violation:type", "/\u0663")
    assert checker.check({"\u0663": 1}).category == "ok"
    assert checker.check({"a": 1}).category == "schema_violation:additionalProperties"
