"""The verdict memo asks itself whether it pays (issue 24): on a log whose texts do not repeat
it stops being asked after its probe, so it neither grows nor costs a lookup per line, and the
counts are the same as with it; on repeated texts it keeps answering."""

from __future__ import annotations

import json
from pathlib import Path

from schemaops.audit.options import AuditOptions
from schemaops.audit.run.lines import (
    MEMO_PAUSE,
    MEMO_PAUSE_MAX,
    MEMO_PROBE,
    audit_lines,
    memo_plan,
)
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


def test_memo_pauses_back_off_while_probes_find_no_repeats() -> None:
    """Each probe that finds no repeats doubles the next pause (up to ``MEMO_PAUSE_MAX``); a
    probe that pays keeps the memo asked and makes the next pause short again."""
    seen, on, pause = MEMO_PROBE, True, MEMO_PAUSE
    pauses = []
    for _ in range(8):
        nxt, on, hits, pause = memo_plan(seen, on, 0, pause)  # a probe without hits
        assert on is False and hits == 0
        pauses.append(nxt - seen)
        seen, on = nxt, False
        nxt, on, _, pause = memo_plan(seen, on, 0, pause)  # the pause ends: probe again
        assert on is True and nxt == seen + MEMO_PROBE
        seen = nxt
    assert pauses == [min(MEMO_PAUSE << k, MEMO_PAUSE_MAX) for k in range(8)]
    assert pauses[-1] == MEMO_PAUSE_MAX
    nxt, on, _, pause = memo_plan(seen, True, MEMO_PROBE // 50, pause)  # 2 % hits: it pays
    assert on is True and nxt == seen + MEMO_PROBE and pause == MEMO_PAUSE


def test_a_log_that_starts_repeating_late_is_memoised_again(tmp_path: Path) -> None:
    """Distinct texts for two pauses, then one text over and over: the probe after the
    pauses finds the repeats, and the counts are those of every output checked."""
    n_distinct = MEMO_PROBE + MEMO_PAUSE + MEMO_PROBE + 2 * MEMO_PAUSE
    texts = [f'{{"n": {i}}}' for i in range(n_distinct)] + ['{"n": "x"}'] * (4 * MEMO_PROBE)
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(SCHEMA))
    opts = AuditOptions(schema=str(schema), registry=str(tmp_path), cache=False)
    resolver = SchemaResolver.for_options(opts)
    resolver.verdicts = memo = _CountingMemo()  # counts its answers; a plain dict otherwise
    tally = audit_lines(_lines(texts), opts, resolver)
    assert tally.ok == n_distinct and tally.categories["schema_violation:type"] == 4 * MEMO_PROBE
    # the third probe starts where the repeats do: every repeat after the first is answered
    # (twice: by the lean test and by the general path that counts the failure); with a
    # pause that never grew, the memo was off for the first MEMO_PROBE repeats
    assert memo.hits >= 2 * (4 * MEMO_PROBE - 1), memo.hits


class _CountingMemo(dict):
    """The verdict memo with a count of the lookups it answered (instrumentation only)."""

    hits = 0

    def get(self, key, default=None):  # type: ignore[no-untyped-def]
        found = super().get(key, default)
        if found is not None:
            self.hits += 1
        return found


def test_slices_of_one_worker_continue_one_schedule(tmp_path: Path) -> None:
    """A ``--jobs`` worker audits slice after slice with one resolver: a later slice continues
    the memo's schedule (its pause) instead of probing its first outputs afresh."""
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(SCHEMA))
    opts = AuditOptions(schema=str(schema), registry=str(tmp_path), cache=False)
    resolver = SchemaResolver.for_options(opts)
    first = [f'{{"n": {i}}}' for i in range(MEMO_PROBE + 10)]
    later = [f'{{"n": {i}}}' for i in range(MEMO_PROBE + 10, 3 * MEMO_PROBE)]
    audit_lines(_lines(first), opts, resolver)
    held = len(resolver.verdicts or {})
    assert 0 < held <= MEMO_PROBE  # the probe, then nothing: it found no repeat
    tally = audit_lines(_lines(later), opts, resolver)
    assert tally.ok == len(later)
    assert len(resolver.verdicts or {}) == held  # still in its pause: not asked, not filled
