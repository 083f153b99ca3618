"""``--prometheus FILE``: the text format parses with prometheus-client's own parser.

audit runs on the shipped example outputs (no server); probe on a dead server (``up`` 0).
warm and probe against the real dev server are in tests/integration/test_probe_metrics.py.
"""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

from cli_support import prom_samples as samples
from cli_support import run_cli

from schemaops.metrics import probe_metrics, warm_metrics, write_textfile

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, timeout=300, cwd=ROOT)


def test_audit_prometheus_file_parses_and_matches_the_json(tmp_path: Path) -> None:
    prom = tmp_path / "audit.prom"
    r = _cli("audit", "audits/example-outputs.jsonl", "--json", "--prometheus", str(prom))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    got = samples(prom)
    (p,) = got["schemaops_audit_p"]
    assert p.value == doc["p"]
    outputs = {
        (s.labels["schema"], s.labels["category"]): s.value for s in got["schemaops_audit_outputs"]
    }
    for schema, s in doc["by_schema"].items():
        for cat, n in s["categories"].items():
            assert outputs[(schema, cat)] == n
    compound = {s.labels["steps"]: s.value for s in got["schemaops_audit_compound"]}
    assert compound == {k: v for k, v in doc["compound"].items()}
    subtypes = {s.labels["subtype"]: s.value for s in got["schemaops_audit_parse_failures"]}
    assert subtypes == doc["parse_failures"]
    diag = {s.labels["diagnosis"]: s.value for s in got["schemaops_audit_diagnoses"]}
    assert diag == {k: v["count"] for k, v in doc["diagnoses"].items()} and diag
    assert not list(tmp_path.glob("*.tmp*"))  # written via a temporary file, then renamed


