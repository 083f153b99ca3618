"""The structural tag each engine builds for a tool set when a ``--tool-call-parser`` is set.

Why: with a tool-call parser, ``tool_choice`` ``auto`` is constrained (if at all) by a
*structural tag* in the model's own call format, not by a JSON schema: free text until a
trigger (``<tool_call>``), then one of the offered tools' ``begin`` strings, its arguments,
its ``end``. The tool name is fixed inside each ``begin``, so a call to a function not in
the set is refused after the trigger; the arguments are held to ``parameters`` only for
strict tools. Read from the installed engines (dev-server environments under
``~/.cache/schemaops/devserver/``) and held equal to their own functions by
``tests/test_engines_structural_tags.py``:

SGLang 0.5.23 (``sglang/srt/function_call/function_call_parser.py``
``FunctionCallParser.get_structure_constraint`` and ``get_legacy_structural_tag``):

- ``auto`` is constrained only when a tool has ``"strict": true`` or the server runs with
  ``SGLANG_TOOL_STRICT_LEVEL`` >= 1 (``sglang/srt/environ.py`` ``ToolStrictLevel``:
  0 OFF, the default; 1 FUNCTION; 2 PARAMETER). Otherwise it returns None: unconstrained.
- the qwen25/qwen and hermes detectors have no model-native tag (``get_structural_tag_name``
  None), so the tag is the *legacy* one: ``{"type": "structural_tag", "structures": [{begin,
  schema, end} per tool], "triggers": [...], "at_least_one": false}`` (``True`` for
  ``required`` and named, over *all* tools: the named tool is not singled out), ``schema``
  the tool's ``parameters`` when it is strict or the level is 2, else ``{}`` (any JSON).
  ``begin``/``end``/``trigger`` from the detector's ``structure_info``:
  ``qwen25_detector.py`` ``<tool_call>\\n{"name":"FN", "arguments":`` ... ``}\\n</tool_call>``;
  ``hermes_detector.py`` ``<tool_call>{"name":"FN", "arguments":`` ... ``}</tool_call>``.
  ``parallel_tool_calls`` does not reach the legacy tag.
- compiled by ``constrained/xgrammar_backend.py`` ``dispatch_structural_tag``
  (``StructuralTag.from_legacy_structural_tag`` + ``at_least_one``) or
  ``constrained/llguidance_backend.py`` (``StructTag.to_grammar``; ``at_least_one`` dropped).

vLLM 0.32.0 (``vllm/parser/abstract_parser.py`` tool-call adjustment,
``vllm/tool_parsers/structural_tag_registry.py``):

- the ``hermes`` parser (Qwen2.5's) sets ``structural_tag_model = "hermes"``, active while
  ``VLLM_ENFORCE_STRICT_TOOL_CALLING`` is true (the default, ``vllm/envs.py``);
  ``resolve_tool_strictness``: ``auto`` gets a tag only when a tool is strict or the server
  runs ``--tool-strict-level function|parameter`` (default ``auto``), or
  ``parallel_tool_calls`` is false (raised to FUNCTION). Otherwise None: unconstrained.
- ``get_hermes_structural_tag``: two tags per tool, ``<tool_call>\\n{"name": "FN",
  "arguments": `` ... ``}\\n</tool_call>`` and ``<tool_call>{"name": "FN", "arguments": ``
  ... ``}</tool_call>``, content the tool's parameters when strict, else ``true`` (any JSON);
  ``auto`` a ``triggered_tags`` format (trigger ``<tool_call>``), ``required``
  ``tags_with_separator`` with ``at_least_one``, named the one tool, ``stop_after_first``.
- compiled by ``v1/structured_output/backend_xgrammar.py`` (``compile_structural_tag``);
  ``backend_guidance.py`` reads only the legacy ``structures`` shape, so llguidance cannot
  compile this tag.

Tool parsers the installed engines ship: ``SGLANG_PARSERS`` / ``VLLM_PARSERS`` (held to the
engines by the test). Covered here: ``COVERED``; any other parser is reported as not covered.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

#: ``FunctionCallParser.ToolCallParserEnum`` keys, SGLang 0.5.23
SGLANG_PARSERS = (
    "apertus2509 beam cohere_command4 deepseekv3 deepseekv31 deepseekv32 deepseekv4 "
    "deepseekv41 dots glm glm45 glm47 gpt-oss k2_horizon kimi_k2 kimi_k3 lfm2 ling3 llama3 "
    "mimo minicpm5 mistral muse poolside_v1 pythonic qwen qwen25 qwen3_coder spark25 step3 "
    "step3p5 minimax-m2 minimax-m3 nanbeige trinity interns1 hermes hunyuan gigachat3 "
    "gigachat35 gemma4 inkling iquest_q1 response_template"
).split()

#: ``_TOOL_PARSERS_TO_REGISTER`` keys, vLLM 0.32.0 (``vllm/tool_parsers/__init__.py``)
VLLM_PARSERS = (
    "dots deepseek_v3 deepseek_v31 deepseek_v32 deepseek_v4 deepseek_v41 cohere_command3 "
    "cohere_command4 ernie45 glm45 glm47 ling3 granite-20b-fc granite granite4 hermes hf "
    "poolside_v1 hunyuan_a13b hy_v3 hy_v4 internlm jamba lfm2 kimi_k2 kimi_k3 k2_horizon "
    "llama3_json llama4_json llama4_pythonic longcat mimo minimax_m2 minimax_m3 minicpm5 "
    "mistral olmo3 plamo3 muse_glimmer openai phi4_mini_json pythonic qwen3_coder qwen3_json "
    "qwen3_xml seed_oss step3 step3p5 inkling xlam gigachat3 functiongemma gemma4 apertus"
).split()

#: structure_info per covered SGLang parser: (begin before the name, after it, end, trigger)
SGLANG_FORMATS: dict[str, tuple[str, str, str, str]] = {
    "qwen25": ('<tool_call>\n{"name":"', '", "arguments":', "}\n</tool_call>", "<tool_call>"),
    "qwen": ('<tool_call>\n{"name":"', '", "arguments":', "}\n</tool_call>", "<tool_call>"),
    "hermes": ('<tool_call>{"name":"', '", "arguments":', "}</tool_call>", "<tool_call>"),
}

#: vLLM ``_hermes_tool_tags``: (begin before the name, end); the name is followed by this
VLLM_HERMES = (
    ('<tool_call>\n{"name": "', "}\n</tool_call>"),
    ('<tool_call>{"name": "', "}</tool_call>"),
)
VLLM_ARGS = '", "arguments": '

#: parsers whose tool-call structural tag is derived here, per engine
COVERED = {"sglang": ("qwen25", "qwen", "hermes"), "vllm": ("hermes",)}
#: the parser of the dev server's model (Qwen2.5) on each engine
DEFAULT_PARSER = {"sglang": "qwen25", "vllm": "hermes"}
LEVELS = {"off": 0, "auto": 0, "function": 1, "parameter": 2}

CONDITION = {
    "sglang": 'SGLang 0.5.23 constrains tool_choice auto only when a tool has "strict": true '
    "or the server runs with SGLANG_TOOL_STRICT_LEVEL=1 (function) or 2 (parameter) "
    "(function_call_parser.py get_structure_constraint)",
    "vllm": 'vLLM 0.32.0 constrains tool_choice auto only when a tool has "strict": true, '
    "the server runs --tool-strict-level function|parameter, or the request sets "
    "parallel_tool_calls false (parser/abstract_parser.py, structural_tag_registry.py "
    "resolve_tool_strictness; VLLM_ENFORCE_STRICT_TOOL_CALLING on, the default)",
}


@dataclass
class ToolTag:
    """What one engine builds for a tool set under one parser and mode.

    ``tag`` None: unconstrained (``note`` says why and what would constrain it)."""

    engine: str
    parser: str
    mode: str
    tag: dict | None
    note: str = ""
    #: tool name -> (begin, end) of the call text the tag describes (the first form)
    forms: dict[str, tuple[str, str]] | None = None
    #: names whose arguments are held to their parameters
    strict_tools: tuple[str, ...] = ()


def _functions(tools: list[dict]) -> list[dict]:
    return [copy.deepcopy(t["function"]) for t in tools if t.get("type") == "function"]


def _named(mode: str) -> str | None:
    return mode[len("named:") :] if mode.startswith("named:") else None


def sglang_tag(tools: list[dict], parser: str, mode: str, strict_level: int = 0) -> ToolTag:
    """SGLang 0.5.23 ``get_structure_constraint`` for a covered parser (module docstring)."""
    begin0, begin1, end, trigger = SGLANG_FORMATS[parser]
    fns = _functions(tools)
    required = mode == "required" or _named(mode) is not None
    constrain_auto = any(f.get("strict") is True for f in fns) or strict_level >= 1
    if mode == "auto" and not constrain_auto:
        return ToolTag("sglang", parser, mode, None, f"unconstrained: {CONDITION['sglang']}")
    structures, forms, strict = [], {}, []
    for fn in fns:
        is_strict = fn.get("strict") is True or strict_level >= 2
        schema = fn.get("parameters") if is_strict else {}
        begin = begin0 + fn["name"] + begin1
        structures.append({"begin": begin, "schema": schema or {}, "end": end})
        forms[fn["name"]] = (begin, end)
        if is_strict:
            strict.append(fn["name"])
    tag = {
        "type": "structural_tag",
        "structures": structures,
        "triggers": [trigger],
        "at_least_one": required,
    }
    return ToolTag("sglang", parser, mode, tag, "", forms, tuple(strict))


def vllm_tag(
    tools: list[dict],
    parser: str,
    mode: str,
    strict_level: int = 0,
    parallel_tool_calls: bool | None = None,
) -> ToolTag:
    """vLLM 0.32.0 ``get_model_structural_tag("hermes", ...)`` as the serving layer calls it,
    ``limit_to_single_tool_call`` included (module docstring)."""
    if parser != "hermes":
        raise ValueError(f"vLLM parser {parser!r} is not covered (covered: hermes)")
    fns = _functions(tools)
    named = _named(mode)
    if parallel_tool_calls is False:  # "limiting the call count needs the call envelope"
        strict_level = max(strict_level, 1)
    if mode == "auto" and strict_level == 0 and not any(f.get("strict") is True for f in fns):
        return ToolTag("vllm", parser, mode, None, f"unconstrained: {CONDITION['vllm']}")
    if named is not None:
        fns = [f for f in fns if f["name"] == named]
        if not fns:
            raise ValueError(f"Tool '{named}' has not been passed in `tools`.")
    tags, forms, strict = [], {}, []
    for fn in fns:
        is_strict = strict_level >= 2 or fn.get("strict") is True
        content = fn.get("parameters") if is_strict else True
        if content is None:
            content = True
        for begin0, end in VLLM_HERMES:
            begin = begin0 + fn["name"] + VLLM_ARGS
            tags.append(
                {
                    "type": "tag",
                    "begin": begin,
                    "content": {"type": "json_schema", "json_schema": content},
                    "end": end,
                }
            )
            forms.setdefault(fn["name"], (begin, end))
        if is_strict:
            strict.append(fn["name"])
    single = parallel_tool_calls is False
    if mode == "auto":
        fmt: dict[str, Any] = {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": tags}
        if single:
            fmt["stop_after_first"] = True
    else:
        fmt = {"type": "tags_with_separator", "tags": tags, "separator": "", "at_least_one": True}
        if named is not None or single:
            fmt["stop_after_first"] = True
    tag = {"type": "structural_tag", "format": fmt}
    return ToolTag("vllm", parser, mode, tag, "", forms, tuple(strict))


def parse_auto_mode(mode: str) -> tuple[str, str | None] | None:
    """``auto`` -> (``auto``, None: each engine's default parser); ``auto:PARSER`` ->
    (``auto``, PARSER); any other mode -> None."""
    if mode == "auto":
        return "auto", None
    if mode.startswith("auto:") and len(mode) > 5:
        return "auto", mode[5:]
    return None


def parse_parser_mode(mode: str) -> tuple[str, str | None] | None:
    """``auto``/``auto:PARSER`` as ``parse_auto_mode``, ``required:PARSER`` ->
    (``required``, PARSER) and ``named:FN:PARSER`` -> (``named:FN``, PARSER): the modes
    compiled as a structural tag; any other -> None. (A function name holds no ``:`` in any
    provider's name rule, ``providers/tools.py``, so ``named:FN:PARSER`` is unambiguous.)"""
    if mode.startswith("required:") and len(mode) > len("required:"):
        return "required", mode[len("required:") :]
    if mode.startswith("named:"):
        fn, sep, parser = mode[len("named:") :].partition(":")
        return (f"named:{fn}", parser) if fn and sep and parser else None
    return parse_auto_mode(mode)


def is_tag_mode(mode: str) -> bool:
    """Whether ``check`` compiles ``mode`` as a structural tag (a tool parser's) rather than
    the JSON schema derived from the tools."""
    return parse_parser_mode(mode) is not None


def derive_tag(
    engine: str,
    tools: list[dict],
    mode: str,
    parser: str | None = None,
    strict_level: int = 0,
    parallel_tool_calls: bool | None = None,
) -> ToolTag:
    """The structural tag ``engine`` builds under ``parser`` (default: the Qwen2.5 one).

    A parser the engine ships but this module does not cover, or one it does not ship, is
    a ``ToolTag`` with no tag and a note saying so (never reported as enforced)."""
    parser = parser or DEFAULT_PARSER[engine]
    shipped = SGLANG_PARSERS if engine == "sglang" else VLLM_PARSERS
    if parser not in shipped:
        return ToolTag(engine, parser, mode, None, f"{engine} ships no tool parser {parser!r}")
    if parser not in COVERED[engine]:
        return ToolTag(
            engine,
            parser,
            mode,
            None,
            f"not covered: schemaops derives the {engine} tag for "
            f"{', '.join(COVERED[engine])} only; {parser!r} is unchecked",
        )
    if engine == "sglang":
        return sglang_tag(tools, parser, mode, strict_level)
    return vllm_tag(tools, parser, mode, strict_level, parallel_tool_calls)
