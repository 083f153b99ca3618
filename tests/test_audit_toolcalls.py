"""``audit --tools NAME``: tool calls judged against the registry tool set offered (issue 35).

Real files (the shipped ``audits/example-toolcalls.jsonl`` and ``schemas/``), the real CLI
in a subprocess and the library. Before ``--tools``, a call to a function the model invented
was judged as JSON only (row ``(none)``, counted ok): a hallucinated tool name was nobody's
failure.
"""

from __future__ import annotations

import json
from pathlib import Path

from schemaops.audit import AuditOptions
from schemaops.audit.run.pipeline import run_audit
from tests.cli_support import REPO, run_cli

EXAMPLE = REPO / "audits" / "example-toolcalls.jsonl"
SCHEMAS = str(REPO / "schemas")


def _audit(*extra: str) -> tuple[int, dict]:
    r = run_cli("audit", str(EXAMPLE), "--registry", SCHEMAS, "--json", *extra)
    assert "Traceback" not in r.stderr
    return r.returncode, json.loads(r.stdout)


def test_unknown_tool_is_a_model_failure_counted_in_p_with_its_invented_name():
    code, doc = _audit("--tools", "support_agent")
    assert code == 0
    assert doc["input_errors"] == 0
    # 7 calls over OpenAI chat (one parallel pair), Anthropic tool_use, Gemini functionCall
    assert doc["outputs"] == 7
    assert doc["categories"]["unknown_tool"] == 2
    assert doc["ok"] == 3 and abs(doc["p"] - 3 / 7) < 1e-12
    assert doc["unknown_tools"] == {"get_ordr": 1, "lookup_customer": 1}
    assert doc["tool_set"] == "support_agent"
    invented = doc["by_tool"]["get_ordr"]
    assert invented["n"] == 1 and invented["ok"] == 0 and invented["offered"] is False
    # the parallel pair counts twice: search_orders ok beside the invented get_ordr
    assert doc["by_tool"]["search_orders"] == {
        "n": 1,
        "ok": 1,
        "p": 1.0,
        "categories": {"ok": 1},
        "offered": True,
    }
    # arguments that are not JSON: the usual parse failure, under the tool
    assert doc["by_tool"]["kb_search"]["categories"].get("json_parse_failure") == 1
    # every key the report had before is still there (backwards compatible)
    assert {"by_schema", "categories", "p", "paths", "sources"} <= set(doc)


def test_arguments_violating_parameters_give_keyword_and_path():
    _, doc = _audit("--tools", "support_agent")
    # Anthropic tool_use get_order with include ["invoice"]: the enum of its parameters
    assert doc["categories"]["schema_violation:enum"] == 1
    assert doc["paths"] == [
        {
            "schema": "support_agent/get_order",
            "category": "schema_violation:enum",
            "path": "/include/0",
            "count": 1,
        }
    ]
    assert doc["by_tool"]["get_order"]["n"] == 2 and doc["by_tool"]["get_order"]["ok"] == 1


def test_each_provider_shape_is_judged_against_the_set(tmp_path: Path):
    shapes = {
        "openai": {
            "choices": [
                {
                    "message": {
                        "content": None,
                        "tool_calls": [
                            {"function": {"name": "get_ordr", "arguments": '{"order_id": "x"}'}}
                        ],
                    }
                }
            ]
        },
        "anthropic": {
            "type": "message",
            "content": [{"type": "tool_use", "id": "t", "name": "get_ordr", "input": {}}],
            "stop_reason": "tool_use",
        },
        "responses": {
            "output": [
                {"type": "function_call", "call_id": "c", "name": "get_ordr", "arguments": "{}"}
            ]
        },
        "gemini": {
            "candidates": [
                {"content": {"parts": [{"functionCall": {"name": "get_ordr", "args": {}}}]}}
            ]
        },
    }
    for kind, rec in shapes.items():
        f = tmp_path / f"{kind}.jsonl"
        f.write_text(json.dumps(rec) + "\n")
        res = run_audit(str(f), AuditOptions(registry=SCHEMAS), tools="support_agent").to_json()
        assert res["categories"].get("unknown_tool") == 1, kind
        assert res["p"] == 0.0 and res["input_errors"] == 0, kind
        assert res["unknown_tools"] == {"get_ordr": 1}, kind


def test_without_tools_the_default_stays_and_the_note_names_the_flag():
    code, doc = _audit()
    assert code == 0
    assert "tool_set" not in doc and "by_tool" not in doc
    assert doc["by_schema"]["(none)"]["outputs"] == 2  # as before: judged as JSON only
    assert "--tools NAME (support_agent)" in doc["tools_hint"]
    r = run_cli("audit", "--help")
    assert "--tools" in r.stdout  # the flag the note names exists


def test_an_unknown_tool_set_or_with_schema_is_exit_2():
    r = run_cli("audit", str(EXAMPLE), "--registry", SCHEMAS, "--tools", "nope")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "no tool set 'nope'" in r.stderr and "support_agent" in r.stderr
    r = run_cli(
        "audit", str(EXAMPLE), "--registry", SCHEMAS, "--tools", "support_agent", "--schema", "x"
    )
    assert r.returncode == 2 and "cannot be combined" in r.stderr


def test_terminal_report_names_the_set_and_the_invented_names():
    r = run_cli("audit", str(EXAMPLE), "--registry", SCHEMAS, "--tools", "support_agent")
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())
    assert "Tool set support_agent: 7 tool calls" in out
    assert "invented tool names: get_ordr 1, lookup_customer 1" in out


def test_jobs_and_shards_agree_with_one_process(tmp_path: Path):
    big = tmp_path / "calls.jsonl"
    big.write_text(EXAMPLE.read_text() * 400)
    docs = [
        run_audit(str(big), AuditOptions(registry=SCHEMAS, jobs=j), tools="support_agent").to_json()
        for j in (1, 2)
    ]
    for doc in docs:
        assert doc["outputs"] == 2800 and doc["input_errors"] == 0
        assert doc["unknown_tools"] == {"get_ordr": 400, "lookup_customer": 400}
    assert docs[1]["jobs"] == 2  # two worker processes, each with its own resolver
    assert docs[0]["by_tool"] == docs[1]["by_tool"]
    assert docs[0]["categories"] == docs[1]["categories"]
