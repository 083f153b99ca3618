"""``audit`` on tool calls, beyond ``--tools``: the tool choice (``no_tool_call``), the tool set
a record is judged against (a record field, the request's own tools), and agent steps
(issue 35).

Real files written here, the shipped registry ``schemas/`` (``support_agent.tools.json``), the
real validators, the real CLI in a subprocess and the library. Before this, a response with no
call where the request required one was judged as a text answer (a prose answer a
``json_parse_failure`` of the record, never "no call"), a text answer under ``auto`` with
``--tools`` was a parse failure, and a record's request ``tools`` were not read at all.
"""

from __future__ import annotations

import json
from pathlib import Path

from schemaops.audit import AuditOptions
from schemaops.audit.report.markdown import render_markdown
from schemaops.audit.run.pipeline import run_audit
from schemaops.registry.loader import inspect_registry
from tests.cli_support import REPO, run_cli

SCHEMAS = str(REPO / "schemas")
#: the registry tool set as a request sends it (``registry export``: parameters bundled)
SUPPORT = inspect_registry(SCHEMAS, examples=False)[0].toolsets["support_agent"].request_tools()
#: a tool set no registry holds: one function with its own parameters
OWN_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "set_volume",
            "parameters": {
                "type": "object",
                "properties": {"level": {"type": "integer", "minimum": 0, "maximum": 10}},
                "required": ["level"],
                "additionalProperties": False,
            },
        },
    }
]


def _chat(calls: list[tuple[str, str]] | None, content: str | None = None) -> dict:
    msg: dict = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ]
    return {"choices": [{"index": 0, "message": msg, "finish_reason": "stop"}]}


def _write(tmp_path: Path, recs: list[dict], name: str = "log.jsonl") -> Path:
    f = tmp_path / name
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return f


def _audit(f: Path, **kw) -> dict:
    return run_audit(str(f), AuditOptions(registry=SCHEMAS, **kw)).to_json()


GOOD_ORDER = ("get_order", '{"order_id": "ORD-12345678"}')


def test_required_but_no_call_is_no_tool_call_counted_in_p(tmp_path: Path):
    req = {"tools": SUPPORT, "tool_choice": "required"}
    recs = [
        {"request": req, "response": _chat([GOOD_ORDER])},
        {"request": req, "response": _chat(None, "I can't look that up, sorry.")},
    ]
    doc = _audit(_write(tmp_path, recs))
    assert doc["input_errors"] == 0
    assert doc["outputs"] == 2 and doc["ok"] == 1
    assert doc["categories"]["no_tool_call"] == 1
    assert "json_parse_failure" not in doc["categories"]  # the prose is not judged as JSON
    # the request's tools are the registry set support_agent, so it is named by it
    assert doc["tool_set"] == "support_agent"
    assert doc["by_tool"]["(no call)"]["categories"] == {"ok": 0, "no_tool_call": 1}
    assert doc["by_tool_set"]["support_agent"]["categories"]["no_tool_call"] == 1


def test_named_choice_attributes_no_call_to_the_named_tool(tmp_path: Path):
    req = {
        "tools": SUPPORT,
        "tool_choice": {"type": "function", "function": {"name": "kb_search"}},
    }
    doc = _audit(_write(tmp_path, [{"request": req, "response": _chat(None, "Hello!")}]))
    assert doc["categories"] == {"ok": 0, "no_tool_call": 1}
    assert doc["by_tool"]["kb_search"]["categories"]["no_tool_call"] == 1


def test_auto_text_answer_is_not_a_failure(tmp_path: Path):
    req = {"tools": SUPPORT, "tool_choice": "auto"}
    recs = [
        {"request": req, "response": _chat(None, "Your order shipped yesterday.")},
        {"request": req, "response": _chat([GOOD_ORDER])},
    ]
    doc = _audit(_write(tmp_path, recs))
    assert doc["outputs"] == 1 and doc["ok"] == 1 and doc["p"] == 1.0
    assert "json_parse_failure" not in doc["categories"]
    assert doc["tool_steps"]["steps"] == 2 and doc["tool_steps"]["ok"] == 2


