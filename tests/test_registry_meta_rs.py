"""The registry's metaschema fast path (jsonschema-rs, ``registry/metars.py``) against
``jsonschema``'s metaschema validator, the authority.

The contract is one-sided: the fast path saying valid must mean ``jsonschema`` (with
``schemaops.formats``) finds no error; the fast path saying invalid while ``jsonschema`` finds
none only costs speed (it is counted, not failed, past a small share). Inputs: the
JSON-Schema-Test-Suite's schemas and test instances (arbitrary JSON, so mostly invalid
schemas) against every draft jsonschema-rs has, the suite's own metaschema tests, seeded
mutations of the suite's schemas, hand-picked edges (Python values that are not JSON, depth),
and JSONSchemaBench: ``jsonschema`` costs about 5 ms a corpus schema, so a fixed-seed sample
of ``JSB_SAMPLE`` schemas, each as it is and mutated, runs by default (about 15 s);
``SCHEMAOPS_META_RS_FULL=1`` runs every corpus schema with two mutations each (minutes).
"""

from __future__ import annotations

import copy
import decimal
import enum
import json
import os
import random
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from corpus_paths import JSB, JSTS
from spies import calls_to

from schemaops.formats import format_checker
from schemaops.registry import drafts
from schemaops.registry.drafts import DRAFTS, draft_label, metaschema_problems, validator_class
from schemaops.registry.metars import RS_METASCHEMAS, meta_is_valid, plain_json, rs_valid

RS_LABELS = list(RS_METASCHEMAS)
JSB_SAMPLE = 1200
SEED = 24


@cache
def _python(label: str) -> Any:
    cls = validator_class(label)
    return cls(cls.META_SCHEMA, format_checker=format_checker())


def _verdicts(value: Any, label: str) -> tuple[bool | None, bool]:
    """(``jsonschema`` finds no error (None: it raised RecursionError), the fast path's)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        fast = rs_valid(value, label)
        try:
            slow = next(iter(_python(label).iter_errors(value)), None) is None
        except RecursionError:
            slow = None
    return slow, fast


class Tally:
    """Agreement counts; ``lenient`` holds the cases that break the contract."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.lenient: list[str] = []

    def add(self, value: Any, label: str, where: str = "") -> None:
        slow, fast = _verdicts(value, label)
        if slow is None:
            self.counts["python RecursionError"] += 1
            key = "rs valid" if fast else "rs invalid"
        else:
            key = {
                (True, True): "both valid",
                (False, False): "both invalid",
                (True, False): "rs invalid, python valid (speed only)",
                (False, True): "rs valid, python invalid (WRONG)",
            }[(slow, fast)]
        self.counts[key] += 1
        if fast and slow is not True:
            self.lenient.append(f"{where} {label}: {json.dumps(value, default=repr)[:300]}")

    def check(self, min_both: int = 0) -> None:
        print(dict(self.counts))  # the agreement figures, shown with pytest -s
        assert not self.lenient, self.lenient[:5]
        assert self.counts["both valid"] >= min_both, self.counts
        assert self.counts["both invalid"] >= min_both, self.counts


# -- mutations ------------------------------------------------------------------------------

