"""The request paths a deployment can use for structured output, and how each is probed.

Each path names one way a client asks a server for constrained output. ``build`` turns a
canary into ``(endpoint, body)``; ``read`` pulls the text the application would read out of
a 200 answer (plus the finish reason and notes on anything odd, such as JSON that went to
``reasoning_content``).

On SGLang 0.5.23 without ``--tool-call-parser`` the tool paths come back as a JSON array
``[{"name", "parameters"}]`` in ``message.content`` (finish_reason ``stop``); with a parser,
as ``message.tool_calls``. Both are read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from schemaops.probe.canary import Canary, Kind

Engine = Literal["sglang", "vllm", "openai"]
NATIVE = "/generate"
CHAT = "/v1/chat/completions"
TOOL_NAME = "record_canary"
REASONING_NOTE = "content is empty and the text went to reasoning_content"
REASONING_OPEN_NOTE = "the text opens the model's reasoning and never ends it"
# Reasoning markers: <think> of most reasoning parsers and ◁think▷ of the Kimi one in SGLang
# (https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/parser/reasoning_parser.py),
# <seed:think> of vLLM's Seed-OSS parser (vllm/reasoning/seedoss_reasoning_parser.py). With a
# reasoning parser the grammar starts only after the end marker; the parsers split the text at
# its first occurrence.
THINK_MARKERS = (
    ("<think>", "</think>"),
    ("◁think▷", "◁/think▷"),
    ("<seed:think>", "</seed:think>"),
)

# The instruction contradicts every canary: a model left free answers in prose.
PROMPT = (
    "Answer in one short plain-English sentence. Do not write JSON, braces, quotes, code or "
    "random letters, and do not call any tool. What colour is a clear daytime sky?"
)


@dataclass(frozen=True)
class Reading:
    """What the application would get from a 200 answer.

    ``reasoning``: ``"open"`` when the answer stopped inside the model's reasoning (all of it
    in ``reasoning_content``, or a start marker and no end marker): the grammar had not begun,
    so the text is no evidence either way; ``"ended"`` when ``text`` is what followed the end
    marker; ``None`` when no reasoning was seen."""

    text: str | None
    truncated: bool
    finish: str | None
    notes: tuple[str, ...] = ()
    aborted: str | None = None
    tool_call: bool = False  # the answer holds a tool call (tool_calls, or SGLang's array)
    reasoning: str | None = None
    #: the function the (first) tool call names; ``text`` is its arguments
    tool_name: str | None = None


def split_reasoning(text: str | None) -> tuple[str | None, str | None, str | None]:
    """``(text after the reasoning, "open" | "ended" | None, note)`` for raw model text."""
    if not text:
        return text, None, None
    for _, end in THINK_MARKERS:
        k = text.find(end)
        if k >= 0:
            return text[k + len(end) :], "ended", f"judged the text after {end}"
    for start, end in THINK_MARKERS:
        if start in text:
            return text, "open", f"{REASONING_OPEN_NOTE} ({start} without {end})"
    return text, None, None


@dataclass(frozen=True)
class PathSpec:
    """One probed request path."""

    name: str
    kind: Kind
    endpoint: str
    what: str
    build: Callable[[Canary, int, str | None], dict[str, Any]]
    tools: str | None = None  # "required", "named", "auto", "auto_strict"
    #: a registry tool set sent beside the canary tool (``probe/toolsets.py``): its name
    toolset: str | None = None
    #: that tool set's functions: name -> bundled parameters (what a call to one is judged by)
    offered: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def _native(field: str) -> Callable[[Canary, int, str | None], dict[str, Any]]:
    def build(c: Canary, max_tokens: int, model: str | None) -> dict[str, Any]:
        value = json.dumps(c.schema) if field == "json_schema" else getattr(c, field)
        sp = {field: value, "max_new_tokens": max_tokens, "temperature": 1.0, "top_p": 1.0}
        return {"text": PROMPT, "sampling_params": sp}

    return build


def _chat(c: Canary, max_tokens: int, model: str | None, **extra: Any) -> dict[str, Any]:
    return {
        "model": model or "default",
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens,
        "temperature": 1.0,
        "top_p": 1.0,
        **extra,
    }


def _response_format(c: Canary, max_tokens: int, model: str | None) -> dict[str, Any]:
    if c.kind == "json_object":
        return _chat(c, max_tokens, model, response_format={"type": "json_object"})
    rf = {"type": "json_schema", "json_schema": {"name": "canary", "schema": c.schema}}
    return _chat(c, max_tokens, model, response_format=rf)


def tools_request(
    choice: str, others: tuple[dict[str, Any], ...] = ()
) -> Callable[[Canary, int, str | None], dict[str, Any]]:
    """The tools paths' request: the canary function, after ``others`` (a registry tool set's
    ``tools`` array, sent as it is: the grammar the engine derives covers the whole set)."""

    def build(c: Canary, max_tokens: int, model: str | None) -> dict[str, Any]:
        fn: dict[str, Any] = {
            "name": TOOL_NAME,
            "description": "Records a value.",
            "parameters": c.schema,
        }
        mode, _, strict = choice.partition("_")
        if strict:
            fn["strict"] = True
        tool_choice: Any = {
            "required": "required",
            "named": {"type": "function", "function": {"name": TOOL_NAME}},
        }.get(mode, "auto")
        return _chat(
            c,
            max_tokens,
            model,
            tools=[*others, {"type": "function", "function": fn}],
            tool_choice=tool_choice,
        )

    return build


def _structured(key: str) -> Callable[[Canary, int, str | None], dict[str, Any]]:
    def build(c: Canary, max_tokens: int, model: str | None) -> dict[str, Any]:
        value: Any = {"json": c.schema, "regex": c.regex, "choice": c.choices}[key]
        return _chat(c, max_tokens, model, structured_outputs={key: value})

    return build


def _guided_json(c: Canary, max_tokens: int, model: str | None) -> dict[str, Any]:
    return _chat(c, max_tokens, model, guided_json=c.schema)


PATHS: tuple[PathSpec, ...] = (
    PathSpec(
        "generate.json_schema",
        "json",
        NATIVE,
        "SGLang /generate sampling_params.json_schema",
        _native("json_schema"),
    ),
    PathSpec(
        "generate.regex",
        "regex",
        NATIVE,
        "SGLang /generate sampling_params.regex",
        _native("regex"),
    ),
    PathSpec(
        "generate.ebnf",
        "ebnf",
        NATIVE,
        "SGLang /generate sampling_params.ebnf",
        _native("ebnf"),
    ),
    PathSpec(
        "response_format.json_schema",
        "json",
        CHAT,
        "chat response_format json_schema",
        _response_format,
    ),
    PathSpec(
        "response_format.json_object",
        "json_object",
        CHAT,
        "chat response_format json_object",
        _response_format,
    ),
    PathSpec(
        "tools.required",
        "json",
        CHAT,
        'chat tools, tool_choice "required", no strict',
        tools_request("required"),
        "required",
    ),
    PathSpec(
        "tools.required_strict",
        "json",
        CHAT,
        'chat tools, tool_choice "required", strict: true',
        tools_request("required_strict"),
        "required_strict",
    ),
    PathSpec(
        "tools.named",
        "json",
        CHAT,
        "chat tools, tool_choice naming the function, no strict",
        tools_request("named"),
        "named",
    ),
    PathSpec(
        "tools.named_strict",
        "json",
        CHAT,
        "chat tools, tool_choice naming the function, strict: true",
        tools_request("named_strict"),
        "named_strict",
    ),
    PathSpec(
        "tools.auto",
        "json",
        CHAT,
        'chat tools, tool_choice "auto", no strict',
        tools_request("auto"),
        "auto",
    ),
    PathSpec(
        "tools.auto_strict",
        "json",
        CHAT,
        'chat tools, tool_choice "auto", strict: true',
        tools_request("auto_strict"),
        "auto_strict",
    ),
    PathSpec(
        "structured_outputs.json",
        "json",
        CHAT,
        "vLLM structured_outputs.json",
        _structured("json"),
    ),
    PathSpec(
        "structured_outputs.regex",
        "regex",
        CHAT,
        "vLLM structured_outputs.regex",
        _structured("regex"),
    ),
    PathSpec(
        "structured_outputs.choice",
        "choice",
        CHAT,
        "vLLM structured_outputs.choice",
        _structured("choice"),
    ),
    PathSpec(
        "guided_json",
        "json",
        CHAT,
        "legacy guided_json (ignored by vLLM >= 0.12)",
        _guided_json,
    ),
)
BY_NAME = {p.name: p for p in PATHS}


def default_paths(engine: Engine) -> list[PathSpec]:
    """The paths worth probing on ``engine`` (every path when the user names them): what the
    engine's module says it offers (``engines/``), the OpenAI-compatible ones otherwise."""
    from schemaops.engines import ENGINES
    from schemaops.engines.base import OPENAI_PATHS

    names = ENGINES[engine].request_paths if engine in ENGINES else OPENAI_PATHS
    return [BY_NAME[n] for n in names]


