"""The JSON schema each engine compiles for a tool set, per ``tool_choice`` mode.

Why: with ``tool_choice`` ``required`` or a named function, SGLang and vLLM do not compile the
functions' ``parameters`` one by one; they derive one JSON schema from the whole ``tools``
array and compile that. Its cost grows with the tool set, and the tool name is an ``enum`` in
it (the model cannot call a function that is not offered). ``check`` compiles exactly these
schemas (``check/toolsets.py``). Read from the installed engines' sources (the dev-server
environments under ``~/.cache/schemaops/devserver/``):

- SGLang 0.5.23, ``sglang/srt/function_call/utils.py``: ``get_json_schema_constraint``,
  ``_get_tool_schema`` and ``_get_tool_schema_defs``; called from
  ``sglang/srt/entrypoints/openai/serving_chat.py`` for ``required``/named when the tool
  parser does not parse them natively. ``required``: an array (``minItems`` 1) of
  ``{"type": "object", "anyOf": [one per tool]}``, each tool ``{"properties": {"name":
  {"type": "string", "enum": [NAME]}, "parameters": PARAMS}, "required": ["name",
  "parameters"]}``, the tools' ``$defs`` merged at the root (each tool's own ``$defs`` is left
  in place too). Named: the same array with ``items`` the one tool's schema, and no ``$defs``
  hoisted. ``maxItems`` 1 when ``parallel_tool_calls`` is false (request default true,
  ``sglang/srt/entrypoints/openai/protocol.py``). Empty parameters become
  ``{"type": "object", "properties": {}}``.
- vLLM 0.32.0, ``vllm/tool_parsers/utils.py``: ``get_json_schema_from_tools`` (from
  ``ToolParser.adjust_request`` in ``vllm/tool_parsers/abstract_tool_parser.py``, as
  ``structured_outputs.json``). ``required``: ``_get_json_schema_from_tools``, the same
  array and ``anyOf`` as SGLang, but each tool's ``$defs`` is *popped* into the root (not
  duplicated), and ``maxItems`` 1 only for an explicit ``parallel_tool_calls`` false. Named
  (Chat Completions): the function's parameters themselves (``_params_or_empty_object``).
- ``auto``: neither engine derives a JSON schema (both return None); with a tool-call parser
  the call may be a structural tag in the model's own format, only when a tool is strict or
  the server's strict level is raised: ``engines/structural_tags.py``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

ENGINES = ("sglang", "vllm")
EMPTY_PARAMETERS: dict = {"type": "object", "properties": {}}
AUTO_NOTE = (
    "tool_choice auto: the engine derives no JSON schema (SGLang get_json_schema_constraint and "
    "vLLM get_json_schema_from_tools return None): unconstrained as a JSON schema; with a "
    "tool-call parser see the structural tag (check --tool-choice auto:PARSER)"
)


def _params(fn: dict) -> Any:
    return fn.get("parameters") or EMPTY_PARAMETERS


def _tool_schema(fn: dict, params: Any) -> dict:
    """SGLang ``_get_tool_schema`` / vLLM ``_get_tool_schema_from_name_and_params``."""
    return {
        "properties": {"name": {"type": "string", "enum": [fn["name"]]}, "parameters": params},
        "required": ["name", "parameters"],
    }


def _functions(tools: list[dict]) -> list[dict]:
    return [copy.deepcopy(t["function"]) for t in tools if t.get("type") == "function"]


def sglang_schema(
    tools: list[dict], tool_choice: str | dict, parallel_tool_calls: bool = True
) -> dict | None:
    """SGLang 0.5.23 ``get_json_schema_constraint`` (see module docstring), or None."""
    fns = _functions(tools)
    if isinstance(tool_choice, dict):
        name = tool_choice.get("function", {}).get("name")
        for fn in fns:
            if fn["name"] == name:
                schema: dict = {
                    "type": "array",
                    "minItems": 1,
                    "items": _tool_schema(fn, _params(fn)),
                }
                if not parallel_tool_calls:
                    schema["maxItems"] = 1
                return schema
        return None
    if tool_choice != "required":
        return None
    schema = {
        "type": "array",
        "minItems": 1,
        "items": {"type": "object", "anyOf": [_tool_schema(fn, _params(fn)) for fn in fns]},
    }
    if not parallel_tool_calls:
        schema["maxItems"] = 1
    defs: dict = {}
    for fn in fns:  # _get_tool_schema_defs: merged, conflicts refused, left in place too
        params = fn.get("parameters")
        for key, value in ((params or {}).get("$defs") or {}).items():
            if key in defs and defs[key] != value:
                raise ValueError(f"Tool definition '{key}' has multiple schemas")
            defs[key] = value
    if defs:
        schema["$defs"] = defs
    return schema


def vllm_schema(
    tools: list[dict], tool_choice: str | dict, parallel_tool_calls: bool | None = True
) -> dict | None:
    """vLLM 0.32.0 ``get_json_schema_from_tools`` for Chat Completions, or None."""
    fns = _functions(tools)
    if isinstance(tool_choice, dict):
        name = tool_choice.get("function", {}).get("name")
        for fn in fns:
            if fn["name"] == name:
                return _params(fn)
        raise ValueError(f"Tool '{name}' has not been passed in `tools`.")
    if tool_choice != "required":
        return None
    items = []
    defs: dict = {}
    for fn in fns:
        params = fn.get("parameters")
        if isinstance(params, dict):
            for key, value in (params.pop("$defs", {}) or {}).items():  # popped, not copied
                if key in defs and defs[key] != value:
                    raise ValueError(f"Tool definition '{key}' has multiple schemas")
                defs[key] = value
        items.append(_tool_schema(fn, _params(fn)))
    schema: dict = {"type": "array", "minItems": 1, "items": {"type": "object", "anyOf": items}}
    if parallel_tool_calls is False:
        schema["maxItems"] = 1
    if defs:
        schema["$defs"] = defs
    return schema


def parse_mode(mode: str) -> str | dict:
    """``required`` / ``auto`` / ``named:FN`` -> the request's ``tool_choice`` value."""
    if mode in ("required", "auto"):
        return mode
    if mode.startswith("named:") and mode[len("named:") :]:
        return {"type": "function", "function": {"name": mode[len("named:") :]}}
    raise ValueError(f"tool choice {mode!r}: expected required, auto or named:FUNCTION")


@dataclass
class ToolConstraint:
    """What one engine compiles for one tool set and mode; ``schema`` None: unconstrained."""

    engine: str
    mode: str
    schema: dict | None
    note: str = ""


def derive(
    engine: str, tools: list[dict], mode: str, parallel_tool_calls: bool = True
) -> ToolConstraint:
    """The constraint ``engine`` builds for ``tools`` under ``mode`` (see ``parse_mode``)."""
    choice = parse_mode(mode)
    if choice == "auto":
        return ToolConstraint(engine, mode, None, AUTO_NOTE)
    if engine == "sglang":
        schema = sglang_schema(tools, choice, parallel_tool_calls)
    elif engine == "vllm":
        schema = vllm_schema(tools, choice, parallel_tool_calls)
    else:
        raise ValueError(f"unknown engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if schema is None:
        return ToolConstraint(engine, mode, None, f"{engine} derives no schema for {mode}")
    return ToolConstraint(engine, mode, schema)