def test_audit_prometheus_tool_series_name_no_invented_function(tmp_path: Path) -> None:
    """``audit --tools`` with ``--prometheus``: calls per tool set and tool, agent steps and
    calls to functions the set does not offer, equal to the ``--json`` report; a function the
    model invented is ``(unknown tool)`` in every series (``audit_outputs`` too), never its
    made-up name (a new series per invented name otherwise, as ``watch`` bounds them)."""
    prom = tmp_path / "tools.prom"
    r = _cli(
        "audit",
        "audits/example-toolcalls.jsonl",
        "--registry",
        "schemas",
        "--tools",
        "support_agent",
        "--json",
        "--prometheus",
        str(prom),
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    got = samples(prom)
    invented = set(doc["unknown_tools"])
    assert invented == {"get_ordr", "lookup_customer"}
    text = prom.read_text()
    assert not any(name in text for name in invented)
    want: dict[tuple[str, str], float] = {}
    for fn, row in doc["by_tool"].items():
        tool = "(unknown tool)" if fn in invented else fn
        for cat, n in row["categories"].items():
            want[(tool, cat)] = want.get((tool, cat), 0) + n
    calls = {
        (s.labels["tool"], s.labels["category"]): s.value
        for s in got["schemaops_audit_tool_calls"]
        if s.labels["tool_set"] == "support_agent"
    }
    assert calls == want and calls[("(unknown tool)", "unknown_tool")] == 2
    outputs = {s.labels["schema"] for s in got["schemaops_audit_outputs"]}
    assert "support_agent/(unknown tool)" in outputs and "support_agent/get_order" in outputs
    steps = {s.labels["result"]: s.value for s in got["schemaops_audit_tool_steps"]}
    ts = doc["by_tool_set"]["support_agent"]
    assert steps == {"ok": ts["steps_ok"], "failed": ts["steps"] - ts["steps_ok"]}
    (step_p,) = got["schemaops_audit_tool_step_p"]
    assert step_p.value == ts["step_p"]
    (unknown,) = got["schemaops_audit_unknown_tool_calls"]
    assert unknown.value == sum(doc["unknown_tools"].values())
    p = {s.labels["tool"]: s.value for s in got["schemaops_audit_tool_p"]}
    assert p["search_orders"] == doc["by_tool"]["search_orders"]["p"] and p["(unknown tool)"] == 0


def test_audit_offered_tool_sets_past_the_cap_are_one_label() -> None:
    """Request-offered tool sets (``offered-<hash>``, one per distinct ``tools`` array a log
    holds) past ``watch.tools.MAX_OFFERED_SETS`` are counted under ``offered-(other)``, their
    tools under ``(other)``: the count stays whole, the label values stay bounded."""
    from schemaops.metrics import audit_metrics
    from schemaops.watch.tools import MAX_OFFERED_SETS

    n_sets = MAX_OFFERED_SETS + 4
    by_set = {
        f"offered-{i:04x}": {
            "steps": 3,
            "steps_ok": 2,
            "tools": {f"fn_{i}": {"categories": {"ok": 2, "schema_violation:type": 1}}},
        }
        for i in range(n_sets)
    }
    by_schema = {
        f"{ts}/{fn}": {"categories": r["categories"]}
        for ts, row in by_set.items()
        for fn, r in row["tools"].items()
    }
    reg = audit_metrics({"input": "x", "by_schema": by_schema, "by_tool_set": by_set})
    got = {m.name: m.samples for m in reg.collect()}
    sets = {s.labels["tool_set"] for s in got["schemaops_audit_tool_steps"]}
    assert len(sets) == MAX_OFFERED_SETS + 1 and "offered-(other)" in sets
    other = {
        s.labels["result"]: s.value
        for s in got["schemaops_audit_tool_steps"]
        if s.labels["tool_set"] == "offered-(other)"
    }
    assert other == {"ok": 2 * 4, "failed": 1 * 4}
    calls = [
        s for s in got["schemaops_audit_tool_calls"] if s.labels["tool_set"] == "offered-(other)"
    ]
    assert {s.labels["tool"] for s in calls} == {"(other)"}
    assert sum(s.value for s in calls) == 3 * 4
    total = sum(s.value for s in got["schemaops_audit_outputs"])
    assert total == 3 * n_sets  # every output counted once, under a bounded name
    schemas = {s.labels["schema"] for s in got["schemaops_audit_outputs"]}
    assert len(schemas) == MAX_OFFERED_SETS + 1


def test_probe_on_a_dead_server_writes_up_0(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    prom = tmp_path / "probe.prom"
    r = _cli("probe", "--server", f"http://u:pw12345@127.0.0.1:{port}", "--prometheus", str(prom))
    assert r.returncode == 2
    (up,) = samples(prom)["schemaops_probe_up"]
    assert up.value == 0 and "pw12345" not in prom.read_text()


def test_one_hot_verdicts_and_warm_seconds(tmp_path: Path) -> None:
    doc = {
        "server": "http://h:1",
        "engine": "sglang",
        "paths": [
            {"path": "generate.json_schema", "verdict": "enforced"},
            {"path": "guided_json", "verdict": "unconstrained"},
        ],
        "registry": [{"schema": 'we"ird\nname', "verdict": "unproven"}],
    }
    write_textfile(tmp_path / "p.prom", probe_metrics(doc))
    got = samples(tmp_path / "p.prom")
    hot = {(s.labels["path"], s.labels["verdict"]): s.value for s in got["schemaops_probe_verdict"]}
    assert hot[("guided_json", "unconstrained")] == 1 and hot[("guided_json", "enforced")] == 0
    assert sum(hot.values()) == 2
    (reg,) = [s for s in got["schemaops_probe_registry_verdict"] if s.value == 1]
    assert reg.labels["schema"] == 'we"ird\nname'  # label escaping survives the round trip
    warm = {
        "results": [
            {
                "server": "s",
                "schema": "a",
                "api": "native",
                "status": "warmed",
                "cold_ms": 600.0,
                "probe_ms": 11.0,
            },
            {
                "server": "s",
                "schema": "b",
                "api": "native",
                "status": "invalid",
                "cold_ms": None,
                "probe_ms": None,
                "replicas": [{"replica": 0, "cold_ms": 5.0}, {"replica": 1}],
            },
        ]
    }
    write_textfile(tmp_path / "w.prom", warm_metrics(warm))
    got = samples(tmp_path / "w.prom")
    cold = {
        (s.labels["schema"], s.labels["rank"]): s.value for s in got["schemaops_warm_cold_seconds"]
    }
    assert cold == {("a", "0"): 0.6, ("b", "0"): 0.005}
    counts = {s.labels["status"]: s.value for s in got["schemaops_warm_schemas"]}
    assert counts["warmed"] == 1 and counts["invalid"] == 1


def test_a_folder_or_unwritable_path_is_a_clean_exit_2(tmp_path: Path) -> None:
    r = _cli("audit", "audits/example-outputs.jsonl", "--prometheus", str(tmp_path))
    assert r.returncode == 2 and "is a folder" in r.stderr and "Traceback" not in r.stderr
    r = _cli("audit", "audits/example-outputs.jsonl", "--prometheus", str(tmp_path / "no/x.prom"))
    assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr


BUDGET_SERIES = {
    "schemaops_audit_cut_outputs",
    "schemaops_audit_recommended_max_tokens",
    "schemaops_audit_recommended_max_tokens_lower_bound",
}


def _budget_audit(tmp_path: Path) -> dict:
    """A real audit of OpenAI-style answers with ``usage.completion_tokens``, two of them cut
    at ``finish_reason: length``: its document carries the token budgets (the example report
    has none), so the dashboard's budget panel is checked against series audit really writes."""
    from schemaops.audit.options import AuditOptions
    from schemaops.audit.run.pipeline import run_audit

    schema = tmp_path / "item.json"
    schema.write_text(json.dumps({"type": "object", "required": ["name"]}))

    def chat(tokens: int, finish: str, text: str) -> dict:
        return {
            "choices": [{"message": {"content": text}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 9, "completion_tokens": tokens},
        }

    recs = [chat(n, "stop", '{"name": "a"}') for n in range(5, 15)]
    recs += [chat(40, "length", '{"name": "ab'), chat(41, "length", '{"na')]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    doc = run_audit(str(log), AuditOptions(schema=str(schema), cache=False)).to_json()
    assert doc["diagnoses"]["truncated_at_max_tokens"]["budgets"][0]["cut"] == 2
    return doc


TOOL_SERIES = {
    "schemaops_audit_tool_step_p",
    "schemaops_audit_tool_p",
    "schemaops_audit_tool_calls",
    "schemaops_audit_unknown_tool_calls",
    "schemaops_watch_unknown_tool_calls_total",
    "schemaops_watch_tool_step_p",
}


def _tools_audit() -> dict:
    """A real audit of the shipped tool calls against the shipped tool set (``--tools``):
    its document carries ``by_tool_set`` (the example report has none)."""
    from schemaops.audit.options import AuditOptions
    from schemaops.audit.run.pipeline import run_audit

    opts = AuditOptions(registry=str(ROOT / "schemas"), tools="support_agent", cache=False)
    return run_audit(str(ROOT / "audits" / "example-toolcalls.jsonl"), opts).to_json()


def watch_series() -> set[str]:
    """The names of every series ``schemaops watch`` serves on /metrics."""
    from collections import Counter

    from schemaops.audit.tally.stats import Tally
    from schemaops.watch.run import Live, WatchOptions
    from schemaops.watch.serve import families

    live = Live(WatchOptions(["unused.jsonl"], listen=None), Tally(), Counter())
    return {m.name if m.type != "counter" else m.name + "_total" for m in families(live.snapshot())}


def test_grafana_dashboard_reads_only_series_schemaops_writes(tmp_path: Path) -> None:
    import re

    from schemaops.metrics import audit_metrics

    dash = json.loads((ROOT / "warmup" / "grafana-schemaops.json").read_text())
    exprs = [
        t["expr"] for p in dash["panels"] for t in p.get("targets", []) if p.get("type") != "row"
    ]
    exprs += [v["definition"] for v in dash["templating"]["list"] if "definition" in v]
    used = {m for e in exprs for m in re.findall(r"schemaops_[a-z0-9_]+", e)}
    audit_doc = json.loads((ROOT / "audits" / "example-report.json").read_text())
    budget_doc = _budget_audit(tmp_path)
    tools_doc = _tools_audit()
    warm_doc = {
        "results": [
            {"server": "s", "schema": "a", "status": "warmed", "cold_ms": 1.0, "probe_ms": 1.0}
        ]
    }
    probe_doc = {
        "server": "s",
        "engine": "sglang",
        "paths": [{"path": "x", "verdict": "enforced"}],
        "registry": [{"schema": "a", "verdict": "enforced"}],
    }
    written = {
        m.name if m.type != "counter" else m.name + "_total"
        for reg in (
            audit_metrics(audit_doc),
            audit_metrics(budget_doc),
            audit_metrics(tools_doc),
            warm_metrics(warm_doc),
            probe_metrics(probe_doc),
        )
        for m in reg.collect()
    }
    written |= watch_series()
    assert used and used <= written, used - written
    # the token-budget series have a panel (they exist only when outputs were cut)
    assert BUDGET_SERIES <= used, BUDGET_SERIES - used
    # and the tool-call series, of audit and of watch
    assert TOOL_SERIES <= used, TOOL_SERIES - used
    assert len({p["id"] for p in dash["panels"]}) == len(dash["panels"])


def test_every_registry_row_verdict_has_its_one_hot_series(tmp_path: Path) -> None:
    # probe --registry rows can be 'leaky' (canaries enforced, the output still invalid): the
    # one-hot must carry it, or a leaky schema exports all zeros and a dashboard misses it
    verdicts = ("enforced", "leaky", "unconstrained", "unproven", "rejected", "error")
    doc = {
        "server": "http://h:1",
        "engine": "sglang",
        "paths": [{"path": "generate.json_schema", "verdict": "enforced"}],
        "registry": [{"schema": v, "verdict": v} for v in verdicts],
    }
    write_textfile(tmp_path / "p.prom", probe_metrics(doc))
    hot = {
        s.labels["schema"]: s.labels["verdict"]
        for s in samples(tmp_path / "p.prom")["schemaops_probe_registry_verdict"]
        if s.value == 1
    }
    assert hot == {v: v for v in verdicts}
