"""``schemaops warm`` on a registry tool set, against the real SGLang 0.5.23 dev server.

The dev server has no ``--tool-call-parser``: for ``tool_choice`` required or a named function
SGLang compiles the JSON schema it derives from the tools (``engines/tool_schema.py``). Warm
sends the application's own request and SGLang derives the key; what is asserted is the
server's answer judged by warm's proof (``prove.verdict``: a compile shows as latency over the
baseline, a cached grammar does not), never a fixed number of milliseconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from toolset_support import (
    first_is_cached,
    fresh,
    heavy_tools,
    request_tools,
    toolset_registry,
)
from warm_support import rows_by_schema, warm_json

pytestmark = pytest.mark.integration
# a named request compiles one tool's parameters: twice the properties of the required tests'
NAMED_PROPS = 240


def test_after_warm_the_first_required_request_is_cached(sglang_url: str, tmp_path: Path) -> None:
    reg = toolset_registry(tmp_path, fresh(2))
    rc, doc = warm_json("--server", sglang_url, "-r", str(reg), "-c", "1")
    assert rc == 0, doc
    row = rows_by_schema(doc)["agent.tools[sglang required]"]
    assert row["status"] == "warmed" and row["api"] == "openai" and row["proof"] == "hit", row
    assert row["toolset"]["tools"] == 2 and row["toolset"]["tool_choice"] == "required"
    assert doc["summary"]["tool_sets"] == 1
    # against a tool set no cache has seen (other functions), compiled on its first use
    first_is_cached(sglang_url, request_tools(reg), "required", heavy_tools(fresh(2)), "required")

    # warmed again: its cold request now costs no more than the tools baseline (cached
    # before this run), so warm cannot show a compile: unproven, not a fresh hit
    rc2, again = warm_json("--server", sglang_url, "-r", str(reg), "-c", "1")
    assert rc2 == 0 and rows_by_schema(again)[row["schema"]]["proof"] == "unproven", again


def test_named_warms_each_tool_the_application_may_name(sglang_url: str, tmp_path: Path) -> None:
    indices = fresh(2)
    reg = toolset_registry(tmp_path, indices, props=NAMED_PROPS)
    names = [f"heavy_{i}" for i in indices]
    rc, doc = warm_json("--server", sglang_url, "-r", str(reg), "--tool-choice", "named", "-c", "1")
    assert rc == 0, doc
    rows = rows_by_schema(doc)
    assert list(rows) == [f"agent.tools[sglang named:{n}]" for n in names]
    assert {r["status"] for r in rows.values()} == {"warmed"}, rows
    tools = request_tools(reg)
    choice = {"type": "function", "function": {"name": names[1]}}
    # against the same name in a tool set no cache has seen, compiled on its first use
    unseen = fresh(2)  # a tool set no cache has seen, its second function named
    named = {"type": "function", "function": {"name": f"heavy_{unseen[1]}"}}
    unseen_tools = heavy_tools(unseen, props=NAMED_PROPS)
    first_is_cached(sglang_url, tools, choice, unseen_tools, named)
