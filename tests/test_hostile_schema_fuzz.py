"""A seeded type-confusion fuzz: real JSONSchemaBench schemas with keyword values of the wrong
type put in at random, through every offline path a schema takes. Each gives a clean answer
(a registry problem, an input error, a finding, "not lowerable"), never an exception.

It found: a non-string draft-04 ``id`` (a traceback of every command loading the file), a
draft-04 ``$ref`` that is not a string, an invalid schema at a ``$ref`` target outside every
keyword (jsonschema fails there with a traceback), and a subschema validator in ``lower
--target`` that could not be built. The paths are the real ones: the registry loader, the
audit's line loop (``run_audit``), the hosted-provider tables, ``lower`` for a backend (the
probed capabilities of ``test_lower_passes``) and for each hosted target.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from corpus_paths import jsb_schema_texts
from json_walk import walk
from test_lower_passes import XGRAMMAR

from schemaops.audit import AuditOptions, run_audit
from schemaops.audit.report.result import to_json
from schemaops.errors import SchemaopsError
from schemaops.lower import check_residual, lower_for_target, lower_schema
from schemaops.providers import judge_schema
from schemaops.registry import inspect_registry

KEYS = [
    "$ref", "$id", "id", "$schema", "$defs", "definitions", "properties", "items",
    "prefixItems", "additionalProperties", "required", "enum", "const", "type", "pattern",
    "patternProperties", "format", "minimum", "exclusiveMinimum", "multipleOf", "minLength",
    "maxItems", "uniqueItems", "anyOf", "oneOf", "allOf", "not", "if", "then",
    "dependencies", "dependentRequired", "contains", "propertyNames",
    "unevaluatedProperties", "$anchor", "$dynamicRef", "x-schemaops-name",
    "x-schemaops-version",
]  # fmt: skip
VALUES: list[Any] = [
    1, -1, 1.5, 2**70, "x", "", "#", "#/nope", "#/$defs", "http://example.com/s.json",
    "other.json", [], {}, None, True, False, [1], ["a", "a"], {"a": 1}, {"type": 5},
    [{}], "(a+)+$", {"$ref": "#"}, [None], {"": {}}, {"minItems": ["a"]},
]  # fmt: skip
OUTPUTS = ["{}", "[]", '"x"', "1", "null", '{"a": 1}', '[1, "a"]', '{"id": 5}', "{", "```"]
TARGETS = ("openai", "anthropic", "gemini")


def _mutant(schema: dict, rng: random.Random) -> dict:
    out = copy.deepcopy(schema)
    nodes = [node for node in walk(out) if isinstance(node, dict)]
    for _ in range(rng.randint(1, 3)):
        rng.choice(nodes)[rng.choice(KEYS)] = copy.deepcopy(rng.choice(VALUES))
    return out


def _sample(n: int, rng: random.Random) -> list[dict]:
    texts = [t for t in jsb_schema_texts() if len(t) < 20_000]
    out: list[dict] = []
    for text in rng.sample(texts, n * 2):
        data = json.loads(text)
        if isinstance(data, dict):
            out.append(data)
    return out[:n]


@pytest.mark.corpus("jsonschemabench")
@pytest.mark.parametrize("seed", range(8))
def test_type_confused_schemas_get_clean_answers_on_every_path(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    registry = tmp_path / "reg"
    registry.mkdir()
    mutants = {f"m{i:03d}": _mutant(s, rng) for i, s in enumerate(_sample(40, rng))}
    for name, schema in mutants.items():
        (registry / f"{name}.json").write_text(json.dumps(schema), encoding="utf-8")
    _, problems = inspect_registry(registry)  # never raises, by contract
    refused = {Path(str(p["file"])).stem for p in problems}
    clean = [n for n in mutants if n not in refused]
    assert refused and clean  # the fuzz reaches both sides of the registry's check

    records = tmp_path / "records.jsonl"
    with records.open("w", encoding="utf-8") as fh:
        for name in mutants:
            for text in OUTPUTS:
                fh.write(json.dumps({"schema": name, "text": text}) + "\n")
    result = run_audit(str(records), AuditOptions(registry=str(registry), jobs=1, cache=False))
    doc = to_json(result)
    assert doc["lines"] == len(mutants) * len(OUTPUTS)
    assert doc["outputs"] + doc["input_errors"] == doc["lines"]  # every line counted once
    assert doc["input_errors"] >= len(refused) * len(OUTPUTS)

    for name in clean:
        schema = mutants[name]
        for target in TARGETS:
            judge_schema(name, schema, target)
            lower_for_target(schema, target, name)
        lowered = lower_schema(schema, XGRAMMAR, "xgrammar")
        for text in OUTPUTS[:8]:
            try:
                check_residual(schema, lowered.residual, json.loads(text))
            except SchemaopsError:
                pass
