"""What a record's request offered the model: its ``tools`` and its ``tool_choice``, read as
each provider writes them, so an audit judges the calls against the tool set actually sent.

Why its own module: the readers of answers (``extract``, ``hosted_bodies``) know where a call
is; this knows where a request keeps its tools, which is a different shape per provider.
A record holds its request as ``request`` (an OpenAI-style log line ``{"request": ...,
"response": ...}``; an OpenAI Batch input line keeps it under ``request.body``), or is the
request-carrying record ``sglang_log.py`` makes of SGLang's own request log.

Shapes (the providers' API references; no live calls):
- OpenAI chat: ``tools[].function.{name, parameters}``; ``tool_choice`` ``"none" | "auto" |
  "required" | {"type": "function", "function": {"name"}}``
  (https://platform.openai.com/docs/api-reference/chat/create).
- OpenAI Responses: ``tools[].{type: "function", name, parameters}``; ``tool_choice``
  ``{"type": "function", "name"}`` (https://platform.openai.com/docs/api-reference/responses).
- Anthropic Messages: ``tools[].{name, input_schema}``; ``tool_choice`` ``{"type": "auto" |
  "any" | "tool" | "none", "name"}``: ``any`` is required, ``tool`` is named
  (https://docs.anthropic.com/en/api/messages).
- Gemini: ``tools[].functionDeclarations[].{name, parameters | parametersJsonSchema}``;
  ``toolConfig.functionCallingConfig.{mode: AUTO | ANY | NONE, allowedFunctionNames}``: ``ANY``
  is required, and named when it allows exactly one function
  (https://ai.google.dev/api/caching#FunctionCallingConfig).
"""

from __future__ import annotations

from typing import Any

REQUIRED, NAMED, AUTO, NONE = "required", "named", "auto", "none"
MODES = (REQUIRED, NAMED, AUTO)
#: OpenAI's "no parameters": what SGLang substitutes for a tool without ``parameters``
#: (``function_call/utils.py``, ``_get_tool_schema``, SGLang 0.5.23)
EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


def request_of(rec: dict[str, Any]) -> dict[str, Any] | None:
    """The request a record holds (``request``, or a Batch input's ``request.body``)."""
    req = rec.get("request")
    if not isinstance(req, dict):
        return None
    body = req.get("body")
    if isinstance(body, dict) and "tools" not in req:
        return body
    return req


def offered_tools(req: dict[str, Any]) -> list[tuple[str, Any]] | None:
    """``[(name, parameters)]`` of the functions a request offered, in its order; None when it
    offered none. A tool that is no function (a hosted tool such as ``web_search``) is left
    out: its calls are not function calls."""
    tools = req.get("tools")
    if not isinstance(tools, list) or not tools:
        return None
    out: list[tuple[str, Any]] = []
    for t in tools:
        if not isinstance(t, dict):
            continue
        decls = t.get("functionDeclarations", t.get("function_declarations"))
        if isinstance(decls, list):  # Gemini
            for d in decls:
                if isinstance(d, dict) and isinstance(d.get("name"), str):
                    params = d.get("parametersJsonSchema", d.get("parameters"))
                    out.append((d["name"], params))
            continue
        fn = t.get("function")
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):  # OpenAI chat
            out.append((fn["name"], fn.get("parameters")))
        elif isinstance(t.get("name"), str) and "input_schema" in t:  # Anthropic
            out.append((t["name"], t.get("input_schema")))
        elif t.get("type") == "function" and isinstance(t.get("name"), str):  # Responses
            out.append((t["name"], t.get("parameters")))
    return out or None


def tool_choice(req: dict[str, Any]) -> tuple[str, str | None] | None:
    """``(mode, function)`` of the request's tool choice: ``required``, ``named`` (with the
    function), ``auto`` or ``none``; None when the request does not say (the providers'
    default with tools is ``auto``)."""
    choice = req.get("tool_choice")
    if isinstance(choice, str):
        mode = choice.lower()
        if mode == "any":
            return REQUIRED, None
        return (mode, None) if mode in (REQUIRED, AUTO, NONE) else None
    if isinstance(choice, dict):
        kind = choice.get("type")
        fn = choice.get("function")
        name = fn.get("name") if isinstance(fn, dict) else choice.get("name")
        if kind in ("function", "tool") and isinstance(name, str):
            return NAMED, name
        if kind == "any":
            return REQUIRED, None
        if kind in (AUTO, NONE):
            return kind, None
        return None
    cfg = req.get("toolConfig", req.get("tool_config"))
    fcc = (
        cfg.get("functionCallingConfig", cfg.get("function_calling_config"))
        if isinstance(cfg, dict)
        else None
    )
    if isinstance(fcc, dict):
        mode = str(fcc.get("mode", "")).upper()
        allowed = fcc.get("allowedFunctionNames", fcc.get("allowed_function_names"))
        if mode == "ANY":
            if isinstance(allowed, list) and len(allowed) == 1 and isinstance(allowed[0], str):
                return NAMED, allowed[0]
            return REQUIRED, None
        if mode in ("AUTO", "NONE"):
            return mode.lower(), None
    return None


def parse_choice_option(value: str | None) -> tuple[str, str | None] | None:
    """``--tool-choice required | named[:FUNCTION] | auto`` -> ``(mode, function)``; raises
    ValueError on anything else."""
    if value is None:
        return None
    text = value.strip()
    mode, _, fn = text.partition(":")
    mode = mode.strip().lower()
    if mode not in MODES or (fn and mode != NAMED):
        raise ValueError(
            f"--tool-choice {value!r}: expected required, named, named:FUNCTION or auto"
        )
    return mode, (fn.strip() or None)
