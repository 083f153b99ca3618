"""``warm`` plans the registry's tool sets (``NAME.tools.json``): which requests, which modes.

No server here: what is sent is checked against the registry and against the keys the engine
models derive (``engines/tool_schema.py``, held to the installed engines by
``tests/test_engines_tool_schema.py``). The server side is ``tests/integration/
test_warm_toolsets_server.py`` (SGLang) and ``test_vllm_warm_toolsets.py`` (vLLM).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.engines.tool_schema import sglang_schema, vllm_schema
from schemaops.errors import InputError
from schemaops.registry import load_registry
from schemaops.warm import WarmOptions, WarmSettings, build_request
from schemaops.warm.cache import requests_of
from schemaops.warm.engine import Cell, ServerRun
from schemaops.warm.report import document, row
from schemaops.warm.run import check, plan

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "schemas"
TOOLS = ["get_order", "search_orders", "create_ticket", "issue_refund", "kb_search"]


def _settings(reg: Path = SCHEMAS, **extra: object) -> WarmSettings:
    return WarmSettings(options=WarmOptions(servers=["http://127.0.0.1:9"]), registry=reg, **extra)


def _tool_items(engine: str | None = "sglang", **extra: object) -> list:
    return [it for it in plan(_settings(**extra), print, engine) if "toolset" in it.extra]


def test_a_whole_registry_warms_its_tool_set_with_required_by_default() -> None:
    items = plan(_settings(), print, "sglang")
    reg = load_registry(SCHEMAS)
    assert [it.name for it in items if "toolset" not in it.extra] == [s.name for s in reg]
    (tool,) = [it for it in items if "toolset" in it.extra]
    assert tool.name == "support_agent.tools[sglang required]"
    assert tool.api == "openai" and tool.key is None  # the server derives the key
    # exactly the application's fragment: the registry's tools (refs bundled) + tool_choice
    ts = reg.toolsets["support_agent"]
    assert tool.fragment == {"tools": ts.request_tools(), "tool_choice": "required"}
    assert tool.extra["toolset"] == {
        "toolset": "support_agent",
        "mode": "required",
        "tool_choice": "required",
        "tools": 5,
        "toolset_hash": ts.hash,
        "parallel_tool_calls": None,
    }


def test_the_request_is_a_chat_completion_with_tools_and_no_schema_field() -> None:
    (tool,) = _tool_items()
    path, body, headers = build_request(tool, model="m", dp_rank=1)
    assert path == "/v1/chat/completions" and headers == {"X-Data-Parallel-Rank": "1"}
    assert body["tools"] == tool.fragment["tools"] and body["tool_choice"] == "required"
    assert body["max_tokens"] == 1 and body["model"] == "m"
    assert "response_format" not in body and "structured_outputs" not in body
    # every $ref is bundled: the server cannot follow one to another file
    assert '"$ref": "get_order.json"' not in json.dumps(body)


def test_named_is_every_tool_in_turn_and_named_fn_one() -> None:
    names = [it.name for it in _tool_items("vllm", tool_choice=("named",))]
    assert names == [f"support_agent.tools[vllm named:{t}]" for t in TOOLS]
    (one,) = _tool_items(tool_choice=("named:kb_search", "named:kb_search"))
    assert one.fragment["tool_choice"] == {"type": "function", "function": {"name": "kb_search"}}
    both = _tool_items(tool_choice=("required", "named:get_order"))
    assert [it.extra["toolset"]["mode"] for it in both] == ["required", "named:get_order"]


def test_named_under_a_parser_sends_the_named_function_and_names_the_row_as_check() -> None:
    (one,) = _tool_items("sglang", tool_choice=("named:get_order:qwen25",))
    assert one.fragment["tool_choice"] == {"type": "function", "function": {"name": "get_order"}}
    assert one.name == "support_agent.tools[sglang named:get_order:qwen25]"


def test_each_mode_is_its_own_cache_key_in_both_engines() -> None:
    """One request per key: the modes derive different grammars (SGLang and vLLM alike), and
    parallel_tool_calls false adds maxItems 1 (another key), so none is sent twice."""
    items = _tool_items(tool_choice=("required", "named"))
    items += _tool_items(tool_choice=("required",), parallel_tool_calls=False)
    for derive in (sglang_schema, vllm_schema):
        keys = []
        for it in items:
            parallel = it.fragment.get("parallel_tool_calls", True)
            keys.append(
                json.dumps(derive(it.fragment["tools"], it.fragment["tool_choice"], parallel))
            )
        assert len(set(keys)) == len(items) == 7
    assert len({it.identity for it in items}) == 7
    assert items[-1].fragment["parallel_tool_calls"] is False


def test_none_warms_no_tool_set_and_the_engine_is_left_out_of_names_when_unknown() -> None:
    assert _tool_items(tool_choice=("none",)) == []
    (tool,) = _tool_items(None)
    assert tool.name == "support_agent.tools[required]"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"tool_choice": ("sometimes",)}, "expected required, required:PARSER"),
        ({"tool_choice": ("none", "required")}, "give it alone"),
        ({"tool_choice": ("named:",)}, "expected required, required:PARSER"),
        ({"tool_choice": ("required",), "schemas": ("get_order",)}, "--schema selects"),
        ({"tool_choice": ("required",), "from_log": Path("x.jsonl")}, "--from-log"),
    ],
)
def test_settings_that_cannot_work_are_refused_before_sending(extra: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        check(_settings(**extra))


def test_a_named_function_no_tool_set_has_is_refused() -> None:
    with pytest.raises(InputError, match="no tool set has a function 'get_ordr'"):
        plan(_settings(tool_choice=("named:get_ordr",)), print)


def test_explicit_tool_choice_on_a_registry_without_tool_sets(tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    reg.mkdir()
    (reg / "a.json").write_text(json.dumps({"type": "object"}))
    assert [it.name for it in plan(_settings(reg), print)] == ["a"]  # default: nothing to add
    with pytest.raises(InputError, match="has no tool sets"):
        plan(_settings(reg, tool_choice=("required",)), print)


def test_a_registry_of_tool_sets_only_is_warmed(tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    reg.mkdir()
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    (reg / "agent.tools.json").write_text(json.dumps([tool]))
    assert [it.name for it in plan(_settings(reg), print, "vllm")] == ["agent.tools[vllm required]"]


def test_schema_selection_warms_schemas_only() -> None:
    items = plan(_settings(schemas=("get_order",)), print)
    assert [it.name for it in items] == ["get_order"]


def test_the_legacy_tools_file_still_sends_its_array_verbatim(tmp_path: Path) -> None:
    tools = [{"type": "function", "function": {"name": "x", "parameters": {"type": "object"}}}]
    f = tmp_path / "tools.json"
    f.write_text(json.dumps(tools))
    settings = _settings(tools="required", tools_file=f, tool_choice=("none",))
    settings.options.api = "openai"
    items = plan(settings, print)
    assert [it.name for it in items] == ["tools:required"]
    assert items[0].fragment["tools"] == tools


def test_tool_sets_count_against_vllms_cache_with_an_unknown_footprint() -> None:
    """The engine decision (``engines.decision``) gets the tool set as one more cached
    request; its key is the server's, so its footprint is unknown, never left out."""
    from schemaops.engines.decision import decide

    (tool,) = _tool_items("vllm")
    requests, by_name = requests_of([tool])
    (req,) = requests
    assert req.key is None and by_name[req.name] is tool
    assert len(req.schemas) == 5  # each tool's parameters: what vLLM's auto routes
    decision = decide("vllm", requests, "auto")
    fit = decision.cache["xgrammar"]
    assert fit.footprint is not None
    assert fit.footprint.unknown == {req.name: "the server derives this key (tools)"}


