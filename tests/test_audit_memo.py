"""The verdict memo asks itself whether it pays (issue 24): on a log whose texts do not repeat
it stops being asked after its probe, so it neither grows nor costs a lookup per line, and the
counts are the same as with it; on repeated texts it keeps answering."""

from __future__ import annotations

import json
from pathlib import Path

from schemaops.audit.options import AuditOptions
from schemaops.audit.run.lines import MEMO_PROBE, audit_lines
from schemaops.audit.verdict.resolver import SchemaResolver

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer", "maximum": 10_000_000}},
    "required": ["n"],
}


def _lines(texts: list[str]) -> list[bytes]:
    return [json.dumps({"text": t, "episode_id": i // 20}).encode() for i, t in enumerate(texts)]


def _audit(tmp_path: Path, lines: list[bytes]) -> tuple[dict, int]:
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(SCHEMA))
    opts = AuditOptions(schema=str(schema), registry=str(tmp_path), cache=False)
    resolver = SchemaResolver.for_options(opts)
    tally = audit_lines(lines, opts, resolver)
    counts = {"ok": tally.ok, **tally.categories, "episodes": len(tally.episodes)}
    return counts, len(resolver.verdicts or {})


def test_memo_stops_on_distinct_texts_and_counts_stay(tmp_path: Path) -> None:
    n = MEMO_PROBE * 3
    # every 10th output fails (a string, then a number over the maximum): both paths ask
    texts = [
        f'{{"n": "x{i}"}}' if i % 20 == 0 else f'{{"n": {i if i % 10 else 10**8 + i}}}'
        for i in range(n)
    ]
    counts, held = _audit(tmp_path, _lines(texts))
    assert counts["ok"] == sum(1 for i in range(n) if i % 10)
    assert counts["schema_violation:type"] == sum(1 for i in range(n) if i % 20 == 0)
    assert counts["schema_violation:maximum"] == sum(1 for i in range(n) if i % 20 == 10)
    assert held <= MEMO_PROBE + 1, held  # no entry after the probe found no repeat


def test_memo_keeps_answering_repeated_texts(tmp_path: Path) -> None:
    texts = ['{"n": 1}', '{"n": "x"}', '{"n": 2}'] * MEMO_PROBE
    counts, held = _audit(tmp_path, _lines(texts))
    assert counts["ok"] == 2 * MEMO_PROBE and counts["schema_violation:type"] == MEMO_PROBE
    assert held == 3
