"""``bench/audit_costs.py`` (issue 36): the structure of its report on a small workload made
here, never its timings: every kind of failure is found and counted as the audit's own report
counts it (the violations by the way each was explained, the parse failures, every failure
counted once), and the per-line figures come from whole processes of both contenders."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from corpus_paths import REPO

BENCH = REPO / "bench" / "audit_costs.py"
PLAIN = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
# a schema with a nested $id: jsonschema-rs's locations may be relative to another resource,
# so jsonschema explains its violations itself (a root $id alone is located by jsonschema-rs)
WITH_ID = {**PLAIN, "$defs": {"b": {"$id": "https://example.com/b.json"}}}
TEXTS = ['{"a": 1}', "[]", '{"a": "x"}', "{}", '{"a": 1', "Sure: {", '{"a": 2}']


def test_every_kind_is_counted_as_the_report_counts_it(tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    reg.mkdir()
    (reg / "plain.json").write_text(json.dumps(PLAIN))
    (reg / "with_id.json").write_text(json.dumps(WITH_ID))
    lines = []
    for i in range(40):  # distinct texts: the memo must not answer
        for name in ("plain", "with_id"):
            text = TEXTS[i % len(TEXTS)]
            lines.append(json.dumps({"schema": name, "text": text + " " * (i + 1)}))
    data = tmp_path / "outputs.jsonl"
    data.write_text("\n".join(lines) + "\n")
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--file", str(data), "--registry", str(reg)]
        + ["--rounds", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    cats = doc["in_process"]["categories"]
    kinds = doc["in_process"]["kinds"]
    violations = sum(n for c, n in cats.items() if c.startswith("schema_violation"))
    explained = {k: v["count"] for k, v in kinds.items() if k.startswith("violation: ")}
    assert set(explained) == {
        "violation: root_type",
        "violation: jsonschema_rs",
        "violation: jsonschema",
    }
    assert sum(explained.values()) == violations
    assert kinds["parse failure named"]["count"] == cats["json_parse_failure"]
    assert kinds["failure counted"]["count"] == violations + cats["json_parse_failure"]
    assert doc["processes"]["lines"] == len(lines) and doc["processes"]["schemas"] == 2
    for who in ("audit", "loop"):
        assert doc["processes"][who]["cpu_s"] > 0
    costs = doc["costs"]
    assert set(costs["kinds"]) == set(kinds)
    assert costs["every_line_us"] == round(
        costs["audit_us_per_line"] - costs["failures_us_per_line"], 2
    )
