"""``probe --registry``: the ``tools.*`` paths sent with the registry's own tool sets (issue 35).

Request construction and the judgement of answers, offline: the bodies judged here are the
two shapes a real server answers with (an OpenAI ``tool_calls`` message, SGLang's
``[{"name", "parameters"}]`` content without a tool-call parser), built as dicts because a
random model cannot be made to call a given function on demand. The probe against the real
SGLang dev server is ``tests/integration/test_probe_toolsets_server.py`` (marked integration).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemaops.errors import InputError
from schemaops.probe import canary as cn
from schemaops.probe.paths import BY_NAME, PATHS, TOOL_NAME, read
from schemaops.probe.run import summarise
from schemaops.probe.toolsets import judge_offered, load_toolsets, with_toolsets

REPO = Path(__file__).resolve().parents[1]
SHIPPED = ("get_order", "search_orders", "create_ticket", "issue_refund", "kb_search")


@pytest.fixture(scope="module")
def specs():
    return with_toolsets(list(PATHS), load_toolsets(REPO / "schemas"))


def _tool_specs(specs, name):
    return [s for s in specs if s.name == name]


def test_tools_paths_carry_the_registry_tool_set_beside_the_canary(specs) -> None:
    (req,) = _tool_specs(specs, "tools.required")
    assert req.toolset == "support_agent" and set(req.offered) == set(SHIPPED)
    body = req.build(cn.make("json", cn.Tokens()), 200, "m")
    names = [t["function"]["name"] for t in body["tools"]]
    assert names == [*SHIPPED, TOOL_NAME]
    assert body["tool_choice"] == "required"
    # the set is sent as the request carries it: refs bundled (issue_refund's money $defs)
    refund = body["tools"][3]["function"]["parameters"]
    assert "$defs" in refund and "get_order.json" not in json.dumps(body["tools"])
    (named,) = _tool_specs(specs, "tools.named_strict")
    nb = named.build(cn.make("json", cn.Tokens()), 200, "m")
    assert nb["tool_choice"] == {"type": "function", "function": {"name": TOOL_NAME}}
    assert nb["tools"][-1]["function"]["strict"] is True
    # the other paths are untouched, and without tool sets nothing changes
    assert _tool_specs(specs, "generate.json_schema") == [BY_NAME["generate.json_schema"]]
    assert with_toolsets(list(PATHS), []) == list(PATHS)
    assert len(specs) == len(PATHS)  # one tool set: one row per tools path


def test_a_registry_that_does_not_load_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(InputError):
        load_toolsets(tmp_path)


def _chat(name: str, args: str) -> dict:
    call = {"type": "function", "function": {"name": name, "arguments": args}}
    msg = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"choices": [{"message": msg, "finish_reason": "tool_calls"}]}


def _judge(spec, body):
    reading = read(spec, body)
    assert not isinstance(reading, str), reading
    return judge_offered(spec, reading)


def test_calls_to_the_set_are_judged_without_a_false_unconstrained(specs) -> None:
    (req,) = _tool_specs(specs, "tools.required")
    ok = json.dumps({"order_id": "ORD-12345678"})
    verdict, why = _judge(req, _chat("get_order", ok))
    assert verdict == "inconclusive" and "valid arguments" in why
    verdict, why = _judge(req, _chat("get_order", json.dumps({"order_id": 7})))
    assert verdict == "inconclusive" and "leaky" in why
    verdict, why = _judge(req, _chat("delete_everything", "{}"))
    assert verdict == "broken" and "did not offer" in why
    verdict, why = _judge(req, _chat("get_order", "{not json"))
    assert verdict == "broken" and "not JSON" in why
    # the canary's own call is the canary's to judge
    assert _judge(req, _chat(TOOL_NAME, "{}")) is None
    (named,) = _tool_specs(specs, "tools.named")
    verdict, why = _judge(named, _chat("get_order", ok))
    assert verdict == "broken" and TOOL_NAME in why


def test_sglang_array_content_names_a_function_of_the_set(specs) -> None:
    (req,) = _tool_specs(specs, "tools.required")
    content = json.dumps([{"name": "kb_search", "parameters": {"query": "refund policy"}}])
    body = {"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}
    reading = read(req, body)
    assert reading.tool_call and reading.tool_name == "kb_search"
    verdict, _ = judge_offered(req, reading)
    assert verdict == "inconclusive"
    # the bare canary path still reads only the canary function from that array
    assert read(BY_NAME["tools.required"], body).tool_call is False


def test_failed_names_say_which_tool_set() -> None:
    doc = {
        "paths": [
            {"path": "tools.required", "toolset": "support_agent", "verdict": "unconstrained"},
            {"path": "generate.json_schema", "verdict": "enforced"},
        ]
    }
    summarise(doc, None)
    assert doc["failed"] == ["tools.required[support_agent]"]
    summarise(doc, ["tools.required"])
    assert doc["failed"] == ["tools.required[support_agent]"]


def test_prometheus_keeps_two_tool_sets_of_one_path_apart() -> None:
    from schemaops.metrics import probe_metrics

    doc = {
        "server": "http://127.0.0.1:1",
        "engine": "sglang",
        "paths": [
            {"path": "tools.required", "toolset": "a", "verdict": "enforced"},
            {"path": "tools.required", "toolset": "b", "verdict": "unconstrained"},
        ],
    }
    reg = probe_metrics(doc)
    enforced = {
        s.labels["path"]: s.value
        for m in reg.collect()
        if m.name == "schemaops_probe_enforced"
        for s in m.samples
    }
    assert enforced == {"tools.required[a]": 1.0, "tools.required[b]": 0.0}


def test_a_raw_control_character_in_the_sets_arguments_is_a_leak_not_unconstrained(
    specs,
) -> None:
    """Seen on the SGLang dev server (xgrammar, tools.required_strict with support_agent):
    ``[{"name": "kb_search", "parameters": {"query": "...<TAB>..."}}]``: a raw tab inside a
    string, which xgrammar lets through where the string has minLength/maxLength (probe.md's
    ``leaky``). It is no evidence that the grammar was not applied."""
    (req,) = _tool_specs(specs, "tools.required_strict")
    content = '[{"name": "kb_search", "parameters": {"query": "refund\tpolicy"}}]'
    body = {"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}
    reading = read(req, body)
    assert reading.tool_call and reading.tool_name == "kb_search"
    verdict, why = judge_offered(req, reading)
    assert verdict == "inconclusive", why
    # with a tool-call parser the arguments string carries the raw tab the same way
    verdict, why = _judge(req, _chat("kb_search", '{"query": "refund\tpolicy"}'))
    assert verdict == "inconclusive" and "control character" in why


def test_sglangs_array_cut_off_inside_a_leaky_string_is_no_evidence(specs) -> None:
    """Seen in a CI run and again on the SGLang dev server (tools.required with support_agent,
    finish_reason ``length``): ``[{"name": "create_ticket", "parameters": {... "<TAB>...`` cut
    off by the token budget inside a string holding xgrammar's raw tab. The cut first call
    names a function of the set: it is that function's call, cut off (``inconclusive``), not
    free text that breaks the canary (it was judged ``broken``: a false ``unconstrained``)."""
    (req,) = _tool_specs(specs, "tools.required")
    content = '[{"name": "create_ticket", "parameters": {"customer_id": "Fcc", "subject": "a\tb'
    body = {"choices": [{"message": {"content": content}, "finish_reason": "length"}]}
    reading = read(req, body)
    assert reading.tool_call and reading.tool_name == "create_ticket" and reading.truncated
    verdict, why = judge_offered(req, reading)
    assert verdict == "inconclusive" and "cut off" in why
    # not cut off, the same broken text stays the canary's to judge as text
    done = {"choices": [{"message": {"content": content}, "finish_reason": "stop"}]}
    assert read(req, done).tool_call is False
