"""What a server's answer must look like before warm believes it.

A 2xx status alone proves nothing: a proxy's HTML page, a health-check stub or a server that
answers every path with ``{}`` would all make a schema look warmed while no grammar was
compiled. A warm request counts only when its body is the answer of a request that went
through the whole path: for ``/generate`` an object with the generated ``text`` and its
``meta_info``; for ``/v1/chat/completions`` an object with at least one ``choice``. An
answer saying the request was aborted does not count either.

Server text also passes through ``clean`` before it reaches a report: a lone surrogate (a
JSON ``"\\ud800"`` escape) cannot be written as UTF-8, and control characters would reach
the terminal raw.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: SGLang's native generation endpoint and the OpenAI-compatible chat endpoint (both engines)
NATIVE_PATH = "/generate"
OPENAI_PATH = "/v1/chat/completions"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str, limit: int = 2000) -> str:
    """``text`` safe to print and to encode: lone surrogates and control characters become
    visible escapes (``\\ud800``, ``\\x1b``), and it is cut to ``limit`` characters."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def glimpse(body: Any, limit: int = 120) -> str:
    """A short, printable rendering of an answer for an error message."""
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, default=str)
    return clean(text.strip(), limit) or "(empty body)"


def _aborted(reason: Any) -> str | None:
    if isinstance(reason, dict) and reason.get("type") == "abort":
        return clean(str(reason.get("message") or "aborted"), 300)
    if reason == "abort":
        return "aborted"
    return None


def why_not_answer(path: str, body: Any) -> str | None:
    """Why ``body`` is not the answer of a completed request to ``path`` (``None``: it is).

    Paths other than the two warm paths (readiness, ``/server_info``) are not checked here.
    """
    if path == NATIVE_PATH:
        if not (
            isinstance(body, dict)
            and isinstance(body.get("text"), str)
            and isinstance(body.get("meta_info"), dict)
        ):
            return f"HTTP 200 but not a /generate answer (no text and meta_info): {glimpse(body)}"
        why = _aborted(body["meta_info"].get("finish_reason"))
        return f"HTTP 200 but the server aborted the request: {why}" if why else None
    if path == OPENAI_PATH:
        choices = body.get("choices") if isinstance(body, dict) else None
        if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
            return f"HTTP 200 but not a chat completion (no choices): {glimpse(body)}"
        why = _aborted(choices[0].get("finish_reason"))
        return f"HTTP 200 but the server aborted the request: {why}" if why else None
    return None


# HTTP 400 is warm's "invalid" (the schema failed to compile, and SGLang caches that), but
# vLLM also answers 400 when the *server* cannot take the request at all, whatever the schema.
# Those answers are told apart by vLLM's own messages (vLLM 0.32: renderers/online_renderer.py,
# v1/engine/input_processor.py) and reported as ``failed`` with what to change on the server.
_SERVER_CONFIG = (
    (
        re.compile(r"requires --enable-auto-tool-choice"),
        "a server configuration problem, not the schema: vLLM serves tool_choice auto only "
        "when started with --enable-auto-tool-choice --tool-call-parser <the model's parser>; "
        "or leave this tool choice out (warm --tool-choice) if the application does not send it",
    ),
    (
        # tool_choice required or a named function. The message names only the parser, but
        # vLLM 0.32 loads no tool parser without --enable-auto-tool-choice either
        # (parser/parser_manager.py get_tool_parser: `if not enable_auto_tools or
        # tool_parser_name is None: return None`); seen on the dev server: a server started
        # with --tool-call-parser hermes alone answers this 400
        re.compile(r"requires --tool-call-parser"),
        "a server configuration problem, not the schema: vLLM serves tool_choice required or "
        "a named function only when started with --enable-auto-tool-choice --tool-call-parser "
        "<the model's parser> (vLLM 0.32 loads no tool parser without both); or leave this "
        "tool choice out (warm --tool-choice none, or without --tools) if the application does "
        "not send it",
    ),
    (
        re.compile(r"data_parallel_rank \d+ is out of range \[0, (\d+)\)"),
        "a server configuration problem, not the schema: the server has {0} DP rank(s); "
        "pass --dp {0}, or leave --dp out so warm reads the ranks from /metrics",
    ),
)


def server_config_hint(error: str | None) -> str | None:
    """What to change on the server when a 400's ``error`` says the server, not the schema,
    refused the request (``None``: a verdict on the schema, e.g. a failed compile)."""
    for pattern, hint in _SERVER_CONFIG:
        m = pattern.search(error or "")
        if m:
            return hint.format(*m.groups())
    return None
