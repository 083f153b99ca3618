"""What ``warm`` sends for the registry's tool sets (``NAME.tools.json``): one request per mode.

Why a request and not a key: for ``tool_choice`` ``required`` or a named function the engine
derives the grammar from the whole ``tools`` array itself, and what it derives depends on how
the server was started, which no endpoint reports:

- SGLang 0.5.23 without ``--tool-call-parser``: the JSON schema of
  ``get_json_schema_constraint`` (``sglang/srt/function_call/utils.py``, modelled in
  ``engines/tool_schema.py``), keyed by its ``json.dumps``
  (``sglang/srt/entrypoints/openai/protocol.py``, ``convert_json_schema_to_str``); with a
  parser, the parser's structural tag (``serving_chat.py``, ``get_structure_constraint``).
- vLLM 0.32.0 refuses every tool choice with HTTP 400 unless started with
  ``--enable-auto-tool-choice --tool-call-parser`` (``vllm/renderers/online_renderer.py``; the
  400 for ``required``/named names only the parser, but ``parser/parser_manager.py`` loads
  none without both). A parser with an xgrammar structural-tag model (``hermes``,
  ``llama``, ``qwen_3_coder``, ...) compiles a structural tag whose arguments are pinned only
  for ``strict`` tools or ``--tool-strict-level parameter``
  (``vllm/parser/abstract_parser.py`` ``_apply_structural_tag``,
  ``vllm/tool_parsers/structural_tag_registry.py`` ``resolve_tool_strictness``); the others
  compile ``get_json_schema_from_tools`` (``vllm/tool_parsers/utils.py``) as
  ``structured_outputs.json``.

So an item carries the request fragment exactly as the application sends it (the registry's
``request_tools()``, refs bundled, plus ``tool_choice`` and, when given,
``parallel_tool_calls``), and the server derives the same key the application's first request
will. The key is None (the server's); proof is by latency, as for schemas.
"""

from __future__ import annotations

from typing import Any

from schemaops.errors import InputError
from schemaops.warm.plan import WarmItem

#: What ``--tool-choice`` takes when not given: the mode every engine constrains (SGLang
#: without a parser, vLLM with one); ``auto`` is constrained only by some parsers.
DEFAULT_TOOL_CHOICE: tuple[str, ...] = ("required",)
#: ``--tool-choice none``: warm no tool set
NONE = "none"


def check_modes(modes: tuple[str, ...]) -> None:
    """``InputError`` for a ``--tool-choice`` value warm cannot send."""
    for m in modes:
        if m in ("required", "named", "auto", NONE) or (
            m.startswith(("named:", "required:", "auto:")) and not m.endswith(":")
        ):
            continue
        raise InputError(
            f"--tool-choice {m!r}: expected required, required:PARSER, named (every tool in "
            "turn), named:FN, named:FN:PARSER, auto, auto:PARSER or none"
        )
    if NONE in modes and len(set(modes)) > 1:
        raise InputError("--tool-choice none warms no tool set: give it alone")


def expand(modes: tuple[str, ...], names: list[str]) -> list[str]:
    """``named`` -> ``named:FN`` for every tool of the set, in file order; a ``named:FN`` the
    set does not have is left out (``toolset_items`` refuses one no set has)."""
    out: list[str] = []
    for m in modes:
        if m == "named":
            out.extend(f"named:{n}" for n in names)
        elif m.startswith("named:"):
            if m[6:].partition(":")[0] in names:  # named:FN or named:FN:PARSER
                out.append(m)
        elif m != NONE:
            out.append(m)
    return list(dict.fromkeys(out))


def tool_choice(mode: str) -> str | dict[str, Any]:
    """The request's ``tool_choice`` for a mode (``named:FN`` -> the named-function object).

    ``required:PARSER`` / ``auto:PARSER`` / ``named:FN:PARSER`` are ``check``'s names for a
    server started with that ``--tool-call-parser``: the request is ``required`` / ``auto`` /
    the named function (the server's parser decides what is compiled); the suffix only names
    the row as ``check`` names its case."""
    if mode.startswith("named:"):
        return {"type": "function", "function": {"name": mode[6:].partition(":")[0]}}
    return mode.split(":", 1)[0]


def item_name(toolset: str, engine: str | None, mode: str) -> str:
    """``NAME.tools[ENGINE MODE]``, as ``check`` names its tool-set cases."""
    return f"{toolset}.tools[{engine} {mode}]" if engine else f"{toolset}.tools[{mode}]"


def toolset_items(
    toolsets: dict[str, Any],
    modes: tuple[str, ...] = DEFAULT_TOOL_CHOICE,
    engine: str | None = None,
    parallel_tool_calls: bool | None = None,
) -> list[WarmItem]:
    """One OpenAI-path item per registry tool set and mode, in registry then mode order.

    ``toolsets``: the registry's (``Registry.toolsets``: name -> ``ToolSet``); ``engine`` only
    names the rows. A ``named:FN`` that no tool set has is ``InputError`` (a typo must not
    warm nothing)."""
    check_modes(modes)
    for m in modes:
        fn = m[6:].partition(":")[0]
        if m.startswith("named:") and not any(fn in ts.names for ts in toolsets.values()):
            raise InputError(
                f"--tool-choice {m}: no tool set has a function {fn!r} "
                f"(tool sets: {', '.join(sorted(toolsets)) or 'none'})"
            )
    extra: dict[str, Any] = {}
    if parallel_tool_calls is not None:
        extra["parallel_tool_calls"] = parallel_tool_calls
    items: list[WarmItem] = []
    for ts in toolsets.values():
        tools = ts.request_tools()
        for mode in expand(modes, ts.names):
            choice = tool_choice(mode)
            meta = {
                "toolset": ts.name,
                "mode": mode,
                "tool_choice": choice,
                "tools": len(ts.tools),
                "toolset_hash": ts.hash,
                "parallel_tool_calls": parallel_tool_calls,
            }
            items.append(
                WarmItem(
                    name=item_name(ts.name, engine, mode),
                    api="openai",
                    key_type="json",
                    fragment={"tools": tools, "tool_choice": choice, **extra},
                    extra={"toolset": meta},
                )
            )
    return items


def toolset_meta(item: WarmItem) -> dict[str, Any] | None:
    """The tool-set facts of an item (None: not a registry tool set)."""
    meta = item.extra.get("toolset")
    return meta if isinstance(meta, dict) else None


#: The row note of a tool set whose compile could not be seen (proof ``unproven``).
UNPROVEN_NOTE = (
    "a tool set's grammar is what the server derives: with a structural-tag tool parser "
    "(vLLM 0.32 hermes, llama, qwen_3_coder, ...) the arguments of tools without "
    '"strict": true stay free (vLLM --tool-strict-level parameter pins them), so the '
    "compile can be too cheap to see; or the tool set was cached before this run"
)
