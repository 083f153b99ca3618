"""The structural tag each engine builds for a tool set with a tool-call parser (issue 35),
held to the installed engines' own functions, called in a subprocess of their venvs.

SGLang: ``FunctionCallParser.get_structure_constraint`` (with ``SGLANG_TOOL_STRICT_LEVEL``
set per case); vLLM: ``get_model_structural_tag`` plus the serving layer's single-call rule
(``parser/abstract_parser.py``). Compared through xgrammar's ``StructuralTag`` model.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import xgrammar as xgr
from engine_envs import engine_python

from schemaops.engines.structural_tags import (
    SGLANG_PARSERS,
    VLLM_PARSERS,
    derive_tag,
)
from schemaops.registry import load_registry

# reads the installed engines: runs after scripts/test.sh's background install (conftest.py)
pytestmark = pytest.mark.engine_env

# (parser, mode, strict level, strict tool names, parallel_tool_calls)
SG_CASES = [
    ["qwen25", "auto", 0, [], True],
    ["qwen25", "auto", 1, [], True],
    ["qwen25", "auto", 2, [], True],
    ["qwen25", "auto", 0, ["kb_search"], True],
    ["hermes", "auto", 0, ["get_order"], True],
    ["qwen", "required", 0, [], True],
    ["qwen25", "named:kb_search", 0, [], True],
]
VL_CASES = [
    ["hermes", "auto", 0, [], None],
    ["hermes", "auto", 1, [], None],
    ["hermes", "auto", 0, ["kb_search"], None],
    ["hermes", "auto", 0, [], False],
    ["hermes", "required", 2, [], None],
    ["hermes", "named:kb_search", 0, [], True],
]

_STRICT = (
    "ts = [dict(t, function=dict(t['function'], strict=True)) "
    "if t['function']['name'] in strict else t for t in tools]"
)
SGLANG = f"""
import json, os, sys
tools, cases = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.entrypoints.openai.protocol import Tool, ToolChoice
out = {{"parsers": list(FunctionCallParser.ToolCallParserEnum)}}
for parser, mode, level, strict, par in cases:
    os.environ["SGLANG_TOOL_STRICT_LEVEL"] = str(level)
    {_STRICT}
    choice = mode if mode in ("auto", "required") else ToolChoice.model_validate(
        {{"type": "function", "function": {{"name": mode[6:]}}}})
    c = FunctionCallParser([Tool.model_validate(t) for t in ts], parser).get_structure_constraint(
        choice, parallel_tool_calls=par)
    out[json.dumps([parser, mode, level, strict, par])] = (
        None if c is None else [c[0], c[1].model_dump(by_alias=True)])
print(json.dumps(out))
"""

VLLM = f"""
import json, sys
from vllm.entrypoints.openai.chat_completion.protocol import (
    ChatCompletionNamedToolChoiceParam, ChatCompletionToolsParam)
from vllm.tool_parsers import _TOOL_PARSERS_TO_REGISTER
from vllm.tool_parsers.structural_tag_registry import (
    get_model_structural_tag, limit_to_single_tool_call)
from vllm.tool_parsers.tool_strict_level import ToolStrictLevel
tools, cases = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
out = {{"parsers": list(_TOOL_PARSERS_TO_REGISTER)}}
for parser, mode, level, strict, par in cases:
    {_STRICT}
    objs = [ChatCompletionToolsParam.model_validate(t) for t in ts]
    choice = mode if mode in ("auto", "required") else (
        ChatCompletionNamedToolChoiceParam.model_validate(
            {{"type": "function", "function": {{"name": mode[6:]}}}}))
    lvl = ToolStrictLevel(level)
    if par is False:  # parser/abstract_parser.py: one call needs the envelope (FUNCTION)
        lvl = max(lvl, ToolStrictLevel.FUNCTION)
    tag = get_model_structural_tag(parser, objs, choice, reasoning=False, strict_level=lvl)
    if tag is not None and par is False:
        limit_to_single_tool_call(tag)
    out[json.dumps([parser, mode, level, strict, par])] = (
        None if tag is None else tag.model_dump(mode="json"))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def tools(registry_dir: Path) -> list[dict]:
    return load_registry(registry_dir).toolset("support_agent").request_tools()


def _strict(tools: list[dict], names: list[str]) -> list[dict]:
    return [
        dict(t, function=dict(t["function"], strict=True)) if t["function"]["name"] in names else t
        for t in tools
    ]


def _engine(engine: str, script: str, tools: list[dict], cases: list, tmp_path: Path) -> dict:
    py = engine_python(engine)
    f = tmp_path / "tools.json"
    f.write_text(json.dumps(tools))
    run = subprocess.run(
        [str(py), "-c", script, str(f), json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _same(ours: dict, theirs: dict) -> bool:
    a = xgr.StructuralTag.model_validate(ours).model_dump(mode="json")
    return a == xgr.StructuralTag.model_validate(theirs).model_dump(mode="json")


def test_sglang_tag_equals_the_installed_engine(tools, tmp_path) -> None:
    theirs = _engine("sglang", SGLANG, tools, SG_CASES, tmp_path)
    assert theirs.pop("parsers") == SGLANG_PARSERS
    for parser, mode, level, strict, par in SG_CASES:
        got = theirs[json.dumps([parser, mode, level, strict, par])]
        ours = derive_tag("sglang", _strict(tools, strict), mode, parser, level, par)
        if got is None:
            assert ours.tag is None and "unconstrained" in ours.note, (parser, mode, level)
            continue
        assert got[0] == "structural_tag"
        # the legacy shape, key for key (SGLang json.dumps it as the grammar cache key)
        assert json.dumps(ours.tag) == json.dumps(got[1]), (parser, mode, level, strict)


def test_vllm_tag_equals_the_installed_engine(tools, tmp_path) -> None:
    theirs = _engine("vllm", VLLM, tools, VL_CASES, tmp_path)
    assert theirs.pop("parsers") == VLLM_PARSERS
    for parser, mode, level, strict, par in VL_CASES:
        got = theirs[json.dumps([parser, mode, level, strict, par])]
        ours = derive_tag("vllm", _strict(tools, strict), mode, parser, level, par)
        if got is None:
            assert ours.tag is None and "unconstrained" in ours.note, (mode, level, par)
            continue
        assert ours.tag is not None and _same(ours.tag, got), (mode, level, strict, par)


def test_auto_unconstrained_by_default_and_parsers_not_covered(tools) -> None:
    for engine in ("sglang", "vllm"):
        t = derive_tag(engine, tools, "auto")
        assert t.tag is None and "strict" in t.note
    assert "not covered" in derive_tag("sglang", tools, "auto", "llama3").note
    assert "ships no tool parser" in derive_tag("vllm", tools, "auto", "qwen25").note