def _finish_reason(value: Any) -> str | None:
    if isinstance(value, dict):  # SGLang /generate: {"type": "stop"|"length"|"abort", ...}
        value = value.get("type")
    return value if isinstance(value, str) else None


def _abort_message(value: Any) -> str | None:
    if isinstance(value, dict) and value.get("type") == "abort":
        return str(value.get("message") or "aborted")
    return "aborted" if value == "abort" else None


def read(spec: PathSpec, body: Any) -> Reading | str:
    """The application's view of a 200 answer, or why it is not an answer of ``spec``."""
    if spec.endpoint == NATIVE:
        if not (isinstance(body, dict) and isinstance(body.get("meta_info"), dict)):
            return "HTTP 200 but not a /generate answer (no meta_info)"
        fr = body["meta_info"].get("finish_reason")
        raw = body.get("text")
        text, reasoning, note = split_reasoning(raw if isinstance(raw, str) else None)
        return Reading(
            text,
            _finish_reason(fr) == "length",
            _finish_reason(fr),
            (note,) if note else (),
            aborted=_abort_message(fr),
            reasoning=reasoning,
        )
    choices = body.get("choices") if isinstance(body, dict) else None
    if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
        return "HTTP 200 but not a chat completion (no choices)"
    choice = choices[0]
    msg = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    fr = _finish_reason(choice.get("finish_reason"))
    content = msg.get("content")
    notes: list[str] = []
    state: str | None = None
    reasoning = msg.get("reasoning_content") or msg.get("reasoning")
    if (
        isinstance(reasoning, str)
        and reasoning.strip()
        and not (content if isinstance(content, str) else "").strip()
    ):
        notes.append(REASONING_NOTE)
        state = "open"
    if spec.tools:
        calls = msg.get("tool_calls")
        if isinstance(calls, list) and calls:
            first = calls[0] if isinstance(calls[0], dict) else {}
            fn = first.get("function") if isinstance(first.get("function"), dict) else {}
            if fn.get("name") != TOOL_NAME and fn.get("name") not in spec.offered:
                notes.append(f"tool call names {fn.get('name')!r}, not {TOOL_NAME!r}")
            if isinstance(content, str) and content.strip():
                notes.append("prose next to the tool call")
            args = fn.get("arguments")
            return Reading(
                args if isinstance(args, str) else json.dumps(args),
                fr == "length",
                fr,
                tuple(notes),
                _abort_message(choice.get("finish_reason")),
                True,
                tool_name=fn.get("name") if isinstance(fn.get("name"), str) else None,
            )
        if fr == "tool_calls":
            notes.append("finish_reason tool_calls but no tool call")
        found = _array_form(content, {TOOL_NAME, *spec.offered}, cut=fr == "length")
        if found is not None:  # SGLang without a tool-call parser
            name, arguments = found
            return Reading(arguments, fr == "length", fr, tuple(notes), None, True, tool_name=name)
    text = content if isinstance(content, str) else None
    if state is None:  # no parser split it off: markers in the content itself
        text, state, note = split_reasoning(text)
        notes += [note] if note else []
    return Reading(
        text,
        fr == "length",
        fr,
        tuple(notes),
        _abort_message(choice.get("finish_reason")),
        reasoning=state,
    )


