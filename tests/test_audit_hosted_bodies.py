"""``audit`` reads hosted response bodies natively: OpenAI Responses and Batch output lines,
Anthropic Messages, Gemini ``generateContent``, and OpenAI chat refusals.

Body shapes are those of the public API references (no network here, no live calls):
OpenAI Responses object https://platform.openai.com/docs/api-reference/responses/object,
OpenAI Batch output https://platform.openai.com/docs/guides/batch, Anthropic Messages
https://docs.anthropic.com/en/api/messages, Gemini GenerateContentResponse
https://ai.google.dev/api/generate-content#generatecontentresponse, chat completion
``message.refusal`` https://platform.openai.com/docs/api-reference/chat/object."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from schemaops.audit.read.extract import RecordError, find_outputs
from schemaops.cli import app

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()

GOOD = '{"order_id":"ORD-12345678"}'


def responses(output: list, status: str = "completed", reason: str | None = None, **kw: Any):
    return {
        "id": "resp_1",
        "object": "response",
        "status": status,
        "incomplete_details": {"reason": reason} if reason else None,
        "output": output,
        "usage": {"input_tokens": 10, "output_tokens": 12, "total_tokens": 22},
        **kw,
    }


def message(*content: dict) -> dict:
    return {"type": "message", "id": "msg_1", "role": "assistant", "content": list(content)}


def out_text(text: str) -> dict:
    return {"type": "output_text", "text": text, "annotations": []}


def anthropic(content: list, stop: str = "end_turn", **kw: Any) -> dict:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 14},
        **kw,
    }


def gemini(parts: list | None, finish: str = "STOP", **kw: Any) -> dict:
    cand: dict[str, Any] = {"finishReason": finish, "index": 0}
    if parts is not None:
        cand["content"] = {"parts": parts, "role": "model"}
    return {
        "candidates": [cand],
        "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 11},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "r1",
        **kw,
    }


def outs(rec: Any) -> list:
    return find_outputs(rec, None, "schema")


def test_responses_text_function_call_and_reasoning_item():
    rec = responses(
        [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            message(out_text(GOOD)),
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "get_order",
                "arguments": GOOD,
            },
        ],
        schema="answer",
    )
    got = outs(rec)
    assert [(o.text, o.schema, o.source) for o in got] == [
        (GOOD, "answer", "output[1].content[0].text"),
        (GOOD, "answer", "output[2].arguments"),  # tool_schema default: the record's schema
    ]
    assert got[0].record["finish_reason"] == "tool_calls"
    assert got[0].record["usage"]["completion_tokens"] == 12
    assert all(o.own_usage for o in got)  # one answer: its count is the budget's to read


def test_responses_function_call_named_schema():
    rec = responses([{"type": "function_call", "name": "get_order", "arguments": {"a": 1}}])
    (o,) = find_outputs(rec, None, "schema", lambda schema, name: name)
    assert o.schema == "get_order" and json.loads(o.text) == {"a": 1}


def test_responses_refusal_and_incomplete():
    (o,) = outs(responses([message({"type": "refusal", "refusal": "I can't help."})]))
    assert o.refusal == "I can't help." and o.text == ""
    assert o.source == "output[0].content[0].refusal"
    (cut,) = outs(
        responses([message(out_text('{"order_id":"OR'))], "incomplete", "max_output_tokens")
    )
    assert cut.record["finish_reason"] == "length"
    assert cut.record["provider_finish_reason"] == "max_output_tokens"
    (empty,) = outs(
        responses([{"type": "reasoning", "summary": []}], "incomplete", "max_output_tokens")
    )
    assert empty.text == "" and empty.source == "output"


def test_anthropic_text_tool_use_max_tokens_and_refusal():
    (o,) = outs(anthropic([{"type": "text", "text": GOOD}]))
    assert (o.text, o.source) == (GOOD, "content[0].text")
    assert o.record["finish_reason"] == "stop" and o.record["usage"]["completion_tokens"] == 14
    tool = anthropic(
        [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_order", "input": {"x": 1}},
        ],
        "tool_use",
    )
    got = find_outputs(tool, None, "schema", lambda schema, name: name)
    assert [(o.source, o.schema) for o in got] == [
        ("content[0].text", None),
        ("content[1].input", "get_order"),
    ]
    assert json.loads(got[1].text) == {"x": 1}
    (cut,) = outs(anthropic([{"type": "text", "text": '{"order_id": "O'}], "max_tokens"))
    assert cut.record["finish_reason"] == "length"
    assert cut.record["provider_finish_reason"] == "max_tokens"
    (ref,) = outs(anthropic([], "refusal"))
    assert ref.refusal == "refusal" and ref.text == ""


def test_gemini_text_function_call_thought_max_tokens_and_safety():
    (o,) = outs(gemini([{"text": "thinking...", "thought": True}, {"text": GOOD}]))
    assert (o.text, o.source) == (GOOD, "candidates[0].content.parts[1].text")
    assert o.record["usage"]["completion_tokens"] == 11 and o.record["id"] == "r1"
    fc = gemini([{"functionCall": {"name": "get_order", "args": {"order_id": "x"}}}])
    (call,) = find_outputs(fc, None, "schema", lambda schema, name: name)
    assert call.schema == "get_order"
    assert call.source == "candidates[0].content.parts[0].functionCall.args"
    assert call.record["finish_reason"] == "tool_calls"
    (cut,) = outs(gemini([{"text": '{"order_id":'}], "MAX_TOKENS"))
    assert cut.record["finish_reason"] == "length"
    assert cut.record["provider_finish_reason"] == "MAX_TOKENS"
    (blocked,) = outs(gemini(None, "SAFETY"))
    assert blocked.refusal == "SAFETY" and blocked.source == "candidates[0].finishReason"
    (prompt,) = outs({"promptFeedback": {"blockReason": "SAFETY"}})
    assert prompt.refusal == "SAFETY"


def test_gemini_several_candidates_share_usage():
    rec = gemini([{"text": GOOD}])
    rec["candidates"].append({**rec["candidates"][0], "index": 1})
    got = outs(rec)
    assert [o.source for o in got] == [
        "candidates[0].content.parts[0].text",
        "candidates[1].content.parts[0].text",
    ]
    assert all("completion_tokens" not in (o.record.get("usage") or {}) for o in got)
    assert not any(o.own_usage for o in got)


def test_batch_output_line_and_failed_request():
    chat = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": GOOD}, "finish_reason": "stop"}
        ],
    }
    line = {
        "id": "batch_req_1",
        "custom_id": "request-1",
        "response": {"status_code": 200, "request_id": "req_1", "body": chat},
        "error": None,
        "schema": "get_order",
    }
    (o,) = outs(line)
    assert (o.text, o.schema) == (GOOD, "get_order")
    assert o.source == "response.body.choices[0].message.content"
    assert (
        o.record["custom_id"] == "request-1" and o.record["choices"][0]["finish_reason"] == "stop"
    )
    assert o.own_usage
    failed = {
        "id": "b2",
        "custom_id": "r2",
        "response": None,
        "error": {"code": "server_error", "message": "boom"},
    }
    with pytest.raises(RecordError, match="r2.*boom"):
        outs(failed)
    http = {"id": "b3", "custom_id": "r3", "response": {"status_code": 500, "body": {}}}
    with pytest.raises(RecordError, match="HTTP 500"):
        outs(http)


def test_chat_completion_refusal():
    rec = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "refusal": "I'm sorry"},
                "finish_reason": "stop",
            }
        ]
    }
    (o,) = outs(rec)
    assert o.refusal == "I'm sorry" and o.source == "choices[0].message.refusal"


@pytest.mark.parametrize(
    "rec",
    [
        responses(["not an object"]),
        responses([message("x")]),
        anthropic([{"type": "text", "text": 3}]),
        gemini(["x"]),
        # a reason that is not a string was looked up in a table: unhashable, a traceback
        # (found by mutating these bodies at random)
        anthropic([{"type": "text", "text": "{}"}], stop=["max_tokens"]),  # type: ignore[arg-type]
        gemini([{"text": "{}"}], finish={"x": 1}),  # type: ignore[arg-type]
        gemini([{"text": "{}"}], finish=["SAFETY"]),  # type: ignore[arg-type]
    ],
)
def test_malformed_bodies_are_input_errors(rec):
    with pytest.raises(RecordError):
        outs(rec)


def test_audit_of_a_mixed_file_counts_per_source(tmp_path):
    """One file mixing the three providers' bodies: every output is audited against the
    shipped registry's get_order, counted under its own source, the cut ones diagnosed as
    cut by the token budget (Responses max_output_tokens, Anthropic max_tokens, Gemini
    MAX_TOKENS), and a failed batch request is an input error."""
    cut = '{"order_id":"ORD-1'
    lines = [
        responses([message(out_text(GOOD))], schema="get_order"),
        responses([message(out_text(cut))], "incomplete", "max_output_tokens", schema="get_order"),
        anthropic([{"type": "text", "text": GOOD}], schema="get_order"),
        anthropic([{"type": "text", "text": cut}], "max_tokens", schema="get_order"),
        anthropic(
            [{"type": "tool_use", "id": "t", "name": "get_order", "input": {"order_id": "nope"}}],
            "tool_use",
        ),
        gemini([{"text": GOOD}], schema="get_order"),
        gemini([{"text": cut}], "MAX_TOKENS", schema="get_order"),
        gemini([{"functionCall": {"name": "get_order", "args": {"order_id": "ORD-00000000"}}}]),
        {"id": "b", "custom_id": "r", "response": None, "error": {"message": "boom"}},
    ]
    f = tmp_path / "mixed.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in lines))
    res = runner.invoke(app, ["audit", str(f), "--registry", str(REPO / "schemas"), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert (doc["total"], doc["outputs"], doc["ok"], doc["input_errors"]) == (9, 8, 4, 1)
    assert doc["sources"] == {
        "output[0].content[0].text": {"outputs": 2, "ok": 1},
        "content[0].text": {"outputs": 2, "ok": 1},
        "content[0].input": {"outputs": 1, "ok": 0},
        "candidates[0].content.parts[0].text": {"outputs": 2, "ok": 1},
        "candidates[0].content.parts[0].functionCall.args": {"outputs": 1, "ok": 1},
    }
    assert doc["parse_failures"] == {"truncated": 3}
    assert doc["categories"]["schema_violation:pattern"] == 1
    assert doc["diagnoses"]["truncated_at_max_tokens"]["count"] == 3


def test_refusals_are_their_own_category_and_hosted_counts_make_a_budget(tmp_path):
    """A provider's refusal (OpenAI Responses ``refusal``, Anthropic ``stop_reason: refusal``,
    Gemini ``SAFETY``) is counted as ``refusal``: a failed step, not a parse failure of an
    empty text, and never the verdict memoised for an empty answer. The cut answers' own
    token counts (each body's usage) give the schema a recommended budget."""
    cut = '{"order_id":"ORD-1'
    lines = [
        responses([message({"type": "refusal", "refusal": "I can't help."})], schema="get_order"),
        anthropic([], "refusal", schema="get_order"),
        gemini(None, "SAFETY", schema="get_order"),
        responses([message(out_text(""))], schema="get_order"),  # a real empty answer
        responses([message(out_text(GOOD))], schema="get_order"),
        anthropic([{"type": "text", "text": cut}], "max_tokens", schema="get_order"),
    ]
    f = tmp_path / "refusals.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in lines))
    res = runner.invoke(app, ["audit", str(f), "--registry", str(REPO / "schemas"), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert (doc["outputs"], doc["ok"]) == (6, 1)
    assert doc["categories"]["refusal"] == 3
    assert doc["parse_failures"] == {"empty": 1, "truncated": 1}
    (budget,) = doc["diagnoses"]["truncated_at_max_tokens"]["budgets"]
    assert (budget["schema"], budget["cut"], budget["max_cut"]) == ("get_order", 1, 14)