_BAD_PATTERNS = [
    "(unclosed",
    "[a-",
    "a{2,1}",
    "*x",
    "(?P<n>a)(?P<n>b)",
    "\\",
    "(?<=a+)b",
    "\\p{L}",
    "[[:alpha:]]",
    "a{,3}",
    "^\\d+$",
    "(?i)x",
    "\\Z",
    "\\cA",
    "(?<n>x)",
    "[\\w-.]",
]
_COUNTS = ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"]
_WRONG = [1, 1.5, -1, "x", "", True, None, [], {}, ["x"], [1], {"a": 1}]
_IDS = ["$id", "id", "$ref", "$anchor", "$schema", "$dynamicRef", "$dynamicAnchor"]
_ID_VALUES = ["x y", "a#\n", "#a", "http://[bad", 1, "", "#/definitions/a", "0bad", "a\n", "a#b#c"]
_ENUMS = [
    [1, 1],
    [1, 1.0],
    [{"a": 1}, {"a": 1.0}],
    [0, False],
    [[1], [True]],
    [1, True],
    [],
    [None, None],
    [0.0, -0.0],
    [2**64, float(2**64)],
    [{"a": [1]}, {"a": [1.0]}],
    ["a", "a"],
    "a",
]
_OTHER: list[tuple[str, Any]] = [
    ("format", 1),
    ("format", "regex"),
    ("uniqueItems", "yes"),
    ("additionalProperties", 1),
    ("additionalProperties", "no"),
    ("items", [{"type": "string"}]),
    ("items", 1),
    ("prefixItems", {}),
    ("dependencies", {"a": 1}),
    ("dependencies", {"a": ["b", "b"]}),
    ("dependentRequired", {"a": "b"}),
    ("exclusiveMinimum", True),
    ("exclusiveMaximum", "1"),
    ("properties", []),
    ("properties", {"a": 1}),
    ("allOf", []),
    ("anyOf", {}),
    ("oneOf", [1]),
    ("not", "x"),
    ("const", None),
    ("contentMediaType", 1),
    ("examples", {}),
    ("default", None),
    ("$defs", {"a": {"type": "nope"}}),
    ("definitions", {"a": {"minimum": "0"}}),
    ("if", 1),
    ("unevaluatedProperties", []),
    ("$vocabulary", {"x y": True}),
]


def _wrong_type(node: dict, rng: random.Random) -> None:
    keys = [k for k in node if not k.startswith("x-")] or ["type"]
    key = rng.choice(keys)
    old = node.get(key)
    node[key] = rng.choice([w for w in _WRONG if type(w) is not type(old)])


MUTATIONS: list[Callable[[dict, random.Random], None]] = [
    _wrong_type,
    lambda n, r: n.__setitem__("pattern", r.choice(_BAD_PATTERNS)),
    lambda n, r: n.__setitem__("patternProperties", {r.choice(_BAD_PATTERNS): {}}),
    lambda n, r: n.__setitem__(r.choice(_COUNTS), r.choice([-1, -0.5, -(2**70), 0, 2**70])),
    lambda n, r: n.__setitem__(r.choice(_COUNTS), r.choice([1.0, 1.5, 2.0, 1e300, True, "1"])),
    lambda n, r: n.__setitem__(
        "required", r.choice(["a", {"a": 1}, 1, None, ["a", "a"], ["a", 1], []])
    ),
    lambda n, r: n.__setitem__(
        "type", r.choice(["nope", ["string", "nope"], ["string", "string"], [], 1, ["STRING"]])
    ),
    lambda n, r: n.__setitem__("enum", copy.deepcopy(r.choice(_ENUMS))),
    lambda n, r: n.__setitem__("multipleOf", r.choice([0, -1, 0.0, 1e-300, "1", 0.5, 1.0])),
    lambda n, r: n.__setitem__(r.choice(_IDS), r.choice(_ID_VALUES)),
    lambda n, r: n.__setitem__(*copy.deepcopy(r.choice(_OTHER))),
    lambda n, r: n.pop(r.choice(list(n)), None) if n else None,
]


