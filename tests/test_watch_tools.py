"""``watch`` on tool calls (issue 35): ``unknown_tool`` and per-tool p live, with Prometheus
label values a model cannot make up.

Real files, the shipped registry ``schemas/`` (``support_agent.tools.json``), the real
validators, the real ``watch --once`` in a subprocess, and the metrics text rendered by
prometheus_client from a real watch's snapshot. Before this, watch had no ``--tools`` and
counted each invented function name as its own ``schema`` label value.
"""

from __future__ import annotations

import json
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from schemaops.audit import AuditOptions
from schemaops.watch import WatchOptions, run_watch
from schemaops.watch.live import Live
from schemaops.watch.serve import _Collector
from schemaops.watch.tools import SAMPLE_NAMES
from tests.cli_support import REPO, run_cli

SCHEMAS = str(REPO / "schemas")
EXAMPLE = REPO / "audits" / "example-toolcalls.jsonl"


def _call(name: str, args: str) -> dict:
    return {
        "choices": [
            {
                "message": {
                    "content": None,
                    "tool_calls": [{"function": {"name": name, "arguments": args}}],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }


def _log(tmp_path: Path, invented: int) -> Path:
    recs = [_call("get_order", '{"order_id": "ORD-12345678"}')] * 3
    recs += [_call(f"made_up_{i}", "{}") for i in range(invented)]
    recs += [_call("kb_search", '{"query": "x", "top_k": 0}')]
    f = tmp_path / "calls.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return f


def _watch(f: Path, state: Path | None = None, **audit) -> tuple[dict, Live]:
    opts = WatchOptions(
        targets=[str(f)],
        audit=AuditOptions(registry=SCHEMAS, cache=False, **audit),
        listen=None,
        state_dir=str(state) if state else None,
        interval=0.05,
        once=True,
    )
    return run_watch(opts), opts


def test_watch_counts_unknown_tool_and_per_tool_p_with_bounded_labels(tmp_path: Path):
    f = _log(tmp_path, invented=SAMPLE_NAMES + 5)
    snap, _ = _watch(f, tools="support_agent")
    assert snap["input_errors"] == 0
    assert snap["outputs"] == 3 + SAMPLE_NAMES + 5 + 1
    # every invented name is one row: '(unknown tool)', its count whole
    rows = snap["by_schema"]
    assert rows["support_agent/(unknown tool)"] == {"unknown_tool": SAMPLE_NAMES + 5}
    assert not any(k.startswith("support_agent/made_up") for k in rows)
    tools = snap["tools"]
    # a bounded sample of the names, and the count of the others
    assert len(tools["unknown_tools"]) == SAMPLE_NAMES
    assert tools["unknown_tools_unsampled"] == 5
    sa = tools["sets"]["support_agent"]
    assert sa["tools"]["get_order"]["p"] == 1.0 and sa["tools"]["get_order"]["outputs"] == 3
    assert sa["tools"]["kb_search"]["p"] == 0.0
    assert sa["steps"] == 3 + SAMPLE_NAMES + 5 + 1 and sa["steps_ok"] == 3


def test_metrics_have_a_tool_label_from_the_set_only(tmp_path: Path):
    f = _log(tmp_path, invented=30)
    opts = WatchOptions(
        targets=[str(f)],
        audit=AuditOptions(registry=SCHEMAS, cache=False, tools="support_agent"),
        listen=None,
        interval=0.05,
        once=True,
    )
    from schemaops.watch import run as watch_run

    seen: list[Live] = []
    real = watch_run.Live

    def keep(*a, **kw):
        live = real(*a, **kw)
        seen.append(live)
        return live

    watch_run.Live = keep  # the run's own Live, read after it ends (no test double)
    try:
        run_watch(opts)
    finally:
        watch_run.Live = real
    reg = CollectorRegistry(auto_describe=False)
    reg.register(_Collector(seen[0]))
    text = generate_latest(reg).decode()
    assert (
        'schemaops_watch_tool_calls_total{category="unknown_tool",tool="(unknown tool)",'
        'tool_set="support_agent"} 30.0' in text
    )
    assert 'schemaops_watch_tool_p{tool="get_order",tool_set="support_agent"} 1.0' in text
    assert 'schemaops_watch_unknown_tool_calls_total{tool_set="support_agent"} 30.0' in text
    assert 'schemaops_watch_tool_steps_total{result="ok",tool_set="support_agent"} 3.0' in text
    assert "made_up" not in text  # no invented name is a label value


def test_state_keeps_tool_steps_and_the_sample_across_restarts(tmp_path: Path):
    f = _log(tmp_path, invented=2)
    state = tmp_path / "state"
    snap, _ = _watch(f, state, tools="support_agent")
    with f.open("a") as fh:
        fh.write(json.dumps(_call("made_up_0", "{}")) + "\n")
    snap2, _ = _watch(f, state, tools="support_agent")
    sa = snap2["tools"]["sets"]["support_agent"]
    assert sa["steps"] == snap["tools"]["sets"]["support_agent"]["steps"] + 1
    assert snap2["tools"]["unknown_tools"] == {"made_up_0": 2, "made_up_1": 1}


def test_once_summary_shows_per_tool_and_steps():
    r = run_cli("watch", str(EXAMPLE), "--registry", SCHEMAS, "--once", "--tools", "support_agent")
    assert r.returncode == 0, r.stderr
    out = " ".join(r.stdout.split())
    assert "support_agent/get_order" in out and "Tool calls and agent steps" in out
    assert "invented tool names: get_ordr 1, lookup_customer 1" in out
    # request-held tools work in watch too: no --tools needed for a record that holds them
    r = run_cli("watch", "--help")
    assert "--tools" in r.stdout and "--tool-choice" in r.stdout