def _run(cell: Cell) -> ServerRun:
    run = ServerRun(url="http://127.0.0.1:9", ready=True, engine="sglang")
    run.base_ms = {"openai": 20.0}
    return run


def test_the_row_carries_the_tool_set_facts_and_explains_an_unseen_compile() -> None:
    (tool,) = _tool_items()
    run = _run(Cell())
    run.cells[tool.identity] = [
        Cell(status="warmed", cold_ms=30, cold_share_ms=30, probe_ms=25, proof="unproven")
    ]
    r = row(tool, run)
    assert r["schema"] == "support_agent.tools[sglang required]" and r["api"] == "openai"
    assert r["toolset"]["toolset"] == "support_agent" and r["toolset"]["tools"] == 5
    assert "key_chars" not in r
    assert "structural-tag tool parser" in r["note"]
    run.cells[tool.identity][0].proof = "hit"
    assert "note" not in row(tool, run)
    doc = document([tool], [run], WarmOptions(servers=[run.url]), 1.0)
    assert doc["summary"]["tool_sets"] == 1 and doc["summary"]["schemas"] == 1


def test_the_cli_refuses_a_bad_tool_choice_with_exit_2() -> None:
    r = CliRunner().invoke(
        app, ["warm", "--server", "http://127.0.0.1:9", "--tool-choice", "maybe", "--json"]
    )
    assert r.exit_code == 2, r.output
    assert "--tool-choice 'maybe'" in r.output


