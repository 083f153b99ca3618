"""The JSON schema each engine compiles for a tool set (issue 35), held to the engines' own code.

The installed SGLang and vLLM (the dev-server environments) import without a GPU, so their
``get_json_schema_constraint`` / ``get_json_schema_from_tools`` are called directly, in a
subprocess of their own venv, on the shipped tool set, and compared key order and all.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from engine_envs import engine_python

from schemaops.engines.tool_schema import AUTO_NOTE, derive, parse_mode
from schemaops.registry import load_registry

# reads the installed engines: runs after scripts/test.sh's background install (conftest.py)
pytestmark = pytest.mark.engine_env

CASES = [
    ("required", True),
    ("required", False),
    ("named:get_order", True),
    ("named:kb_search", False),
]

SGLANG = """
import json, sys
from sglang.srt.function_call.utils import get_json_schema_constraint
from sglang.srt.entrypoints.openai.protocol import Tool, ToolChoice
tools, cases = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
out = {}
for mode, par in cases:
    objs = [Tool.model_validate(t) for t in tools]
    choice = "required" if mode == "required" else ToolChoice.model_validate(
        {"type": "function", "function": {"name": mode[6:]}})
    out[f"{mode}|{par}"] = get_json_schema_constraint(objs, choice, parallel_tool_calls=par)
print(json.dumps(out))
"""

VLLM = """
import json, sys
from vllm.tool_parsers.utils import get_json_schema_from_tools
from vllm.entrypoints.openai.chat_completion.protocol import (
    ChatCompletionNamedToolChoiceParam, ChatCompletionToolsParam)
tools, cases = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
out = {}
for mode, par in cases:
    objs = [ChatCompletionToolsParam.model_validate(t) for t in tools]
    named = ChatCompletionNamedToolChoiceParam
    choice = "required" if mode == "required" else named.model_validate(
        {"type": "function", "function": {"name": mode[6:]}})
    out[f"{mode}|{par}"] = get_json_schema_from_tools(choice, objs, parallel_tool_calls=par)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def tools(registry_dir: Path) -> list[dict]:
    return load_registry(registry_dir).toolset("support_agent").request_tools()


@pytest.mark.parametrize("engine,script", [("sglang", SGLANG), ("vllm", VLLM)])
def test_derivation_equals_the_installed_engine(engine, script, tools, tmp_path) -> None:
    py = engine_python(engine)
    f = tmp_path / "tools.json"
    f.write_text(json.dumps(tools))
    run = subprocess.run(
        [str(py), "-c", script, str(f), json.dumps(CASES)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    theirs = json.loads(run.stdout.strip().splitlines()[-1])
    for mode, par in CASES:
        ours = derive(engine, tools, mode, par).schema
        # the same object and the same key order (key order is generation order)
        assert json.dumps(ours) == json.dumps(theirs[f"{mode}|{par}"]), (engine, mode, par)


def test_required_names_are_enums_and_defs_differ_by_engine(tools) -> None:
    sg = derive("sglang", tools, "required").schema
    vl = derive("vllm", tools, "required").schema
    names = [b["properties"]["name"]["enum"] for b in sg["items"]["anyOf"]]
    assert names == [[t["function"]["name"]] for t in tools]
    assert "maxItems" not in sg and sg["minItems"] == 1
    assert "common__order_id" in sg["$defs"] and "common__order_id" in vl["$defs"]
    # SGLang leaves each tool's $defs in place; vLLM pops them into the root
    assert "$defs" in sg["items"]["anyOf"][0]["properties"]["parameters"]
    assert "$defs" not in vl["items"]["anyOf"][0]["properties"]["parameters"]
    # the caller's tools are never mutated (vLLM pops from its own copy)
    assert "$defs" in tools[0]["function"]["parameters"]


def test_named_and_auto_modes(tools) -> None:
    assert derive("vllm", tools, "named:get_order").schema == tools[0]["function"]["parameters"]
    sg = derive("sglang", tools, "named:get_order", parallel_tool_calls=False).schema
    assert sg["maxItems"] == 1 and sg["items"]["properties"]["name"]["enum"] == ["get_order"]
    for engine in ("sglang", "vllm"):
        auto = derive(engine, tools, "auto")
        assert auto.schema is None and auto.note == AUTO_NOTE and "unconstrained" in auto.note
    with pytest.raises(ValueError, match="expected required"):
        parse_mode("named:")