def _dicts(value: Any) -> list[dict]:
    out, stack = [], [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            out.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def mutate(schema: Any, rng: random.Random, times: int = 1) -> Any:
    """A copy of ``schema`` with ``times`` seeded mutations, each at a random object in it."""
    out = copy.deepcopy(schema)
    for _ in range(times):
        nodes = _dicts(out)
        if not nodes:
            return {"type": rng.choice(_WRONG)}
        rng.choice(MUTATIONS)(rng.choice(nodes), rng)
    return out


# -- corpora ---------------------------------------------------------------------------------


def _corpus_schemas() -> Iterator[tuple[str, Any, str]]:
    """(file name, schema, draft label) of every JSONSchemaBench schema that parses and names
    a known draft."""
    for f in sorted(Path(JSB).glob("*.jsonl")):
        with f.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    value = json.loads(json.loads(line)["json_schema"])
                    label = draft_label(value.get("$schema") if isinstance(value, dict) else None)
                except (ValueError, AttributeError, drafts.UnknownDraft):
                    continue
                yield f.name, value, label


def _suite_cases() -> Iterator[tuple[str, dict]]:
    for f in sorted((JSTS / "tests").rglob("*.json")):
        for case in json.loads(f.read_text(encoding="utf-8")):
            yield f.parent.name, case


def _suite_values() -> list[Any]:
    out: list[Any] = []
    for _, case in _suite_cases():
        out.append(case["schema"])
        out.extend(t["data"] for t in case["tests"])
    return out


_SUITE_DRAFTS = {"draft4": "draft-04", "draft6": "draft-06", "draft7": "draft-07"}
_SUITE_DRAFTS |= {"draft2019-09": "2019-09", "draft2020-12": "2020-12"}


# -- tests -----------------------------------------------------------------------------------


def test_every_draft_but_draft3_has_a_fast_path() -> None:
    for label in DRAFTS:
        assert (meta_is_valid(label) is None) == (label == "draft-03"), label
    assert not rs_valid({}, "draft-03")  # draft-03: jsonschema alone
    assert metaschema_problems({"minLength": "x"}, "draft-03")


@pytest.mark.parametrize("label", RS_LABELS)
@pytest.mark.corpus("json-schema-test-suite")
def test_suite_schemas_and_instances(label: str) -> None:
    values = _suite_values()
    assert len(values) > 1000
    tally = Tally()
    for value in values:
        tally.add(value, label)
    tally.check(min_both=100)  # both sides exercised


@pytest.mark.corpus("json-schema-test-suite")
def test_suite_metaschema_tests() -> None:
    """The suite's cases whose schema is a draft's metaschema (``$ref`` to it): their
    instances are schemas, and the suite says which are valid."""
    uris = {uri.rstrip("#"): label for label, (uri, _) in DRAFTS.items()}
    n = 0
    for _, case in _suite_cases():
        schema = case["schema"]
        ref = schema.get("$ref") if isinstance(schema, dict) else None
        label = uris.get(ref.rstrip("#")) if isinstance(ref, str) else None
        if label not in RS_METASCHEMAS:
            continue
        for t in case["tests"]:
            slow, fast = _verdicts(t["data"], label)
            assert slow == t["valid"], (case["description"], t["description"])
            assert fast == t["valid"], (case["description"], t["description"])
            n += 1
    assert n >= 4


@pytest.mark.corpus("json-schema-test-suite")
def test_suite_schemas_mutated() -> None:
    rng = random.Random(SEED)
    tally = Tally()
    for folder, case in _suite_cases():
        label = _SUITE_DRAFTS.get(folder, "2020-12")
        for times in (1, 2):
            tally.add(mutate(case["schema"], rng, times), label, case["description"])
    tally.check(min_both=100)
    slow_only = tally.counts["rs invalid, python valid (speed only)"]
    assert slow_only <= sum(tally.counts.values()) // 20, tally.counts


class _Num(enum.IntEnum):
    ONE = 1


class _Str(str):
    pass


def _chain(key: str, depth: int) -> dict:
    root: dict = {}
    node = root
    for _ in range(depth - 1):
        node[key] = {}
        node = node[key]
    return root


def test_hand_picked_edges() -> None:
    """Draft differences (draft-04 integers and its exclusiveMinimum flag, format regex), and
    what would make jsonschema-rs more lenient than jsonschema: Python values that are not
    JSON (jsonschema-rs reads a tuple as an array, a Decimal as a number) and nesting deep
    enough for jsonschema to raise RecursionError."""
    same = [
        ({"minLength": 1.0}, "draft-04"),
        ({"minLength": 1.0}, "draft-07"),
        ({"minLength": 1.0}, "2020-12"),
        ({"multipleOf": 0}, "draft-04"),
        ({"exclusiveMinimum": True}, "draft-04"),
        ({"exclusiveMinimum": True}, "draft-07"),
        ({"pattern": "(unclosed"}, "2020-12"),
        ({"pattern": "(unclosed"}, "draft-04"),
        ({"patternProperties": {"(": {}}}, "2019-09"),
        ({"$defs": {"a": {"type": "nope"}}}, "2020-12"),
        ({"properties": {"a": {"minItems": -1}}}, "2019-09"),
        ({"type": ["string", "string"]}, "2020-12"),
        ({"enum": [1, 1.0]}, "draft-04"),
        ({"enum": [0, False]}, "draft-04"),
        ({"enum": []}, "draft-04"),
        ({"$anchor": "0bad"}, "2020-12"),
        ({"items": [{"type": "string"}]}, "2020-12"),
        ({"items": [{"type": "string"}]}, "draft-07"),
        ({"dependencies": {"a": 1}}, "draft-07"),
        ({"$id": "x y"}, "draft-07"),
        ({"$ref": "#/definitions/a", "minimum": "x"}, "draft-07"),  # siblings of $ref: ignored
        (True, "2020-12"),
        ([], "draft-07"),
        (_chain("items", 60), "2020-12"),
    ]
    for value, label in same:
        slow, fast = _verdicts(value, label)
        assert slow == fast, (value, label, slow, fast)
    not_json = [
        {"required": ("a",)},
        {"type": ("string",)},
        {"minLength": decimal.Decimal(1)},
        {"minLength": _Num.ONE},
        {"type": _Str("string")},
        {"properties": {1: {}}},
        {"minimum": float("nan")},
        {"type": "string", "x": {1, 2}},
        _chain("items", 129),
        _chain("not", 400),
    ]
    for value in not_json:
        for label in RS_LABELS:
            assert not rs_valid(value, label), (value, label)
            slow, _ = _verdicts(value, label)
            if slow is not None:  # jsonschema still answers, as before
                assert (metaschema_problems(value, label) == []) == slow
    assert plain_json(_chain("items", 128)) and not plain_json(_chain("items", 129))
    assert plain_json({"a": [1, 1.5, "x", True, None]}) and not plain_json([(1,)])


def test_valid_schema_never_reaches_jsonschema(monkeypatch: pytest.MonkeyPatch) -> None:
    """A schema the fast path accepts costs no ``iter_errors`` (milliseconds); a refused one
    still gets jsonschema's problems."""
    calls = calls_to(monkeypatch, jsonschema.Draft202012Validator, "iter_errors")
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}}
    assert metaschema_problems(schema, "2020-12") == []
    assert calls == []
    problems = metaschema_problems({"type": "nope"}, "2020-12")
    assert calls and problems and problems[0][0] == "/type"


