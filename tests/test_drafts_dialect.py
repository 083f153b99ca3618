"""``drafts.dialect_label`` answers what ``jsonschema.validators.validator_for`` picks, without
importing ``jsonschema`` where it is sure (issue 36, start-up): held to ``validator_for`` on
every ``$schema`` JSONSchemaBench's schemas and the JSON-Schema-Test-Suite use, and on the
spellings and values real schemas get wrong."""

from __future__ import annotations

import json
import warnings
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
from corpus_paths import JSTS, jsb_schema_texts
from jsonschema.validators import Draft202012Validator, validator_for

from schemaops.registry.drafts import DRAFTS, dialect_label, validator_class

EDGE_VALUES: list[Any] = [
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft-07/schema#",  # https: not what draft-07 registers
    "http://json-schema.org/draft-04/schema#",
    "http://json-schema.org/draft-04/schema",
    "http://json-schema.org/draft-03/schema#",
    "http://json-schema.org/draft-06/schema#",
    "https://json-schema.org/draft/2019-09/schema",
    "https://json-schema.org/draft/2019-09/schema#",
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2020-12/schema#",
    "HTTP://json-schema.org/draft-07/schema#",  # urlsplit lowers the scheme
    "http://JSON-SCHEMA.org/draft-07/schema#",  # ... not the host
    "http://json-schema.org/draft-07/schema#/",
    " http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema# ",
    "http://json-schema.org/draft-07/schema?",
    "http://json-schema.org/draft-07/schema?#",
    "http://json-schema.org/schema#",
    "http://[::1",  # urlsplit refuses it: validator_for raises, and so does dialect_label
    "",
    "#",
    "draft-07",
    "http://json-schema.org/draft-07/schema\u00e9",
    None,
    7,
    True,
    ["http://json-schema.org/draft-07/schema#"],
    {"$id": "x"},
]


def _picked(schema: Any) -> str:
    """The label of what ``validator_for`` picks (as ``SchemaChecker`` asked it before)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        cls = validator_for(schema, default=Draft202012Validator)
    return next(label for label in DRAFTS if validator_class(label) is cls)


def _same(schema: Any) -> None:
    try:
        want: Any = _picked(schema)
    except Exception as exc:  # noqa: BLE001 (what validator_for raises, dialect_label must too)
        want = type(exc)
    try:
        got: Any = dialect_label(schema)
    except Exception as exc:  # noqa: BLE001
        got = type(exc)
    assert got == want, (schema, got, want)


def test_the_table_is_what_jsonschema_registers() -> None:
    """Each draft's metaschema id, normalised as ``URIDict`` does, names that draft's class
    (``validators.validates``: ``ID_OF(META_SCHEMA)``); a jsonschema that adds or renames a
    draft fails here before the labels go stale."""
    registered = {
        urlsplit(cls.ID_OF(cls.META_SCHEMA)).geturl(): cls
        for cls in (
            jsonschema.Draft3Validator,
            jsonschema.Draft4Validator,
            jsonschema.Draft6Validator,
            jsonschema.Draft7Validator,
            jsonschema.Draft201909Validator,
            jsonschema.Draft202012Validator,
        )
    }
    for uri, cls in registered.items():
        assert dialect_label({"$schema": uri}) == next(
            label for label in DRAFTS if validator_class(label) is cls
        )
    assert validator_for({}) is Draft202012Validator  # the default dialect_label assumes


@pytest.mark.parametrize("value", EDGE_VALUES, ids=repr)
def test_edge_values_pick_what_validator_for_picks(value: Any) -> None:
    _same({"$schema": value, "type": "object"})


@pytest.mark.parametrize("schema", [True, False, {}, {"type": "string"}, {"$schema": None}])
def test_schemas_without_a_usable_schema_key(schema: Any) -> None:
    _same(schema)


@pytest.mark.corpus("jsonschemabench")
def test_every_jsonschemabench_schema() -> None:
    n = 0
    for text in jsb_schema_texts():
        try:
            schema = json.loads(text)
        except ValueError:
            continue
        _same(schema)
        n += 1
    assert n > 9000


@pytest.mark.corpus("json-schema-test-suite")
def test_every_suite_schema() -> None:
    n = 0
    for f in sorted(JSTS.glob("tests/*/**/*.json")):
        for case in json.loads(f.read_text(encoding="utf-8")):
            _same(case["schema"])
            n += 1
    assert n > 500