@pytest.mark.parametrize(
    ("message", "flag", "not_flag"),
    [  # vLLM 0.32.0's own 400s (vllm/renderers/online_renderer.py), as the dev server answers
        (
            'tool_choice="required" requires --tool-call-parser to be set',
            "required or a named function only when started with --enable-auto-tool-choice "
            "--tool-call-parser",
            "serves tool_choice auto",
        ),
        (
            'tool_choice=function "f" requires --tool-call-parser to be set',
            "(vLLM 0.32 loads no tool parser without both)",
            "serves tool_choice auto",
        ),
        (
            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be '
            "set",
            "--enable-auto-tool-choice --tool-call-parser <the model's parser>",
            "required or a named function",
        ),
    ],
)
def test_a_refused_tool_choice_names_the_flag_that_mode_needs(
    message: str, flag: str, not_flag: str
) -> None:
    """Every mode needs --enable-auto-tool-choice --tool-call-parser on vLLM 0.32 (its parser
    manager loads no tool parser without both); the hint says which mode was refused."""
    from schemaops.http.client import Attempt, Result
    from schemaops.http.retry import AttemptOutcome

    cell = Cell()
    cell.record(Result(Attempt(AttemptOutcome.VERDICT, 400, 12.0, f"HTTP 400: {message}"), 1))
    assert cell.status == "failed" and cell.error is not None
    assert flag in cell.error and not_flag not in cell.error


def test_a_tool_set_is_judged_against_the_same_tools_with_tool_choice_none() -> None:
    """The server handles the tools on every request (SGLang validates each tool's parameters
    and renders them): that cost is in the tools baseline, not in the compile."""
    from schemaops.warm.baseline import base_for, tool_baseline_item, tools_key

    (tool,) = _tool_items(tool_choice=("required",), parallel_tool_calls=False)
    (schema,) = [it for it in plan(_settings(schemas=("get_order",)), print)]
    ref = tool_baseline_item(tool)
    assert ref.fragment == {**tool.fragment, "tool_choice": "none"}
    assert tools_key(ref) == tools_key(tool) and tools_key(schema) is None
    run = _run(Cell())
    run.base_ms = {"openai": 50.0, "native": 40.0}
    assert base_for(run, tool) == 50.0  # not measured (yet): the API path's
    run.tool_base_ms[str(tools_key(tool))] = 200.0
    assert base_for(run, tool) == 200.0 and base_for(run, schema) == 40.0
    named = _tool_items(tool_choice=("named:kb_search",), parallel_tool_calls=False)[0]
    assert base_for(run, named) == 200.0  # one baseline per tools array, whatever the mode


def test_a_parser_named_mode_sends_the_plain_choice_and_keeps_checks_row_name() -> None:
    """``required:hermes`` (``check``'s case for a server with that parser) sends
    ``tool_choice: "required"``: the server's own parser decides what it compiles."""
    (tool,) = _tool_items("vllm", tool_choice=("required:hermes",))
    assert tool.name == "support_agent.tools[vllm required:hermes]"
    assert tool.fragment["tool_choice"] == "required"
    (auto,) = _tool_items("vllm", tool_choice=("auto:hermes",))
    assert auto.fragment["tool_choice"] == "auto"
    with pytest.raises(InputError, match="required:PARSER"):
        check(_settings(tool_choice=("required:",)))