def test_tool_choice_option_for_logs_of_responses_only(tmp_path: Path):
    f = _write(tmp_path, [_chat(None, "no idea"), _chat([GOOD_ORDER])])
    doc = _audit(f, tools="support_agent", tool_choice="required")
    assert doc["categories"]["no_tool_call"] == 1 and doc["outputs"] == 2
    doc = _audit(f, tools="support_agent", tool_choice="named:get_order")
    assert doc["by_tool"]["get_order"]["categories"]["no_tool_call"] == 1
    doc = _audit(f, tools="support_agent", tool_choice="auto")
    assert doc["outputs"] == 1 and doc["p"] == 1.0
    # a request's own tool_choice wins over the option
    rec = {"request": {"tools": SUPPORT, "tool_choice": "auto"}, "response": _chat(None, "hi")}
    doc = _audit(
        _write(tmp_path, [rec, _chat([GOOD_ORDER])], "m.jsonl"),
        tools="support_agent",
        tool_choice="required",
    )
    assert "no_tool_call" not in doc["categories"]
    r = run_cli("audit", str(f), "--registry", SCHEMAS, "--tool-choice", "sometimes")
    assert r.returncode == 2 and "--tool-choice" in r.stderr and "Traceback" not in r.stderr


def test_provider_tool_choice_shapes(tmp_path: Path):
    anthropic = {
        "request": {
            "tools": [{"name": "get_order", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any"},
        },
        "response": {
            "type": "message",
            "content": [{"type": "text", "text": "Sure."}],
            "stop_reason": "end_turn",
        },
    }
    gemini = {
        "request": {
            "tools": [{"functionDeclarations": [{"name": "get_order"}, {"name": "kb_search"}]}],
            "toolConfig": {
                "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["kb_search"]}
            },
        },
        "response": {"candidates": [{"content": {"parts": [{"text": "hm"}]}}]},
    }
    responses = {
        "request": {
            "tools": [{"type": "function", "name": "get_order", "parameters": {"type": "object"}}],
            "tool_choice": "required",
        },
        "response": {
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "x"}]}]
        },
    }
    for kind, rec, row in (
        ("anthropic", anthropic, "(no call)"),
        ("gemini", gemini, "kb_search"),
        ("responses", responses, "(no call)"),
    ):
        doc = _audit(_write(tmp_path, [rec], f"{kind}.jsonl"))
        assert doc["categories"] == {"ok": 0, "no_tool_call": 1}, kind
        assert doc["by_tool"][row]["n"] == 1, kind


def test_request_tools_not_in_the_registry_are_judged_on_their_own(tmp_path: Path):
    req = {"tools": OWN_TOOLS}
    recs = [
        {"request": req, "response": _chat([("set_volume", '{"level": 4}')])},
        {"request": req, "response": _chat([("set_volume", '{"level": 11}')])},
        {"request": req, "response": _chat([("get_order", '{"order_id": "ORD-12345678"}')])},
    ]
    doc = _audit(_write(tmp_path, recs))
    assert doc["input_errors"] == 0 and doc["outputs"] == 3 and doc["ok"] == 1
    (name,) = doc["tool_sets"]
    assert name.startswith("offered-")
    # get_order is a registry schema, but this request did not offer it: unknown_tool
    assert doc["unknown_tools"] == {"get_order": 1}
    assert doc["by_tool"]["set_volume"]["categories"]["schema_violation:maximum"] == 1
    assert doc["paths"][0]["path"] == "/level"


def test_record_field_names_a_registry_tool_set(tmp_path: Path):
    recs = [
        {"toolset": "support_agent", **_chat([("get_ordr", "{}")])},
        {"my_tools": "support_agent", **_chat([("get_ordr", "{}")])},
        {"toolset": "no_such_set", **_chat([GOOD_ORDER])},
    ]
    f = _write(tmp_path, recs)
    doc = _audit(f)
    assert doc["unknown_tools"] == {"get_ordr": 1}
    assert doc["input_errors"] == 1  # a set the registry lacks: the record's error, not p
    assert "no_such_set" in doc["input_error_lines"][0]["message"]
    doc = _audit(f, tools_field="my_tools")
    assert doc["unknown_tools"] == {"get_ordr": 1}
    # --tools wins over the field
    doc = _audit(f, tools="support_agent")
    assert doc["unknown_tools"] == {"get_ordr": 2} and doc["input_errors"] == 0


