"""Numbers the fast path used to judge from a lossy reading (issue 33 items 19 and 20).

- A number beyond double range (``1e999``) was read as ±inf by the strict parser, and
  jsonschema-rs skips ``minimum``/``maximum``/``multipleOf`` for an infinity: ``{"qty": 1e999}``
  passed ``maximum: 10``. It is judged on its exact value.
- Tool-call arguments held as a JSON object (Anthropic ``tool_use.input``, Gemini
  ``functionCall.args``, OpenAI arguments given as an object) were read with the record line
  by orjson, which reads an integer from 2^64 as a float, and written back with
  ``json.dumps`` (``1e400`` became the text ``Infinity``). They are judged as the provider
  sent them: the same verdict as the same value sent as text.

Every verdict here is compared with ``jsonschema`` on the exact value of the text.
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from schemaops.audit import AuditOptions, run_audit
from schemaops.audit.read.extract import RecordError, find_outputs, parse_record
from schemaops.audit.verdict.classify import parse_output
from schemaops.audit.verdict.validate import SchemaChecker
from schemaops.formats import format_checker

BIG = 18446744073709551616  # 2**64: orjson reads it, and everything above, as a float

QTY = {"type": "object", "properties": {"qty": {"minimum": 1, "maximum": 10}}}
BEYOND = [
    (QTY, '{"qty": 1e999}'),
    (QTY, '{"qty": -1e999}'),
    (QTY, '{"qty": 1e400}'),
    (QTY, '{"qty": 5}'),
    ({"properties": {"qty": {"exclusiveMaximum": 10}}}, '{"qty": 1e400}'),
    ({"properties": {"qty": {"minimum": 1}}}, '{"qty": 1e999}'),
    ({"properties": {"qty": {"multipleOf": 2}}}, '{"qty": 1e999}'),
    ({"properties": {"qty": {"multipleOf": 3}}}, '{"qty": -1e999}'),
    ({"properties": {"qty": {"multipleOf": 3}}}, '{"qty": 3e999}'),
    ({"properties": {"qty": {"type": "integer"}}}, '{"qty": 1e999}'),
    ({"type": "array", "items": {"maximum": 0}}, "[0, 1E+999]"),
    ({"maximum": 10}, "1e999"),
]


def _exact(text: str) -> Any:
    """The exact value of a JSON number the stdlib reads as a float: within double range the
    float itself (what the audit compares, as Python's json reads it), beyond it the whole
    number it is (``Decimal``, then ``int``: written independently of the audit's reader)."""
    d = Decimal(text)
    return float(text) if abs(d) <= Decimal(sys.float_info.max) else int(d)


def _reference(schema: Any, text: str) -> bool:
    """``jsonschema``'s answer on the exact value of ``text`` (the audit's reference)."""
    cls = jsonschema.validators.validator_for(schema)
    value = json.loads(text, parse_float=_exact)
    return cls(schema, format_checker=format_checker()).is_valid(value)


@pytest.mark.parametrize(("schema", "text"), BEYOND)
def test_numbers_beyond_double_range_are_judged_as_jsonschema_does(schema: Any, text: str) -> None:
    value, failure = parse_output(text)
    assert failure is None
    checker = SchemaChecker("t", schema)
    assert checker.fast is not None  # the fast path is compiled for these schemas
    got = checker.check(value).category
    assert (got == "ok") is _reference(schema, text), (text, got)


def _registry(tmp_path: Path, schemas: dict[str, Any]) -> Path:
    reg = tmp_path / "registry"
    reg.mkdir()
    for name, schema in schemas.items():
        (reg / f"{name}.json").write_text(json.dumps(schema))
    return reg


def _categories(tmp_path: Path, lines: list[str], schemas: dict[str, Any]) -> dict[str, int]:
    reg = _registry(tmp_path, schemas)
    f = tmp_path / "log.jsonl"
    f.write_text("".join(line + "\n" for line in lines))
    doc = run_audit(str(f), AuditOptions(registry=str(reg))).to_json()
    assert doc["input_errors"] == 0, doc
    return {k: n for k, n in doc["categories"].items() if n}


def test_audit_of_numbers_beyond_double_range(tmp_path: Path) -> None:
    """Through the whole audit (its lean loop first): 1e999 against maximum 10 is a
    violation, as jsonschema says; before the fix it was ``ok``."""
    lines = [
        json.dumps({"text": '{"qty": 1e999}', "schema": "qty"}),
        json.dumps({"text": '{"qty": -1e999}', "schema": "qty"}),
        json.dumps({"text": '{"qty": 5}', "schema": "qty"}),
    ]
    lines.append(json.dumps({"text": "[1e99999]", "schema": "qty"}))  # beyond the size limit
    got = _categories(tmp_path, lines, {"qty": QTY})
    assert got == {
        "ok": 1,
        "schema_violation:maximum": 1,
        "schema_violation:minimum": 1,
        "json_parse_failure": 1,
    }


# Arguments as the provider sent them (raw JSON text of the value), and a schema each.
ARGS = [
    ('{"n": 18446744073709551617}', {"properties": {"n": {"maximum": BIG}}}),
    ('{"n": 18446744073709551616}', {"properties": {"n": {"maximum": BIG}}}),
    ('{"n": 18446744073709551617}', {"properties": {"n": {"multipleOf": 2}}}),
    ('{"n": 36893488147419103233}', {"properties": {"n": {"multipleOf": 2}}}),
    ('{"n": 18446744073709551617}', {"properties": {"n": {"const": BIG}}}),
    ('{"n": -9223372036854775809}', {"properties": {"n": {"minimum": -(2**63)}}}),
    ('{"a": 1e400}', {"properties": {"a": {"type": "number"}}}),
    ('{"a": 1e400}', {"properties": {"a": {"maximum": 10}}}),
    ('{"a": [1, {"b": 18446744073709551617}]}', {"properties": {"a": {"items": {"const": 1}}}}),
]


def _anthropic(args: str) -> str:
    block = '{"type": "tool_use", "id": "t1", "name": "tool", "input": @}'.replace("@", args)
    return '{"id": "m", "type": "message", "role": "assistant", "content": [@]}'.replace("@", block)


def _gemini(args: str) -> str:
    call = '{"functionCall": {"name": "tool", "args": @}}'.replace("@", args)
    body = '{"candidates": [{"content": {"parts": [@]}, "finishReason": "STOP"}]}'
    return body.replace("@", call)


def _openai_chat(args: str) -> str:
    fn = '{"name": "tool", "arguments": @}'.replace("@", args)
    call = '{"id": "c", "type": "function", "function": @}'.replace("@", fn)
    msg = '{"role": "assistant", "content": null, "tool_calls": [@]}'.replace("@", call)
    return '{"id": "x", "choices": [{"index": 0, "message": @}]}'.replace("@", msg)


def _openai_responses(args: str) -> str:
    item = '{"type": "function_call", "name": "tool", "call_id": "c", "arguments": @}'
    body = '{"id": "r", "object": "response", "status": "completed", "output": [@]}'
    return body.replace("@", item.replace("@", args))


BODIES = [_anthropic, _gemini, _openai_chat, _openai_responses]


@pytest.mark.parametrize("body", BODIES, ids=lambda b: b.__name__)
@pytest.mark.parametrize(("args", "schema"), ARGS)
def test_arguments_held_as_objects_are_judged_as_sent(
    tmp_path: Path, body: Any, args: str, schema: Any
) -> None:
    """Each provider's body with its arguments as an object: the verdict equals the one of
    the same arguments sent as text, and jsonschema's on Python's reading of them."""
    want = "ok" if _reference(schema, args) else "violation"
    as_object = _categories(tmp_path, [body(args)], {"tool": schema})
    (got,) = as_object
    assert ("ok" if got == "ok" else "violation") == want, (args, as_object)
    assert got != "json_parse_failure"
    text_line = json.dumps({"text": args, "schema": "tool"})
    (tmp_path / "registry").rename(tmp_path / "registry_0")
    assert _categories(tmp_path, [text_line], {"tool": schema}) == as_object


def test_find_outputs_writes_the_arguments_exactly() -> None:
    """The text handed to the parser is the value exactly: integers from 2^64 keep every
    digit, a number beyond double range its exact value (10^400), a float its own value."""
    raw = _anthropic('{"n": 18446744073709551617, "a": 1e400, "s": "x", "f": 1.5}').encode()
    (out,) = find_outputs(parse_record(raw), None, "schema", raw=raw)
    assert out.text == json.dumps({"n": BIG + 1, "a": 10**400, "s": "x", "f": 1.5})
    with pytest.raises(RecordError):  # without the line, no guess
        find_outputs(parse_record(raw), None, "schema")
    (plain,) = find_outputs(parse_record(_anthropic('{"n": 3}').encode()), None, "schema")
    assert plain.text == '{"n": 3}'
