"""The OpenAI-compatible path of the real server: response_format json_schema, tools + tool_choice.

What SGLang 0.5.23 does (read from ``sglang/srt/entrypoints/openai/serving_chat.py`` and
``sglang/srt/function_call/utils.py``), with no ``--tool-call-parser`` as on the dev server:

- ``response_format: {"type": "json_schema", "json_schema": {"name", "schema"}}``: the grammar
  key is ``json.dumps(schema)`` and the content is the constrained JSON.
- ``tool_choice: {"type": "function", "function": {"name": N}}`` or ``"required"``: the output
  is constrained by ``get_json_schema_constraint``: a JSON array (``minItems: 1``, and
  ``maxItems: 1`` when ``parallel_tool_calls`` is false) of ``{"name": <enum of tool names>,
  "parameters": <the tool's parameters schema>}`` (``anyOf`` over the tools for "required").
  Without a parser (``_tool_call_parsing_active`` is false) that array is returned as
  ``message.content`` with ``finish_reason: "stop"``, not as ``tool_calls``.
- With ``--tool-call-parser qwen25`` the constraint is instead the parser's structural tag
  (``<tool_call>{"name": ..., "arguments": ...}</tool_call>``), parsed into ``tool_calls``.
  Observed on this server: for tools without ``"strict": true`` the tag constrains
  ``arguments`` to ANY JSON (``function_call_parser.py``: ``schema = parameters if is_strict
  else {}``; ``SGLANG_TOOL_STRICT_LEVEL`` raises it); with ``strict`` the arguments follow the
  schema but the tag's JSON has free whitespace (``--constrained-json-disable-any-whitespace``
  does not reach it), so a random model never finishes. Not tested here for that reason.
- ``tool_choice: "auto"`` (or "none"): no grammar at all without a tool-call parser.
- A named tool missing from ``tools``, or "required" with no tools: HTTP 400.
"""

from __future__ import annotations

import json

import httpx
import jsonschema
import pytest

pytestmark = pytest.mark.integration

TICKET = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["open", "closed", "pending"]},
        "priority": {"type": "integer", "minimum": 1, "maximum": 5},
        "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
    },
    "required": ["status", "priority", "code"],
    "additionalProperties": False,
}
LOOKUP = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^ORD-[0-9]{8}$"},
        "include_items": {"type": "boolean"},
    },
    "required": ["order_id", "include_items"],
    "additionalProperties": False,
}
TOOLS = [
    {"type": "function", "function": {"name": "set_ticket", "parameters": TICKET}},
    {"type": "function", "function": {"name": "get_order", "parameters": LOOKUP}},
]
MESSAGES = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "My order ORD-12345678 never arrived."},
]


def chat(client: httpx.Client, **body: object) -> httpx.Response:
    payload = {"model": "default", "messages": MESSAGES, "max_tokens": 128, "temperature": 0}
    return client.post("/v1/chat/completions", json={**payload, **body})


def test_response_format_json_schema(sglang_client: httpx.Client) -> None:
    resp = chat(
        sglang_client,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "ticket", "schema": TICKET},
        },
    )
    assert resp.status_code == 200, resp.text
    choice = resp.json()["choices"][0]
    assert choice["finish_reason"] == "stop", choice
    jsonschema.validate(json.loads(choice["message"]["content"]), TICKET)


def test_response_format_with_a_bad_schema_is_400(sglang_client: httpx.Client) -> None:
    bad = {"type": "object", "properties": {"a": {"type": "nope"}}}
    resp = chat(
        sglang_client,
        response_format={"type": "json_schema", "json_schema": {"name": "bad", "schema": bad}},
    )
    assert resp.status_code == 400, resp.text


def _content_calls(resp: httpx.Response) -> list[dict]:
    """Without a tool-call parser the constrained array stays in ``content`` (finish "stop")."""
    assert resp.status_code == 200, resp.text
    choice = resp.json()["choices"][0]
    assert choice["finish_reason"] == "stop", choice
    assert not choice["message"].get("tool_calls")
    return [
        {"name": c["name"], "arguments": json.dumps(c["parameters"])}
        for c in json.loads(choice["message"]["content"])
    ]


def _check(calls: list[dict], allowed: set[str]) -> None:
    assert len(calls) == 1, calls  # parallel_tool_calls=False: maxItems 1
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    assert calls[0]["name"] in allowed
    jsonschema.validate(json.loads(calls[0]["arguments"]), by_name[calls[0]["name"]])


NAMED = {"type": "function", "function": {"name": "get_order"}}


def test_named_tool_choice_constrains_the_arguments(sglang_client: httpx.Client) -> None:
    resp = chat(sglang_client, tools=TOOLS, tool_choice=NAMED, parallel_tool_calls=False)
    _check(_content_calls(resp), {"get_order"})


def test_required_tool_choice_picks_a_declared_tool(sglang_client: httpx.Client) -> None:
    resp = chat(sglang_client, tools=TOOLS, tool_choice="required", parallel_tool_calls=False)
    _check(_content_calls(resp), {"get_order", "set_ticket"})


def test_auto_tool_choice_is_not_constrained(sglang_client: httpx.Client) -> None:
    """Without --tool-call-parser, "auto" adds no grammar: the random model writes free text."""
    resp = chat(sglang_client, tools=TOOLS, tool_choice="auto", max_tokens=16)
    assert resp.status_code == 200, resp.text
    message = resp.json()["choices"][0]["message"]
    assert not message.get("tool_calls")


def test_unknown_named_tool_is_400(sglang_client: httpx.Client) -> None:
    resp = chat(
        sglang_client, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}}
    )
    assert resp.status_code == 400
    assert "not found" in resp.text


def test_required_without_tools_is_400(sglang_client: httpx.Client) -> None:
    resp = chat(sglang_client, tool_choice="required")
    assert resp.status_code == 400