def test_agent_step_p_and_its_compound(tmp_path: Path):
    bad = ("get_order", '{"order_id": "nope"}')
    recs = [
        _chat([GOOD_ORDER, GOOD_ORDER]),  # good step, two good calls
        _chat([GOOD_ORDER, bad]),  # a bad step: one of its parallel calls fails
        _chat([GOOD_ORDER]),
        _chat([("get_ordr", "{}")]),
    ]
    f = _write(tmp_path, recs)
    doc = _audit(f, tools="support_agent", steps=[1, 3])
    assert doc["outputs"] == 6 and doc["ok"] == 4  # per-call p: each parallel call counts
    st = doc["tool_steps"]
    assert st["steps"] == 4 and st["ok"] == 2 and st["p"] == 0.5
    assert st["compound"] == {"1": 0.5, "3": 0.125}
    assert doc["by_tool_set"]["support_agent"]["step_p"] == 0.5
    md = render_markdown(doc)
    assert "## Tool calls and agent steps" in md and "| p^3 |" in md and "12.50%" in md
    r = run_cli("audit", str(f), "--registry", SCHEMAS, "--tools", "support_agent", "--steps", "3")
    out = " ".join(r.stdout.split())
    assert r.returncode == 0 and "p^3" in out and "12.50%" in out
    assert "An agent step is one response" in out


def test_steps_agree_across_jobs(tmp_path: Path):
    req = {"tools": SUPPORT, "tool_choice": "required"}
    recs = [
        {"request": req, "response": _chat([GOOD_ORDER, ("get_ordr", "{}")])},
        {"request": req, "response": _chat(None, "no")},
        {"request": {"tools": OWN_TOOLS}, "response": _chat([("set_volume", '{"level": 1}')])},
    ]
    f = _write(tmp_path, recs * 300)
    one, two = (_audit(f, jobs=j) for j in (1, 2))
    assert two["jobs"] == 2
    for key in ("tool_steps", "by_tool", "by_tool_set", "unknown_tools", "categories"):
        assert one[key] == two[key], key
    assert one["tool_steps"]["steps"] == 900 and one["tool_steps"]["ok"] == 300


def _sglang_line(json_schema: str, text: str, rid: str) -> str:
    """A ``request.finished`` line as SGLang 0.5.23's ``--log-requests-format json`` writes it
    (``utils/request_logger.py``; the shape tests/test_watch_sglang_log.py checks)."""
    doc = {
        "timestamp": "2026-12-03T17:00:00.000001",
        "event": "request.finished",
        "rid": rid,
        "obj": {"rid": rid, "text": "Hi", "sampling_params": {"json_schema": json_schema}},
        "out": {"text": text, "meta_info": {"finish_reason": {"type": "stop"}}},
    }
    return "[2026-12-03 17:00:00] " + json.dumps(doc) + "\n"


def test_sglang_request_log_of_tool_calls_is_judged_against_its_tools(tmp_path: Path):
    # The constraints SGLang 0.5.23 compiles for support_agent's request tools, made by its own
    # ``function_call/utils.get_json_schema_constraint`` in the dev server's environment:
    #   tools = [Tool(**t) for t in <support_agent request_tools()>]
    #   json.dumps(get_json_schema_constraint(tools, "required")) and, for the named choice,
    #   ToolChoice(type="function", function={"name": "kb_search"})
    made = json.loads((REPO / "tests" / "data" / "sglang_tool_constraints.json").read_text())
    assert made["sglang"] == "0.5.23"
    required, named = made["required"], made["named_kb_search"]
    f = tmp_path / "host_0.log"
    f.write_text(
        _sglang_line(
            required, '[{"name": "get_order", "parameters": {"order_id": "ORD-12345678"}}]', "a"
        )
        + _sglang_line(required, '[{"name": "get_ordr", "parameters": {}}]', "b")
        + _sglang_line(
            named, '[{"name": "kb_search", "parameters": {"query": "x", "top_k": 0}}]', "c"
        )
        + _sglang_line(named, "I will not search.", "d")
    )
    doc = _audit(f)
    assert doc["input_errors"] == 0 and doc["outputs"] == 4
    assert doc["tool_set"] == "support_agent"  # the tools read back are the registry set's
    assert doc["unknown_tools"] == {"get_ordr": 1}
    kb = doc["by_tool"]["kb_search"]["categories"]
    assert (
        kb.get("no_tool_call") == 1
        and sum(k for c, k in kb.items() if c.startswith("schema_violation")) == 1
    )
    assert doc["by_tool"]["get_order"]["ok"] == 1