@pytest.mark.corpus("jsonschemabench")
def test_jsonschemabench_and_mutations() -> None:
    """Corpus schemas against their own draft's metaschema, as they are and mutated (a fixed-
    seed sample of ``JSB_SAMPLE`` unless ``SCHEMAOPS_META_RS_FULL=1``)."""
    full = os.environ.get("SCHEMAOPS_META_RS_FULL") == "1"
    schemas = [(n, v, lab) for n, v, lab in _corpus_schemas() if lab in RS_METASCHEMAS]
    assert len(schemas) > 9000
    rng = random.Random(SEED)
    if not full:
        schemas = rng.sample(schemas, JSB_SAMPLE)
    as_is, mutated = Tally(), Tally()
    for name, value, label in schemas:
        as_is.add(value, label, name)
        for times in (1, 2) if full else (rng.choice((1, 2)),):
            mutated.add(mutate(value, rng, times), label, name)
    print("as is:", end=" ")
    as_is.check()
    print("mutated:", end=" ")
    mutated.check(min_both=JSB_SAMPLE // 10)
    assert as_is.counts["both valid"] >= len(schemas) * 99 // 100, as_is.counts


@pytest.mark.corpus("jsonschemabench")
def test_ref_free_schemas_need_no_ref_registry() -> None:
    """The loader skips building the ref registry for a document without any ``$ref``-family
    or ``$id``/``id`` key: ``check_refs`` finds nothing there, on every corpus schema."""
    from schemaops.registry import refcheck, refs
    from schemaops.registry.documents import ref_free

    n = 0
    for name, value, label in _corpus_schemas():
        if not ref_free(value):
            continue
        entry = refs.Entry("file:///reg/x.json", value, label)
        registry, clashes = refs.build([entry])
        report = refcheck.check_refs(entry, refs.registry_lookup(registry))
        assert (report.problems, report.external, clashes) == ([], False, []), name
        n += 1
    assert n > 3000
