"""The compiled metaschema check (``registry/metacheck.py``) against ``jsonschema``'s.

Its contract is one-sided (True only when ``jsonschema`` finds no metaschema error), but the
verdicts are held identical both ways here: an unneeded False would put the slow path back.
Inputs: every JSONSchemaBench schema against its own draft (slow), and every schema and every
test instance of the JSON-Schema-Test-Suite against every compiled draft (the instances are
arbitrary JSON, so most of them are invalid schemas: the refusing side is exercised too).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from corpus_paths import JSB, JSTS

from schemaops.registry import drafts
from schemaops.registry.drafts import DRAFTS, _meta_validator, draft_label, metaschema_problems
from schemaops.registry.metacheck import meta_check

COMPILED = ["draft-04", "draft-06", "draft-07", "2019-09", "2020-12"]


def _verdicts(value: Any, label: str) -> tuple[bool, bool]:
    validator = _meta_validator(label)
    check = meta_check(label, validator)
    assert check is not None, f"{label}: the metaschema check should compile"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        slow = next(iter(validator.iter_errors(value)), None) is None
        return slow, check(value)


def _corpus_schemas() -> Iterator[tuple[str, Any, str]]:
    """(file name, schema, draft label) of every JSONSchemaBench schema that parses and
    names a known draft."""
    for f in sorted(Path(JSB).glob("*.jsonl")):
        with f.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    value = json.loads(json.loads(line)["json_schema"])
                    label = draft_label(value.get("$schema") if isinstance(value, dict) else None)
                except (ValueError, AttributeError, drafts.UnknownDraft):
                    continue
                yield f.name, value, label


def _suite_values() -> list[Any]:
    out: list[Any] = []
    for f in sorted((JSTS / "tests").rglob("*.json")):
        for case in json.loads(f.read_text(encoding="utf-8")):
            out.append(case["schema"])
            out.extend(t["data"] for t in case["tests"])
    return out


def test_every_draft_but_draft3_compiles() -> None:
    for label in DRAFTS:
        check = meta_check(label, _meta_validator(label))
        assert (check is None) == (label == "draft-03"), label


@pytest.mark.parametrize("label", COMPILED)
@pytest.mark.corpus("json-schema-test-suite")
def test_suite_schemas_and_instances_same_verdict(label: str) -> None:
    values = _suite_values()
    assert len(values) > 1000
    wrong = []
    seen = {True: 0, False: 0}
    for value in values:
        slow, fast = _verdicts(value, label)
        seen[slow] += 1
        if slow != fast:
            wrong.append((slow, fast, json.dumps(value)[:200]))
    assert not wrong, wrong[:5]
    assert seen[True] > 100 and seen[False] > 100, seen  # both sides exercised


def test_hand_picked_edges() -> None:
    """Draft differences the compiler must keep: draft-04 integers, its exclusiveMinimum
    flag, $ref siblings ignored up to draft-07, format regex asserted."""
    cases = [
        ({"minLength": 1.0}, "draft-04"),
        ({"minLength": 1.0}, "draft-07"),
        ({"minLength": 1.0}, "2020-12"),
        ({"multipleOf": 0}, "draft-04"),
        ({"multipleOf": 0}, "2020-12"),
        ({"exclusiveMinimum": True}, "draft-04"),
        ({"exclusiveMinimum": True}, "draft-07"),
        ({"exclusiveMaximum": True}, "draft-04"),
        ({"pattern": "(unclosed"}, "2020-12"),
        ({"pattern": "(unclosed"}, "draft-07"),
        ({"$defs": {"a": {"type": "nope"}}}, "2020-12"),
        ({"definitions": {"a": {"type": "nope"}}}, "draft-07"),
        ({"properties": {"a": {"minItems": -1}}}, "2019-09"),
        ({"type": ["string", "string"]}, "2020-12"),
        ({"enum": []}, "draft-04"),
        ({"required": []}, "draft-04"),
        ({"$anchor": "0bad"}, "2020-12"),
        ({"items": [{"type": "string"}]}, "2020-12"),
        ({"items": [{"type": "string"}]}, "draft-07"),
        ({"dependencies": {"a": 1}}, "draft-07"),
        ({"dependencies": {"a": ["b", "b"]}}, "2020-12"),
        (True, "2020-12"),
        ([], "draft-07"),
    ]
    for value, label in cases:
        slow, fast = _verdicts(value, label)
        assert slow == fast, (value, label, slow, fast)


def test_valid_schema_never_reaches_jsonschema(monkeypatch: pytest.MonkeyPatch) -> None:
    """A schema the compiled check accepts costs no ``iter_errors`` (the milliseconds it
    took per schema); an invalid one still gets jsonschema's problems."""
    validator = _meta_validator("2020-12")
    calls = []
    original = type(validator).iter_errors

    def counting(self: Any, *a: Any, **k: Any) -> Any:
        calls.append(1)
        return original(self, *a, **k)

    monkeypatch.setattr(type(validator), "iter_errors", counting)
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}}
    assert metaschema_problems(schema, "2020-12") == []
    assert calls == []
    problems = metaschema_problems({"type": "nope"}, "2020-12")
    assert calls and problems and problems[0][0] == "/type"
    assert drafts is not None


@pytest.mark.slow
@pytest.mark.corpus("jsonschemabench")
def test_jsonschemabench_same_verdict() -> None:
    """Every corpus schema (~10,000) against its own draft's metaschema (~40 s)."""
    wrong, n = [], 0
    for name, value, label in _corpus_schemas():
        if label not in COMPILED:
            continue
        try:
            slow, fast = _verdicts(value, label)
        except RecursionError:
            continue
        n += 1
        if slow != fast:
            wrong.append((name, slow, fast, json.dumps(value)[:200]))
    assert n > 9000
    assert not wrong, wrong[:5]


@pytest.mark.corpus("jsonschemabench")
def test_ref_free_schemas_need_no_ref_registry() -> None:
    """The loader skips building the ref registry for a document without any ``$ref``-family
    or ``$id``/``id`` key: ``check_refs`` finds nothing there, on every corpus schema."""
    from schemaops.registry import refs
    from schemaops.registry.documents import ref_free

    n = 0
    for name, value, label in _corpus_schemas():
        if not ref_free(value):
            continue
        entry = refs.Entry("file:///reg/x.json", value, label)
        registry, clashes = refs.build([entry])
        report = refs.check_refs(entry, registry)
        assert (report.problems, report.external, clashes) == ([], False, []), name
        n += 1
    assert n > 3000