def test_structured_answers_beside_tool_calls_keep_their_schema_and_are_no_steps(tmp_path: Path):
    # SGLang /generate records naming a registry schema, mixed with tool calls, under --tools:
    # the lean path counts most of them without reading them for calls, so none is a step
    plain = {"schema": "get_order", "text": '{"order_id": "ORD-12345678"}'}
    f = _write(tmp_path, [plain] * 50 + [_chat([GOOD_ORDER])])
    doc = _audit(f, tools="support_agent")
    assert doc["by_schema"]["get_order"]["outputs"] == 50
    assert doc["tool_steps"]["steps"] == 1


def test_steps_exact_when_workers_own_schemas(tmp_path: Path, monkeypatch):
    # workers that each own some schemas (routing.py): a response's calls to two functions
    # would be split between them; they stay with the worker of the line's range
    monkeypatch.setenv("SCHEMAOPS_AUDIT_ROUTE", "schema")
    bad = ("search_orders", '{"status": "lost"}')
    f = _write(tmp_path, [_chat([GOOD_ORDER, bad]), _chat([GOOD_ORDER])] * 200)
    one, two = (_audit(f, tools="support_agent", jobs=j) for j in (1, 2))
    assert two["jobs"] == 2
    assert one["tool_steps"] == two["tool_steps"]
    assert two["tool_steps"]["steps"] == 400 and two["tool_steps"]["ok"] == 200
    assert one["by_tool"] == two["by_tool"]


GOOD_REFUND_ARGS = '{"order_id": "ORD-12345678", "reason": "damaged"}'


def test_a_call_to_another_offered_function_under_a_named_choice_is_wrong_tool(tmp_path: Path):
    """tool_choice named get_order, and the model called kb_search (offered, valid arguments):
    the named constraint was not applied; that is a model failure (``wrong_tool``) counted in
    p, not an ok call. A call to a function not offered stays ``unknown_tool``."""
    named = {"type": "function", "function": {"name": "get_order"}}
    req = {"tools": SUPPORT, "tool_choice": named}
    recs = [
        {"request": req, "response": _chat([GOOD_ORDER])},
        {"request": req, "response": _chat([("kb_search", '{"query": "refund policy"}')])},
        {"request": req, "response": _chat([("get_ordr", '{"order_id": "ORD-12345678"}')])},
    ]
    doc = _audit(_write(tmp_path, recs))
    assert doc["input_errors"] == 0
    assert doc["outputs"] == 3 and doc["ok"] == 1
    assert doc["categories"]["wrong_tool"] == 1
    assert doc["categories"]["unknown_tool"] == 1
    assert doc["by_tool"]["kb_search"]["categories"]["wrong_tool"] == 1


def test_a_call_under_tool_choice_none_is_wrong_tool(tmp_path: Path):
    req = {"tools": SUPPORT, "tool_choice": "none"}
    recs = [
        {"request": req, "response": _chat(None, "Here is what I found.")},
        {"request": req, "response": _chat([GOOD_ORDER])},
    ]
    doc = _audit(_write(tmp_path, recs))
    assert doc["input_errors"] == 0
    assert doc["categories"].get("wrong_tool") == 1
    assert doc["outputs"] == 1 and doc["ok"] == 0  # the text answer is no tool output


def test_a_request_offering_one_function_twice_is_judged_not_a_traceback(tmp_path: Path):
    """Two tools of one name with different parameters: sorting them for the tool set's
    signature compared the two parameter objects (a ``TypeError``, found by mutating bodies
    at random). They sort by their canonical text now; the set is the request's own, and the
    registry's sets are still found by the same signature as before."""
    twice = OWN_TOOLS + [
        {"type": "function", "function": {"name": "set_volume", "parameters": {"type": "object"}}}
    ]
    req = {"tools": twice, "tool_choice": "required"}
    recs = [
        {"request": req, "response": _chat([("set_volume", '{"level": 3}')])},
        {"request": {"tools": SUPPORT, "tool_choice": "required"}, "response": _chat([GOOD_ORDER])},
    ]
    doc = _audit(_write(tmp_path, recs))
    assert doc["input_errors"] == 0 and doc["outputs"] == 2 and doc["ok"] == 2
    assert "support_agent" in json.dumps(doc["by_tool_set"])  # the registry set, as before
