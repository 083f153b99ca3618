"""Hosted-API response bodies in an audit file: OpenAI Responses, OpenAI Batch output lines,
Anthropic Messages and Gemini ``generateContent``, read natively (``extract.find_outputs``
calls ``hosted_outputs`` when ``hosted_kind`` recognises a record).

Each body's outputs are what the application reads, with the field they came from as the
source (``output[0].content[0].text``, ``content[1].input``,
``candidates[0].content.parts[0].text``, ``response.body.choices[0].message.content``), so
a file mixing providers is counted per source. A tool call's arguments are one output each,
with the schema named like the function (``tool_schema``), as for OpenAI chat tool calls.

Each output carries a view of its record in the shape the diagnoses and token budgets already
read: a flat ``finish_reason`` in the OpenAI vocabulary (``length`` for a cut answer:
Anthropic ``max_tokens``, Gemini ``MAX_TOKENS``, Responses ``incomplete`` /
``max_output_tokens``), the provider's own reason as ``provider_finish_reason``, and
``usage.completion_tokens`` from the provider's output-token count. A refusal (Responses
``refusal`` content, Anthropic ``stop_reason: refusal``, Gemini blocked by ``SAFETY`` and the
other block reasons, or a blocked prompt) is an output with empty text and ``refusal`` set to
the provider's words or reason: its own category once the pipeline counts it (until then an
empty output: a failure, never a success).

Body shapes from the public API references (no live calls here):
OpenAI Responses https://platform.openai.com/docs/api-reference/responses/object, OpenAI
Batch https://platform.openai.com/docs/guides/batch, Anthropic Messages
https://docs.anthropic.com/en/api/messages, Gemini
https://ai.google.dev/api/generate-content#generatecontentresponse.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from schemaops.audit.read.args import args_text
from schemaops.audit.read.output import Output, RecordError

#: Anthropic ``stop_reason`` -> the OpenAI ``finish_reason`` the diagnoses read.
ANTHROPIC_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "pause_turn": "stop",
    "refusal": "content_filter",
}
#: Gemini ``finishReason`` values that block the answer (FinishReason in the reference).
GEMINI_BLOCKED = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)


def hosted_kind(rec: dict[str, Any]) -> str | None:
    """Which hosted body ``rec`` is, or None. Each shape here had no output before (an
    ``output`` array, a ``content`` array, ``candidates``, a batch ``response``), so reading
    it changes no record that was audited before."""
    if isinstance(rec.get("output"), list):
        return "openai_responses"
    if "custom_id" in rec and ("response" in rec or "error" in rec):
        return "openai_batch"
    if rec.get("type") == "message" and isinstance(rec.get("content"), list):
        return "anthropic_messages"
    if isinstance(rec.get("candidates"), list) or (
        "candidates" not in rec and isinstance(rec.get("promptFeedback"), dict)
    ):
        return "gemini"
    return None


def _view(
    rec: dict[str, Any], finish: str | None, provider: Any, tokens: Any, shared: bool
) -> dict[str, Any]:
    """The record as the diagnoses and budgets read it (see the module docstring)."""
    view = dict(rec)
    if finish is not None:
        view["finish_reason"] = finish
    if provider is not None:
        view["provider_finish_reason"] = provider
    if isinstance(tokens, int) and not isinstance(tokens, bool) and not shared:
        usage = rec.get("usage")
        view["usage"] = {**(usage if isinstance(usage, dict) else {}), "completion_tokens": tokens}
    if view.get("id") is None and rec.get("responseId") is not None:
        view["id"] = rec["responseId"]
    return view


def _joined(texts: list[tuple[str, str]], one: str) -> tuple[str, str]:
    """(the texts as one output, its source): the path of the one text, or ``one`` when
    several pieces make the answer (what the SDKs' ``output_text`` / ``.text`` read)."""
    if len(texts) == 1:
        return texts[0][1], texts[0][0]
    return "".join(t for _, t in texts), one


def _responses(rec: dict[str, Any], schema: str | None, tool_schema: Any) -> list[Output]:
    status = rec.get("status")
    details = rec.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    finish = "stop"
    if status == "incomplete":
        finish = "length" if reason == "max_output_tokens" else "content_filter"
    items = rec["output"]
    calls = [
        i
        for i, it in enumerate(items)
        if isinstance(it, dict) and it.get("type") == "function_call"
    ]
    if calls and finish == "stop":
        finish = "tool_calls"
    usage = rec.get("usage")
    tokens = usage.get("output_tokens") if isinstance(usage, dict) else None
    view = _view(rec, finish, reason or status, tokens, False)
    outs: list[Output] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise RecordError(f"output[{i}] is not an object")
        kind = item.get("type")
        if kind == "message":
            content = item.get("content")
            if not isinstance(content, list):
                raise RecordError(f"output[{i}].content is not an array")
            texts: list[tuple[str, str]] = []
            for j, part in enumerate(content):
                if not isinstance(part, dict):
                    raise RecordError(f"output[{i}].content[{j}] is not an object")
                if part.get("type") == "refusal":
                    words = part.get("refusal")
                    src = f"output[{i}].content[{j}].refusal"
                    outs.append(Output("", schema, None, view, src, str(words or "refusal")))
                elif part.get("type") == "output_text":
                    text = part.get("text")
                    if not isinstance(text, str):
                        raise RecordError(f"output[{i}].content[{j}].text is not a string")
                    texts.append((f"output[{i}].content[{j}].text", text))
            if texts:
                text, src = _joined(texts, f"output[{i}].content[*].text")
                if text.strip() or not calls:
                    outs.append(Output(text, schema, None, view, src))
        elif kind == "function_call":
            if "arguments" not in item:
                raise RecordError(f"output[{i}] function_call has no arguments")
            name = item.get("name")
            src = f"output[{i}].arguments"
            outs.append(
                Output(args_text(item["arguments"]), tool_schema(schema, name), i, view, src)
            )
    if not outs:  # nothing the application could read (cut during reasoning, say)
        outs.append(Output("", schema, None, view, "output"))
    return outs


def _anthropic(rec: dict[str, Any], schema: str | None, tool_schema: Any) -> list[Output]:
    stop = rec.get("stop_reason")
    if stop is not None and not isinstance(stop, str):
        raise RecordError("stop_reason is not a string")
    usage = rec.get("usage")
    tokens = usage.get("output_tokens") if isinstance(usage, dict) else None
    view = _view(rec, ANTHROPIC_FINISH.get(stop, stop), stop, tokens, False)
    texts: list[tuple[str, str]] = []
    calls: list[tuple[int, dict[str, Any]]] = []
    for i, block in enumerate(rec["content"]):
        if not isinstance(block, dict):
            raise RecordError(f"content[{i}] is not an object")
        if block.get("type") == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise RecordError(f"content[{i}].text is not a string")
            texts.append((f"content[{i}].text", text))
        elif block.get("type") == "tool_use":
            if "input" not in block:
                raise RecordError(f"content[{i}] tool_use has no input")
            calls.append((i, block))
    if stop == "refusal":
        return [Output("", schema, None, view, "stop_reason", "refusal")]
    outs: list[Output] = []
    text, src = _joined(texts, "content[*].text") if texts else ("", "content")
    if text.strip() or not calls:
        outs.append(Output(text, schema, None, view, src))
    for i, block in calls:
        name = block.get("name")
        outs.append(
            Output(
                args_text(block["input"]),
                tool_schema(schema, name),
                i,
                view,
                f"content[{i}].input",
            )
        )
    return outs


def _gemini(rec: dict[str, Any], schema: str | None, tool_schema: Any) -> list[Output]:
    cands = rec.get("candidates") or []
    usage = rec.get("usageMetadata")
    tokens = usage.get("candidatesTokenCount") if isinstance(usage, dict) else None
    if not cands:
        fb = rec.get("promptFeedback")
        reason = fb.get("blockReason") if isinstance(fb, dict) else None
        view = _view(rec, "content_filter", reason, None, True)
        return [
            Output("", schema, None, view, "promptFeedback.blockReason", str(reason or "blocked"))
        ]
    outs: list[Output] = []
    shared = len(cands) > 1
    for c, cand in enumerate(cands):
        where = f"candidates[{c}]"
        if not isinstance(cand, dict):
            raise RecordError(f"{where} is not an object")
        fr = cand.get("finishReason")
        if fr is not None and not isinstance(fr, str):
            raise RecordError(f"{where}.finishReason is not a string")
        finish = {"STOP": "stop", "MAX_TOKENS": "length"}.get(fr, "content_filter" if fr else None)
        content = cand.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        parts = parts if isinstance(parts, list) else []
        texts: list[tuple[str, str]] = []
        calls: list[tuple[int, dict[str, Any]]] = []
        for p, part in enumerate(parts):
            if not isinstance(part, dict):
                raise RecordError(f"{where}.content.parts[{p}] is not an object")
            if part.get("thought") is True:
                continue  # a thought summary, not the answer
            if isinstance(part.get("text"), str):
                texts.append((f"{where}.content.parts[{p}].text", part["text"]))
            elif isinstance(part.get("functionCall"), dict):
                calls.append((p, part["functionCall"]))
        if calls and finish == "stop":
            finish = "tool_calls"
        view = _view(rec, finish, fr, tokens, shared)
        if fr in GEMINI_BLOCKED and not texts and not calls:
            outs.append(Output("", schema, None, view, f"{where}.finishReason", str(fr)))
            continue
        text, src = (
            _joined(texts, f"{where}.content.parts[*].text") if texts else ("", f"{where}.content")
        )
        if text.strip() or not calls:
            outs.append(Output(text, schema, None, view, src))
        for p, call in calls:
            args = call.get("args", {})  # a call without arguments has no args field
            src = f"{where}.content.parts[{p}].functionCall.args"
            outs.append(
                Output(args_text(args), tool_schema(schema, call.get("name")), p, view, src)
            )
    return outs


def _batch(
    rec: dict[str, Any],
    schema: str | None,
    schema_field: str,
    tool_schema: Any,
    find: Callable[..., list[Output]],
) -> list[Output]:
    """One OpenAI Batch output line: its ``response.body`` read as a body of its own (chat
    completions or a Responses object), sources prefixed with ``response.body.``; a failed
    request is an input error, not a model output."""
    cid = rec.get("custom_id")
    resp = rec.get("response")
    if not isinstance(resp, dict):
        err = rec.get("error")
        msg = err.get("message") if isinstance(err, dict) else err
        raise RecordError(f"batch request {cid!r} failed: {str(msg)[:200]}")
    status = resp.get("status_code")
    body = resp.get("body")
    if status != 200 or not isinstance(body, dict):
        raise RecordError(f"batch request {cid!r}: HTTP {status}, no answer body")
    if schema is not None and "." not in schema_field and body.get(schema_field) is None:
        body = {**body, schema_field: schema}
    outs = find(body, None, schema_field, tool_schema)
    return [
        o._replace(
            record={**(o.record if o.record is not None else body), "custom_id": cid},
            source=f"response.body.{o.source}",
            # a one-choice chat body (no view of its own) or a hosted body's own answer
            own_usage=o.record is None or o.own_usage,
        )
        for o in outs
    ]


def hosted_outputs(
    kind: str,
    rec: dict[str, Any],
    schema: str | None,
    schema_field: str,
    tool_schema: Any,
    find: Callable[..., list[Output]],
) -> list[Output]:
    """The outputs of a hosted body of ``kind`` (``hosted_kind``)."""
    if kind == "openai_batch":
        return _batch(rec, schema, schema_field, tool_schema, find)
    read = {"openai_responses": _responses, "anthropic_messages": _anthropic, "gemini": _gemini}
    outs = read[kind](rec, schema, tool_schema)
    # the view carries usage.completion_tokens only when the count is this answer's alone
    return [o._replace(own_usage=_counted(o.record)) for o in outs]


def _counted(view: dict[str, Any] | None) -> bool:
    usage = view.get("usage") if isinstance(view, dict) else None
    return isinstance(usage, dict) and "completion_tokens" in usage
