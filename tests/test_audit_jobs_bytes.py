"""``--jobs N`` byte ranges (``audit/run/parallel.py``) give the one process's report byte
for byte in ``--json`` and the same ``--records`` file (issue 36 item 3: no serial pass over
the file before the workers; the ``--records`` line numbers come from newlines the workers
count in parallel)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemaops.audit.options import AuditOptions
from schemaops.audit.run import parallel
from schemaops.audit.run.pipeline import run_audit

REPO = Path(__file__).resolve().parents[1]


def _input(tmp: Path) -> Path:
    """The shipped example with unusable lines and blank lines spread over it, and a last
    line without its newline (every slice boundary rule in play)."""
    src = (REPO / "audits" / "example-outputs.jsonl").read_text(encoding="utf-8").splitlines()
    mixed = []
    for i, line in enumerate(src[:2500]):
        mixed.append(line)
        if i % 611 == 0:
            mixed.append("not a record")
        if i % 977 == 0:
            mixed.append("")
    f = tmp / "mixed.jsonl"
    f.write_text("\n".join(mixed), encoding="utf-8")  # no newline after the last line
    return f


def _doc(path: Path, jobs: int, records: Path | None) -> str:
    opts = AuditOptions(
        registry=str(REPO / "schemas"),
        jobs=jobs,
        records=str(records) if records else None,
        cache=False,
    )
    doc = run_audit(str(path), opts).to_json()
    doc.pop("elapsed_s")
    doc.pop("jobs")
    return json.dumps(doc)


@pytest.mark.parametrize("jobs", [2, 3])
@pytest.mark.parametrize("with_records", [False, True])
def test_byte_ranges_give_the_one_process_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int, with_records: bool
) -> None:
    f = _input(tmp_path)
    r1 = tmp_path / "one.rows" if with_records else None
    rn = tmp_path / "many.rows" if with_records else None
    one = _doc(f, 1, r1)
    calls: list[int] = []
    real = parallel.run_parallel
    monkeypatch.setattr(
        "schemaops.audit.run.pipeline.run_parallel",
        lambda *a, **k: calls.append(1) or real(*a, **k),
    )
    # the parent reads no line of the file: every count is a worker's (forked after this)
    monkeypatch.setattr(parallel, "slices", None, raising=False)
    many = _doc(f, jobs, rn)
    assert calls == [1]  # the byte-range path ran
    assert many == one
    if with_records:
        assert rn.read_bytes() == r1.read_bytes()  # type: ignore[union-attr]
        assert not list(tmp_path.glob("many.rows.part*"))


def test_count_lines_counts_each_slice(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"a\nbb\n\nccc\nd")
    cuts = parallel.cut_points(str(f), 2)
    counts = [parallel.count_lines((str(f), s, e)) for s, e in zip(cuts, cuts[1:], strict=False)]
    assert sum(counts) == 4 and cuts[0] == 0 and cuts[-1] == f.stat().st_size
