"""``schemakeys.schema_hints`` read from orjson's writing of a schema, held to the walk of
every node (``walk_hints``) that it replaced on a cold audit's set-up (issue 36).

The bytes may find a key the walk does not (one holding an escaped quote), never fewer: each
hint then takes its careful value. On the corpora, where no key holds a quote, they agree
exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from corpus_paths import JSB, suite_groups

from schemaops.audit.verdict.schemakeys import schema_hints, walk_hints
from schemaops.registry.drafts import dialect_label


def _same(schema: object) -> bool:
    label = dialect_label(schema)
    return schema_hints(schema, label) == walk_hints(schema, label)


def test_each_hint_is_read_from_the_keys_anywhere() -> None:
    cases = {
        "ids": {"properties": {"a": {"$anchor": "x"}}},
        "nested dialect": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "properties": {"a": {"$schema": "http://json-schema.org/draft-07/schema#"}},
        },
        "draft-04 id": {
            "$schema": "http://json-schema.org/draft-04/schema#",
            "properties": {"a": {"id": "http://example.com/a"}},
        },
        "draft-04 id property": {
            "$schema": "http://json-schema.org/draft-04/schema#",
            "properties": {"id": {"type": "string"}},
        },
        "pattern in data": {"enum": [{"pattern": 1}]},
        "patternProperties": {"patternProperties": {"^a": {}}},
        "plain": {"type": "object", "properties": {"a": {"type": "string"}}},
        "bool": True,
    }
    for name, schema in cases.items():
        assert _same(schema), name
    assert schema_hints(cases["ids"], "2020-12")["no_ids"] is False
    assert schema_hints(cases["pattern in data"], "2020-12")["regex"] is True


def test_a_key_holding_an_escaped_quote_gives_the_careful_answer() -> None:
    schema = {"properties": {'a"$id': {}, 'b"pattern': {}}}
    hints = schema_hints(schema, "2020-12")
    assert hints == {"no_ids": False, "treeable": False, "regex": True}
    assert walk_hints(schema, "2020-12") == {"no_ids": True, "treeable": True, "regex": False}


def test_a_schema_orjson_cannot_write_is_walked() -> None:
    deep: dict = {"type": "object"}
    for _ in range(300):
        deep = {"properties": {"a": deep}}
    assert _same(deep)


@pytest.mark.corpus("json-schema-test-suite")
def test_the_suite_gives_the_same_hints() -> None:
    n = 0
    for _draft, _group, schema in suite_groups():
        assert _same(schema), schema
        n += 1
    assert n > 600


@pytest.mark.slow
@pytest.mark.corpus("jsonschemabench")
def test_jsonschemabench_gives_the_same_hints() -> None:
    n = 0
    for f in sorted(Path(JSB).glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            schema = json.loads(json.loads(line)["json_schema"])
            assert _same(schema), schema
            n += 1
    assert n > 9_000
