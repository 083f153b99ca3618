"""line -> record -> text: open inputs and find each model output in a record.

Lines are read as bytes and parsed with ``orjson`` (the stdlib decoder is the fallback, so a
log line with ``NaN`` in its metadata is still a record: only the model's text is held to
RFC 8259). A line that is not a JSON object, or has no text, is an input error with its line
number; it is not a model output.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from schemaops import jsonl
from schemaops.audit.read.args import InexactArgs, args_text, exact_record, exactly
from schemaops.audit.read.output import Output, RecordError
from schemaops.errors import InputError
from schemaops.jsonl import OverlongLine

AUTO_FIELDS = ("text", "generated_text", "output")
# One JSONL line is one record; a longer line is an input error, never held in memory.
MAX_LINE_BYTES = 32 << 20
AUTO_HELP = (
    "text, generated_text, output, choices[].message.content / .tool_calls[].function.arguments,"
    " choices[].text, and the bodies of OpenAI Responses and Batch, Anthropic Messages and"
    " Gemini generateContent"
)


def parse_record(raw: bytes) -> Any:
    """Parse one JSONL line (orjson first, lenient stdlib second); raise RecordError."""
    if type(raw) is OverlongLine:
        raise RecordError(f"line longer than {MAX_LINE_BYTES:,} bytes: skipped, not read")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(raw)
    except UnicodeDecodeError as exc:
        raise RecordError(f"line is not JSON ({jsonl.not_utf8(exc)})") from None
    except (ValueError, RecursionError) as exc:
        s = raw.strip()
        if not s:
            raise RecordError("blank line") from None
        raise RecordError(f"line is not JSON ({exc})") from None


def lookup(rec: Any, dotted: str) -> Any:
    """Follow a dotted path (``a.b.0.c``; integers index lists). Missing -> KeyError."""
    node = rec
    for part in dotted.split("."):
        if isinstance(node, dict):
            node = node[part]
        elif isinstance(node, list) and part.lstrip("-").isdigit():
            node = node[int(part)]
        else:
            raise KeyError(part)
    return node


def _kind(v: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(v), "number"
    )


def record_id(rec: dict) -> Any:
    """The record's id: top-level ``id`` or SGLang's ``meta_info.id``."""
    rid = rec.get("id")
    if rid is None:
        meta = rec.get("meta_info")
        if isinstance(meta, dict):
            rid = meta.get("rid") or meta.get("id")
    return rid


def _chat_outputs(
    choice: dict, schema: str | None, tool_schema: Any, where: str, view: dict | None
) -> list[Output]:
    """A chat message's outputs: its ``content`` (what the application reads, even when
    empty and a reasoning parser moved the answer to ``reasoning``/``reasoning_content``:
    that is a failure, diagnosed as such), then each tool call's arguments."""
    msg = choice["message"]
    if not isinstance(msg, dict):
        raise RecordError(f"{where}.message is not an object")
    outs: list[Output] = []
    content = msg.get("content")
    calls = msg.get("tool_calls") or []
    if not isinstance(calls, list):
        raise RecordError(f"{where}.message.tool_calls is not an array")
    refusal = msg.get("refusal")
    if isinstance(refusal, str) and refusal and not (content or calls):
        # OpenAI structured outputs: the model refused; ``content`` is null (a refusal is not
        # a parse failure of an empty answer: ``Output.refusal``)
        outs.append(Output("", schema, None, view, f"{where}.message.refusal", refusal))
    elif isinstance(content, str) and (content.strip() or not calls):
        outs.append(Output(content, schema, None, view, f"{where}.message.content"))
    elif content is None and not calls:
        outs.append(Output("", schema, None, view, f"{where}.message.content"))
    elif content is not None and not isinstance(content, str):
        raise RecordError(f"{where}.message.content is {_kind(content)}, not a string")
    for i, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or "arguments" not in fn:
            raise RecordError(f"tool_calls[{i}] has no function.arguments")
        args = args_text(fn["arguments"])  # some servers return the parsed object
        source = f"{where}.message.tool_calls[{i}].function.arguments"
        outs.append(Output(args, tool_schema(schema, fn.get("name")), i, view, source))
    return outs


def _choice_outputs(rec: dict, choices: list, schema: str | None, tool_schema: Any) -> list[Output]:
    """Every choice's outputs (vLLM answers a list of prompts, or ``n`` > 1, with one choice
    each): chat ``message``s and completions ``text``s. With several choices each output
    carries a one-choice view of the record, so its diagnoses read its own finish_reason."""
    outs: list[Output] = []
    several = len(choices) > 1
    for c, choice in enumerate(choices):
        where = f"choices[{c}]"
        if not isinstance(choice, dict):
            raise RecordError(f"{where} is a JSON {_kind(choice)}, not an object")
        view = {**rec, "choices": [choice]} if several else None
        if "message" in choice:
            outs.extend(_chat_outputs(choice, schema, tool_schema, where, view))
        elif isinstance(choice.get("text"), str):
            outs.append(Output(choice["text"], schema, None, view, f"{where}.text"))
        else:
            raise RecordError(f"no text found in {where} (looked in message and text)")
    return outs


