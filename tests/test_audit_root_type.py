"""A value not of the root's ``type`` is explained without walking it
(``SchemaChecker.root_type_error``): the root's type error, worded by ``jsonschema``'s own
``type`` keyword, wherever that is ``best_match``'s answer. Differential against
``best_match`` over ``jsonschema``'s ``iter_errors``: every JSON-Schema-Test-Suite schema of
every draft it holds and every 3rd JSONSchemaBench schema, each given values of every JSON
type; category, path and message must be equal wherever the root's type is missed, and the
shortcut must answer for most of them (it hands the rest to ``jsonschema``, never guesses)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from corpus_paths import JSB, suite_groups
from jsonschema.exceptions import best_match

from schemaops.audit.verdict.validate import (
    EXPLAINED_BY,
    JSONSCHEMA,
    MESSAGE_LIMIT,
    ROOT_TYPE,
    RS_LOCATED,
    SchemaChecker,
)
from schemaops.errors import InputError
from schemaops.strings import pointer, truncate

VALUES: list[Any] = [None, True, 0, -7, 2.5, "", "x", [], [1, "a"], {}, {"a": 1}]


def _compare(schema: Any, stats: Counter, bad: list[str]) -> None:
    try:
        checker = SchemaChecker("t", schema, timeout=0)
    except (InputError, RecursionError):
        return
    schema_, cls, fmt = checker._fast_args
    if not isinstance(schema_, dict) or "type" not in schema_:
        return
    for value in VALUES:
        try:
            names = schema_["type"]
            names = [names] if isinstance(names, str) else names
            if any(cls.TYPE_CHECKER.is_type(value, t) for t in names):
                continue
            err = best_match(cls(schema_, format_checker=fmt).iter_errors(value))
        except Exception:  # noqa: BLE001 (an unknown type name, an unresolvable $ref)
            continue
        if err is None:
            continue
        want = (
            f"schema_violation:{err.validator if err.validator is not None else 'false'}",
            pointer(err.absolute_path),
            truncate(err.message, MESSAGE_LIMIT),
        )
        checker.prepare()
        shortcut = checker.root_type_error(value)
        stats["missed"] += 1
        stats["answered" if shortcut is not None else "handed_back"] += 1
        outcome = checker.check(value)
        seen = (outcome.category, outcome.path, outcome.message)
        if seen != want:
            bad.append(f"{json.dumps(schema)[:160]} on {value!r}: {seen} != {want}")
        if shortcut is not None:
            short = (shortcut.category, shortcut.path, shortcut.message)
            if short != want:
                bad.append(f"shortcut {json.dumps(schema)[:160]} on {value!r}: {short} != {want}")


@pytest.mark.corpus("json-schema-test-suite")
def test_the_suite_root_type_errors_equal_best_match() -> None:
    stats: Counter = Counter()
    bad: list[str] = []
    for _draft, _group, schema in suite_groups():
        _compare(schema, stats, bad)
    print(f"\nsuite: {dict(stats)}")
    assert not bad, f"{len(bad)} differ from best_match: {bad[:5]}"
    assert stats["answered"] > 300, stats


@pytest.mark.corpus("jsonschemabench")
def test_jsonschemabench_root_type_errors_equal_best_match() -> None:
    stats: Counter = Counter()
    bad: list[str] = []
    for f in sorted(Path(JSB).glob("*.jsonl")):
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines()):
            if i % 3:
                continue
            try:
                schema = json.loads(json.loads(line)["json_schema"])
            except (ValueError, KeyError):
                continue
            _compare(schema, stats, bad)
    print(f"\njsonschemabench: {dict(stats)}")
    assert not bad, f"{len(bad)} differ from best_match: {bad[:5]}"
    assert stats["answered"] > 10 * stats["handed_back"], stats


def test_a_keyword_before_type_that_fails_first_is_left_to_jsonschema() -> None:
    """``enum`` before ``type`` yields its error first (``best_match`` keeps the first of
    equals); ``properties`` before ``type`` yields nothing for a string; a legacy root ``$ref``
    makes ``type`` inert."""
    first = SchemaChecker("t", {"enum": [{"a": 1}], "type": "object"})
    first.prepare()
    assert first.root_type_error("x") is None
    assert first.check("x").category == "schema_violation:enum"
    later = SchemaChecker("t", {"properties": {"a": {}}, "type": "object", "enum": [1]})
    later.prepare()
    found = later.root_type_error("x")
    assert found is not None and found.message == "'x' is not of type 'object'"
    legacy = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"s": {"type": "string"}},
        "$ref": "#/definitions/s",
        "type": "object",
    }
    ref = SchemaChecker("t", legacy)
    ref.prepare()
    assert ref.root_type_error("x") is None
    assert ref.check("x").category == "ok"


def test_each_violation_is_counted_by_the_way_it_was_explained() -> None:
    """``SchemaChecker.explained`` (what ``bench/audit_costs.py`` splits a workload's failures
    by): the root's type without a walk, located by jsonschema-rs, or jsonschema's own walk
    (a schema with a nested ``$id``: jsonschema-rs's locations may be relative to another
    resource; a root ``$id`` alone keeps them the document's)."""
    plain = {"type": "object", "properties": {"a": {"type": "integer"}}}
    checker = SchemaChecker("t", plain, timeout=0)
    checker.fast  # noqa: B018 (compiles jsonschema-rs's check, as the audit does first)
    for value in ([], "x", {"a": "x"}, {"a": 1.5}, {"a": 1}):
        checker.check(value)
    assert checker.explained == {ROOT_TYPE: 2, RS_LOCATED: 2}
    root_id = {**plain, "$id": "https://example.com/t.json"}
    checker = SchemaChecker("t", root_id, timeout=0)
    checker.fast  # noqa: B018
    for value in ([], {"a": "x"}):
        checker.check(value)
    assert checker.explained == {ROOT_TYPE: 1, RS_LOCATED: 1}
    nested_id = {**plain, "$defs": {"b": {"$id": "https://example.com/b.json"}}}
    checker = SchemaChecker("t", nested_id, timeout=0)
    checker.fast  # noqa: B018
    for value in ([], {"a": "x"}):
        checker.check(value)
    assert checker.explained == {ROOT_TYPE: 1, JSONSCHEMA: 1}
    assert set(EXPLAINED_BY) == {ROOT_TYPE, RS_LOCATED, JSONSCHEMA}


def test_the_type_is_remembered_by_class_only_where_the_class_decides_it() -> None:
    """``root_type_error`` remembers per value class whether it is of the root's type, but
    not for numbers: ``1.0`` is an integer from draft 4 on and ``1.5`` is not, in any
    order; a ``bool`` is never an integer; each answer is ``best_match``'s."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    schema = {"type": "integer"}
    checker = SchemaChecker("t", schema)
    checker.prepare()
    validator = Draft202012Validator(schema)
    for value in (1.0, 1.5, 1.0, 2, True, None, None, "1", 1.5, 3.0):
        found = checker.root_type_error(value)
        err = best_match(validator.iter_errors(value))
        if err is None:
            assert found is None, value
        else:
            assert found is not None and found.message == err.message, value


def test_a_refused_value_of_another_type_is_answered_as_check_answers() -> None:
    """``refused`` answers a value whose class the root's ``type`` refuses from the per-class
    memo, once the checker has explained a failure; a keyword before ``type`` (``enum``
    here, which fails first) keeps it on the general way. Every answer is ``check``'s."""
    plain = {"type": "object", "properties": {"a": {"type": "integer"}}}
    first = {"enum": [{"a": 1}], "type": "object"}
    for schema in (plain, first):
        checker = SchemaChecker("t", schema, timeout=0)
        twin = SchemaChecker("t", schema, timeout=0)
        checker.fast  # noqa: B018
        twin.fast  # noqa: B018
        for value in ("x", [], "y", None, True, 1.5, {"a": "x"}, "z", []):
            got, want = checker.refused(value), twin.check(value)
            assert (got.category, got.path, got.message) == (
                want.category,
                want.path,
                want.message,
            ), (schema, value)
    memo_checker = SchemaChecker("t", plain, timeout=0)
    memo_checker.fast  # noqa: B018
    memo_checker.refused("x")
    memo_checker.refused("y")  # from the memo: counted the same way
    assert memo_checker.explained == {ROOT_TYPE: 2}


def test_the_closure_tree_waits_for_a_failure_jsonschema_must_walk() -> None:
    """A schema whose failures jsonschema-rs locates does not build its closure tree (and
    the validator walking it) until a failure it cannot locate (a ``propertyNames`` error,
    whose instance is a key). The answers are ``check``'s either way."""
    from schemaops.audit.verdict.validate import _PENDING

    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "propertyNames": {"maxLength": 2},
    }
    checker = SchemaChecker("t", schema, timeout=0)
    twin = SchemaChecker("t", schema, timeout=0)
    checker.fast  # noqa: B018
    twin.fast  # noqa: B018
    twin.prepare()
    twin._walkable()
    assert checker._rs is not None
    for value in ({"a": "x"}, {"a": 1.5}, [], {"abc": 1}, {"a": "y"}):
        if value == {"abc": 1}:
            assert checker._tree is _PENDING  # nothing needed it yet
        got, want = checker.refused(value), twin.check(value)
        assert (got.category, got.path, got.message) == (want.category, want.path, want.message)
    assert checker._tree is not _PENDING  # built for the propertyNames failure
    assert checker.explained == {ROOT_TYPE: 1, RS_LOCATED: 3, JSONSCHEMA: 1}
