"""``bench/audit_floor.py`` (issues 24 and 36): its L4 layer on a many-schema workload does the
audit's own work on every failure, never less. Its workers' outcomes, summed, must be the
audit's report category by category (ok, each parse failure, each violation keyword), with the
facts cache cold and warm; a layer that skipped or mis-explained failures would be a floor
below what the audit has to do. Timings are never asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from corpus_paths import REPO

BENCH = REPO / "bench" / "audit_floor.py"
PLAIN = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
SCHEMAS = {
    "plain": PLAIN,
    # a nested $id: jsonschema explains its violations itself (no jsonschema-rs locations)
    "with_id": {**PLAIN, "$defs": {"b": {"$id": "https://example.com/b.json"}}},
    # a root $id alone: jsonschema-rs locates them
    "root_id": {**PLAIN, "$id": "https://example.com/root_id.json"},
    # a pattern: the checker runs under the watchdog, without the lean loop's yes/no
    "patterned": {"type": "object", "properties": {"a": {"type": "string", "pattern": "^x+$"}}},
    # a draft jsonschema-rs does not have: the closure tree and jsonschema answer alone
    "draft3": {"$schema": "http://json-schema.org/draft-03/schema#", "type": "object"},
}
TEXTS = ['{"a": 1}', "[]", '{"a": "x"}', "{}", '{"a": 1', "Sure: {", '{"a": 2}', '{"a": "y"}']


def _workload(tmp_path: Path) -> tuple[Path, Path]:
    reg = tmp_path / "registry"
    reg.mkdir()
    for name, schema in SCHEMAS.items():
        (reg / f"{name}.json").write_text(json.dumps(schema))
    lines = []
    for i in range(30):  # distinct texts: the audit's memo must not answer
        for name in SCHEMAS:
            text = TEXTS[i % len(TEXTS)] + " " * (i + 1)
            lines.append(json.dumps({"schema": name, "text": text}))
    data = tmp_path / "outputs.jsonl"
    data.write_text("\n".join(lines) + "\n")
    return data, reg


def _l4(data: Path, reg: Path, cache: Path) -> Counter:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--jobs", "2", "--child", "failures", str(data), str(reg)]
        + ["--cache", str(cache)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(rows) == 2  # one line a worker
    total: Counter = Counter()
    for row in rows:
        total.update(row)
    return total


def test_l4_explains_every_failure_as_the_audit_does(tmp_path: Path) -> None:
    data, reg = _workload(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "schemaops", "audit", str(data), "--registry", str(reg)]
        + ["--json", "--cache-dir", str(tmp_path / "audit-cache")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["input_errors"] == 0
    want = Counter(report["categories"])
    assert {"ok", "json_parse_failure", "schema_violation:type"} <= set(want)
    cache = tmp_path / "l4-cache"
    assert _l4(data, reg, cache) == want  # cold: the registry checks every schema
    assert any(cache.iterdir())  # the workers wrote what they found to the facts cache
    assert _l4(data, reg, cache) == want  # warm: read back from it