def find_outputs(
    rec: Any,
    field: str | None,
    schema_field: str,
    tool_schema: Any = lambda schema, name: schema,
    raw: bytes | None = None,
) -> list[Output]:
    """The model outputs in one record (usually one; OpenAI tool calls fan out).

    ``tool_schema(record_schema, function_name)`` picks a tool call's schema name. ``raw``:
    the record's line; where tool-call arguments held as an object hold a number the first
    reading may have changed (``args.InexactArgs``), the line is read again exactly and the
    outputs found in that, so the arguments are judged as the provider sent them. Without
    ``raw`` such a record is a ``RecordError``.
    """
    tools = None
    for_record = getattr(tool_schema, "for_record", None)
    if for_record is not None and rec.__class__ is dict and field is None:
        # the record's tool set and tool choice (verdict/toolcalls.py): its calls are judged
        # against the set, and a required call that is absent is a failure of its own
        try:
            tools = for_record(rec)
        except InputError as exc:
            raise RecordError(str(exc)) from None
        # the record's own picker, else the default one itself (no indirection per call)
        tool_schema = tools if tools is not None else tool_schema.default
    try:
        outs = _find_outputs(rec, field, schema_field, tool_schema)
    except InexactArgs:
        if raw is None:
            raise
        exact = exact_record(raw)
        with exactly():
            outs = _find_outputs(exact, field, schema_field, tool_schema)
    return outs if tools is None else tools.finish(outs)


def _find_outputs(rec: Any, field: str | None, schema_field: str, tool_schema: Any) -> list[Output]:
    """``find_outputs`` on one reading of the record."""
    if field is None and type(rec) is dict and "." not in schema_field:
        # The common case (SGLang /generate: a string ``text``), decided in a few lookups.
        text, schema = rec.get("text"), rec.get(schema_field)
        if type(text) is str and (schema is None or type(schema) is str):
            return [Output(text, schema)]  # source "text"
    if isinstance(rec, list) and rec and all(isinstance(r, dict) for r in rec):
        # SGLang /generate with a batch of prompts answers with a JSON array: one output each.
        return [
            o._replace(index=i, record=o.record or r)
            for i, r in enumerate(rec)
            for o in _find_outputs(r, field, schema_field, tool_schema)
        ]
    if not isinstance(rec, dict):
        raise RecordError(f"record is a JSON {_kind(rec)}, not an object")
    schema = rec.get(schema_field) if "." not in schema_field else _maybe(rec, schema_field)
    if schema is not None and not isinstance(schema, str):
        raise RecordError(f"schema field {schema_field!r} is {_kind(schema)}, not a name")
    if field is not None:
        try:
            text = lookup(rec, field)
        except (KeyError, IndexError):
            raise RecordError(f"field {field!r} not found") from None
        if not isinstance(text, str):
            raise RecordError(f"field {field!r} is {_kind(text)}, not a string")
        return [Output(text, schema, source=field)]
    if "choices" not in rec and "text" not in rec and "generated_text" not in rec:
        from schemaops.audit.read import hosted_bodies  # imported on use: most logs never need it

        kind = hosted_bodies.hosted_kind(rec)
        if kind is not None:
            return hosted_bodies.hosted_outputs(
                kind, rec, schema, schema_field, tool_schema, _find_outputs
            )
    resp = rec.get("response")
    if resp.__class__ is dict and "custom_id" not in rec and "output" not in rec:
        # an OpenAI-style log line holding its request and the answer: the answer is read
        # as a body of its own (sources prefixed ``response.``); the request gave the tools
        if schema is not None and "." not in schema_field and resp.get(schema_field) is None:
            resp = {**resp, schema_field: schema}
        return [
            o._replace(
                record=o.record if o.record is not None else resp, source=f"response.{o.source}"
            )
            for o in _find_outputs(resp, None, schema_field, tool_schema)
        ]
    for key in AUTO_FIELDS:
        text = rec.get(key)
        if text is not None:
            if isinstance(text, str):
                return [Output(text, schema, source=key)]
            raise RecordError(f"field {key!r} is {_kind(text)}, not a string")
    choices = rec.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        choice = choices[0]
        if "message" in choice or isinstance(choice.get("text"), str):
            return _choice_outputs(rec, choices, schema, tool_schema)
    raise RecordError(f"no text found (looked in {AUTO_HELP}; name one with --field)")


def _maybe(rec: Any, dotted: str) -> Any:
    try:
        return lookup(rec, dotted)
    except (KeyError, IndexError):
        return None