#: the start of SGLang's array form up to its first call's parameters: what a call cut off by
#: the token budget inside its parameters still says (which function it calls)
_CUT_CALL = re.compile(r'\s*\[\s*\{\s*"name"\s*:\s*"([^"\\]*)"\s*,\s*"parameters"\s*:\s*')


def _array_form(
    content: Any, names: set[str] | None = None, cut: bool = False
) -> tuple[str, str] | None:
    """(name, parameters as JSON text) of the first call of SGLang's ``[{"name",
    "parameters"}]`` content; every call must name one of ``names`` (the canary tool and the
    registry tool set's functions). ``cut``: the answer stopped at the token budget; a first
    call cut off inside its parameters then gives its name and the parameters' text so far
    (a raw control character there, xgrammar's leak, is no sign of free text)."""
    names = names or {TOOL_NAME}
    if not isinstance(content, str) or not content.lstrip().startswith("["):
        return None
    # strict=False: a raw control character inside a string (xgrammar lets one into a string
    # with minLength/maxLength: probe.md's ``leaky``) still finds the call; the parameters
    # are written back escaped, and the canary's tokens never hold one
    lenient = json.JSONDecoder(strict=False)
    try:
        value = lenient.decode(content)
    except RecursionError:  # "[" x 1,500: nested deeper than any tool call
        return None
    except ValueError:
        # cut off after a complete first call (a random model may go on with ",{...}")
        try:
            first, _ = lenient.raw_decode(content.lstrip()[1:].lstrip())
        except (ValueError, RecursionError):
            head = _CUT_CALL.match(content) if cut else None
            if head is not None and head.group(1) in names:
                return head.group(1), content[head.end() :]
            return None
        value = [first]
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, dict) and v.get("name") in names and "parameters" in v for v in value)
    ):
        try:
            return str(value[0]["name"]), json.dumps(value[0]["parameters"])
        except RecursionError:
            return None
    return None
