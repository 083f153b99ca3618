"""``audit`` on the real SGLang and vLLM dev servers' answers to tool-calling requests
(issue 35): each line holds the request (the registry tool set as ``registry export`` sends it,
and its ``tool_choice``) and the server's answer; the audit reads the tools from the request,
names the set by the registry, and gives every answer exactly one verdict per call, or one
``no_tool_call`` when the server returned no call although the tool choice required one.

Seen on the dev servers (2026-12-03): SGLang 0.5.23 without ``--tool-call-parser`` returns the
required/named constraint's array as ``content`` (no ``tool_calls``); vLLM with ``--tool-call-
parser hermes`` returns named calls as ``tool_calls`` and, when cut by ``max_tokens``, a
required call as ``<tool_call>`` text. Either way what the client reads is decided here, so
the counts below are read from the answers, not assumed.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from schemaops.audit import AuditOptions
from schemaops.audit.run.pipeline import run_audit
from schemaops.registry.loader import inspect_registry
from tests.cli_support import REPO

pytestmark = pytest.mark.integration

SCHEMAS = str(REPO / "schemas")
CHOICES = ("required", {"type": "function", "function": {"name": "kb_search"}})


def _lines(url: str) -> list[dict]:
    tools = inspect_registry(SCHEMAS, examples=False)[0].toolsets["support_agent"].request_tools()
    with httpx.Client(base_url=url, timeout=600) as client:
        model = client.get("/v1/models").json()["data"][0]["id"]
        out = []
        for choice in CHOICES:
            req = {
                "model": model,
                "messages": [{"role": "user", "content": "Where is order ORD-12345678?"}],
                "tools": tools,
                "tool_choice": choice,
                "max_tokens": 200,
                "temperature": 0,
            }
            resp = client.post("/v1/chat/completions", json=req)
            assert resp.status_code == 200, resp.text[:300]
            out.append({"request": req, "response": resp.json()})
    return out


def _check(lines: list[dict], tmp_path: Path) -> dict:
    f = tmp_path / "answers.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in lines))
    doc = run_audit(str(f), AuditOptions(registry=SCHEMAS, cache=False)).to_json()
    assert doc["input_errors"] == 0
    assert doc["tool_set"] == "support_agent"  # the request's tools are the registry set
    calls = [r["response"]["choices"][0]["message"].get("tool_calls") or [] for r in lines]
    no_call = sum(1 for c in calls if not c)
    assert doc["categories"].get("no_tool_call", 0) == no_call
    assert doc["outputs"] == no_call + sum(len(c) for c in calls)
    assert doc["tool_steps"]["steps"] == len(lines)
    names = {c["function"]["name"] for cs in calls for c in cs}
    assert names <= set(doc["by_tool"])
    if not calls[1]:  # the named choice without a call: attributed to the named tool
        assert doc["by_tool"]["kb_search"]["categories"]["no_tool_call"] >= 1
    return doc


def test_sglang_answers_audited_against_the_requests_tools(sglang_url: str, tmp_path: Path):
    _check(_lines(sglang_url), tmp_path)


@pytest.mark.vllm
def test_vllm_answers_audited_against_the_requests_tools(vllm_parser_url: str, tmp_path: Path):
    """A vLLM with ``--tool-call-parser hermes``: without a parser vLLM answers a tools
    request with tool_choice required/named HTTP 400."""
    _check(_lines(vllm_parser_url), tmp_path)
