"""Diagnoses of failed outputs: the production failure modes a plain category mislabels.

Run only for failed outputs (never on the ok path), from the failing text, its outcome and
the record around it (finish reason, the chat message). Each diagnosis is counted and names
what removes it on the server (``FIXES``). Records without these fields (no finish reason,
no message) get only the text-based diagnoses, so plain JSONL audits as before.

- ``whitespace_runaway``: a whitespace run of ``WS_RUN`` or more characters reaching the end
  of the output, or anywhere in an output stopped by ``finish_reason: length``: a grammar
  with free whitespace let the model pad until the token budget ran out.
- ``control_char_in_string``: a raw control character (U+0000..U+001F) inside a JSON
  string; seen from xgrammar's string grammar with ``minLength``/``maxLength``.
- ``truncated_at_max_tokens`` / ``truncated_other``: a ``truncated`` parse failure split by
  whether the server said ``finish_reason: length``.
- ``json_in_reasoning_content``: content empty while ``reasoning_content`` holds JSON.
- ``tool_calls_finish_without_calls``: ``finish_reason: tool_calls`` and no tool call.
- ``prose_with_tool_calls``: prose in ``content`` next to tool calls.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from schemaops.audit.classify import PARSE, Classification

WS_RUN = 64
_WS_RUN_RE = re.compile(rf"\s{{{WS_RUN},}}")

FIXES = {
    "whitespace_runaway": (
        "SGLang: --constrained-json-disable-any-whitespace (xgrammar, llguidance) or "
        "--constrained-json-max-whitespace-cnt N (xgrammar); vLLM: --structured-outputs-config "
        "'{\"disable_any_whitespace\": true}' (xgrammar, guidance)"
    ),
    "control_char_in_string": (
        "xgrammar's string grammar with minLength/maxLength lets raw control characters "
        "through: SGLang --grammar-backend llguidance, vLLM --structured-outputs-config "
        '\'{"backend": "guidance"}\', or check lengths after decoding instead'
    ),
    "truncated_at_max_tokens": (
        "the token budget ran out: raise max_tokens (max_new_tokens on /generate) for this "
        "schema, and remove free whitespace if whitespace_runaway is counted too"
    ),
    "truncated_other": (
        "cut without finish_reason length: a stop string inside the JSON, an abort, or a "
        "client/proxy ending the stream; check stop sequences and timeouts"
    ),
    "json_in_reasoning_content": (
        "a reasoning parser moved the answer to reasoning_content: SGLang without "
        "--reasoning-parser or with separate_reasoning: false per request; vLLM without "
        "--reasoning-parser"
    ),
    "tool_calls_finish_without_calls": (
        "the tool-call parser did not recognise the call: --tool-call-parser must match the "
        "model's format (vLLM also --enable-auto-tool-choice)"
    ),
    "prose_with_tool_calls": (
        'tool_choice "auto" lets prose beside calls: tool_choice "required" or a named '
        "function makes the server constrain the whole answer to calls"
    ),
}


def finish_reason(rec: Any) -> str | None:
    """``finish_reason`` of an OpenAI choice, SGLang ``meta_info`` or a flat record."""
    if not isinstance(rec, dict):
        return None
    fr: Any = None
    choices = rec.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        fr = choices[0].get("finish_reason")
    elif isinstance(rec.get("meta_info"), dict):
        fr = rec["meta_info"].get("finish_reason")
    else:
        fr = rec.get("finish_reason")
    if isinstance(fr, dict):
        fr = fr.get("type")
    return fr if isinstance(fr, str) else None


def _message(rec: Any) -> dict | None:
    choices = rec.get("choices") if isinstance(rec, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        msg = choices[0].get("message")
        return msg if isinstance(msg, dict) else None
    return None


def control_char_in_string(text: str) -> bool:
    """Whether a raw control character sits inside a JSON string of ``text``."""
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            elif ch < " ":
                return True
        elif ch == '"':
            in_string = True
    return False


def _looks_json(text: str) -> bool:
    s = text.strip()
    return s[:1] in ("{", "[") or "```json" in s or bool(re.search(r"[{\[]\s*\"", s))


def diagnose(rec: Any, text: str, outcome: Classification) -> list[str]:
    """The diagnoses of one failed output (often none)."""
    found: list[str] = []
    fr = finish_reason(rec)
    if outcome.subtype == "truncated":
        found.append("truncated_at_max_tokens" if fr == "length" else "truncated_other")
    if len(text) - len(text.rstrip()) >= WS_RUN or (fr == "length" and _WS_RUN_RE.search(text)):
        found.append("whitespace_runaway")
    if outcome.category == PARSE and control_char_in_string(text):
        found.append("control_char_in_string")
    msg = _message(rec)
    if msg is not None:
        content = msg.get("content") if isinstance(msg.get("content"), str) else ""
        calls = msg.get("tool_calls") if isinstance(msg.get("tool_calls"), list) else []
        if text == content:  # the failing output is the message content, not a call's args
            reasoning = msg.get("reasoning_content") or msg.get("reasoning")
            if not content.strip() and isinstance(reasoning, str) and _looks_json(reasoning):
                found.append("json_in_reasoning_content")
            if fr == "tool_calls" and not calls:
                found.append("tool_calls_finish_without_calls")
            if calls and content.strip():
                found.append("prose_with_tool_calls")
    return found


def summary(counts: Counter) -> dict[str, dict[str, Any]]:
    """``{diagnosis: {"count", "fix"}}``, most frequent first."""
    return {k: {"count": n, "fix": FIXES[k]} for k, n in counts.most_common()}
