"""SGLang request-log lines of tool calls: the tools the request offered, read back from the
grammar SGLang compiled for them, and the answer as the calls it holds.

Why: SGLang's ``request.finished`` event logs the generate request, not the OpenAI one (the
``request.received.openai`` event has the tools but no request id to join on). Under
``tool_choice`` ``required`` or a named function, without a tool parser that reads required
calls natively, that request's ``sampling_params.json_schema`` is the schema SGLang derives
from the tools (SGLang 0.5.23 ``python/sglang/srt/function_call/utils.py``,
``get_json_schema_constraint`` and ``_get_tool_schema``, read in the wheel the dev server
installs): ``{"type": "array", "minItems": 1, "items": T}`` where T is, for a named function,
that tool's ``{"properties": {"name": {"type": "string", "enum": [NAME]}, "parameters": P},
"required": ["name", "parameters"]}``, and for ``required`` ``{"type": "object", "anyOf":
[one such per tool]}`` with the tools' ``$defs`` hoisted to the root. The model's text is the
JSON array of ``{"name", "parameters"}`` calls the OpenAI layer turns into ``tool_calls``.

So such a line becomes a record holding its request (``tools`` and ``tool_choice``, read back
from the schema) and its response (the calls, or the text as content when it is no such
array: the client then got no call), and is judged against the offered tool set like any
record that holds its request (``verdict/toolcalls.py``).
"""

from __future__ import annotations

import json
from typing import Any


def _tool(item: Any) -> tuple[str, Any] | None:
    """(name, parameters) of one ``_get_tool_schema`` entry, or None."""
    if not isinstance(item, dict) or set(item) - {"properties", "required", "type"}:
        return None
    props = item.get("properties")
    if not isinstance(props, dict) or set(props) != {"name", "parameters"}:
        return None
    enum = props["name"].get("enum") if isinstance(props["name"], dict) else None
    if not (isinstance(enum, list) and len(enum) == 1 and isinstance(enum[0], str)):
        return None
    return enum[0], props["parameters"]


def tools_of(schema: Any) -> tuple[list[tuple[str, Any]], Any] | None:
    """(tools, request tool_choice) when ``schema`` is SGLang's tool-call constraint."""
    if not isinstance(schema, dict) or schema.get("type") != "array":
        return None
    if schema.get("minItems") != 1 or not isinstance(schema.get("items"), dict):
        return None
    items = schema["items"]
    one = _tool(items)
    if one is not None:
        name = one[0]
        return [one], {"type": "function", "function": {"name": name}}
    branches = items.get("anyOf")
    if items.get("type") != "object" or not isinstance(branches, list) or not branches:
        return None
    tools = [_tool(b) for b in branches]
    if any(t is None for t in tools):
        return None
    defs = schema.get("$defs")
    out: list[tuple[str, Any]] = []
    for name, params in tools:  # type: ignore[misc]
        if (
            isinstance(defs, dict)
            and isinstance(params, dict)
            and "$defs" not in params
            and '"#/$defs/' in json.dumps(params)
        ):  # a ref to the root's $defs, where SGLang hoisted them: the tool's own again
            params = {**params, "$defs": defs}
        out.append((name, params))
    return out, "required"


def record(tools: list[tuple[str, Any]], choice: Any, text: Any, meta: Any, rid: Any) -> dict:
    """The record of one such line (see the module docstring)."""
    calls = _calls(text)
    message: dict[str, Any] = {"role": "assistant", "content": None if calls else text}
    if calls:
        message["tool_calls"] = calls
    fr = meta.get("finish_reason") if isinstance(meta, dict) else None
    if isinstance(fr, dict):
        fr = fr.get("type")
    rec: dict[str, Any] = {
        "request": {
            "tools": [
                {"type": "function", "function": {"name": n, "parameters": p}} for n, p in tools
            ],
            "tool_choice": choice,
        },
        "response": {
            "choices": [{"index": 0, "message": message, "finish_reason": fr}],
            "meta_info": meta,
        },
    }
    if rid is not None:
        rec["id"] = rid
    return rec


def _calls(text: Any) -> list[dict] | None:
    """The text's ``[{"name", "parameters"}]`` as OpenAI tool calls (the arguments as JSON
    text, as SGLang's OpenAI layer sends them), or None when it is no such array."""
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list) or not value:
        return None
    calls = []
    for i, call in enumerate(value):
        if not isinstance(call, dict) or "name" not in call:
            return None
        args = call.get("parameters", call.get("arguments"))
        calls.append(
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(args)},
            }
        )
    return calls
