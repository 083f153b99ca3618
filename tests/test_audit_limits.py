"""Hostile inputs get a bounded answer (issue 14.5): an endless line is an input error with its
line number, read past in bounded pieces; a huge unparseable output is cut off by --timeout."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from schemaops.audit import AuditOptions, run_audit
from schemaops.audit.read.extract import MAX_LINE_BYTES

GOOD = json.dumps({"text": '{"a": 1}'}) + "\n"
HUGE = 8 * MAX_LINE_BYTES  # 256 MiB when expanded


def _write_endless_gzip(path: Path) -> None:
    """A gzip member whose second line expands to ``HUGE`` bytes without a newline."""
    chunk = b"a" * (1 << 20)
    with gzip.GzipFile(path, "wb", compresslevel=1) as gz:
        gz.write(GOOD.encode())
        for _ in range(HUGE // len(chunk)):
            gz.write(chunk)
        gz.write(b"\n" + GOOD.encode())


def _audit_in_child(path: Path, jobs: int) -> dict:
    """Audit in a fresh process and return its JSON plus its peak resident memory (MiB)."""
    code = (
        "import json, sys\n"
        "from schemaops.audit import AuditOptions, run_audit\n"
        "doc = run_audit(sys.argv[1], AuditOptions(jobs=int(sys.argv[2]))).to_json()\n"
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the forking parent.
        "hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM')][0]\n"
        "peak = int(hwm.split()[1]) / 1024\n"
        "print(json.dumps({'doc': doc, 'peak_mib': peak}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), str(jobs)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout)


def test_endless_gzip_line_is_an_input_error_in_bounded_memory(tmp_path: Path) -> None:
    gz = tmp_path / "bomb.jsonl.gz"
    _write_endless_gzip(gz)
    got = _audit_in_child(gz, 1)
    doc = got["doc"]
    assert doc["ok"] == 2 and doc["outputs"] == 2 and doc["lines"] == 3
    assert [e["line"] for e in doc["input_error_lines"]] == [2]
    assert "longer than" in doc["input_error_lines"][0]["message"]
    # The 256 MiB line is never held: the peak stays far below its size.
    assert got["peak_mib"] < 160, got["peak_mib"]


def test_endless_plain_line_with_jobs(tmp_path: Path) -> None:
    f = tmp_path / "long.jsonl"
    with open(f, "wb") as fh:
        fh.write(GOOD.encode() * 3)
        fh.write(b'{"text": "' + b"b" * (MAX_LINE_BYTES + 10) + b'"}\n')
        fh.write(GOOD.encode() * 3)
    for jobs in (1, 2):
        doc = _audit_in_child(f, jobs)["doc"]
        assert doc["ok"] == 6 and doc["input_errors"] == 1, jobs
        assert doc["input_error_lines"][0]["line"] == 4


def test_exact_limit_line_is_still_read(tmp_path: Path) -> None:
    body = json.dumps({"text": '"' + "c" * 100 + '"'}).encode()
    f = tmp_path / "edge.jsonl"
    f.write_bytes(body + b"\n" + body)  # last line without a newline
    from schemaops import jsonl

    with open(f, "rb") as fh:
        lines = list(jsonl.bounded_lines(fh, len(body)))
    assert [line.rstrip(b"\n") for line in lines] == [body, body]
    with open(f, "rb") as fh:
        lines = list(jsonl.bounded_lines(fh, len(body) - 1))
    assert [type(line).__name__ for line in lines] == ["OverlongLine", "OverlongLine"]


def test_huge_unparseable_output_is_bounded_by_timeout(tmp_path: Path) -> None:
    """About 10 MB of not-quite-JSON after a word: naming its subtype tries up to 32 parses of
    the whole text (seconds). --timeout cuts it off: still a json_parse_failure, subtype
    ``unclassified``, listed with the validation timeouts."""
    text = "x" + "[" * 40 + "1," * 5_000_000 + "x"
    f = tmp_path / "big.jsonl"
    f.write_text(json.dumps({"text": text}) + "\n" + GOOD)
    doc = run_audit(str(f), AuditOptions(timeout=0.3)).to_json()
    assert doc["categories"] == {"ok": 1, "json_parse_failure": 1}
    assert doc["parse_failures"] == {"unclassified": 1}
    assert doc["validation_timeouts"] == {"count": 1, "lines": [1]}


def test_cut_points_land_just_after_newlines(tmp_path: Path) -> None:
    """``parallel.cut_points`` reads small blocks first and doubles them: a cut inside a line
    many blocks long (and one inside the last line, with no newline after it) still lands
    just after the next newline, as a byte-by-byte search would put it."""
    from schemaops.audit.run.parallel import FIRST_BLOCK, cut_points

    lines = [b"a" * n for n in (10, 7 * FIRST_BLOCK, 3, FIRST_BLOCK - 1, 2 * FIRST_BLOCK, 5)]
    path = tmp_path / "lines.jsonl"
    data = b"\n".join(lines)  # the last line has no newline
    path.write_bytes(data)
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 10]
    for jobs in (1, 2, 3, 5, 8):
        cuts = cut_points(str(path), jobs)
        assert cuts[0] == 0 and cuts[-1] == len(data)
        assert cuts == sorted(set(cuts))
        for cut in cuts[1:-1]:
            assert data[cut - 1 : cut] == b"\n"
        assert set(cuts[:-1]) <= set(starts)


def test_cut_points_taper_towards_the_end(tmp_path: Path) -> None:
    """The last slices shrink (each a share of what is left, down to ``MIN_SLICE``), so the
    workers finish close together; the cuts still cover the file, each after a newline."""
    from schemaops.audit.run.parallel import MIN_SLICE, cut_points

    line = b'{"schema": "s", "text": "' + b"x" * 90 + b'"}\n'
    path = tmp_path / "big.jsonl"
    path.write_bytes(line * (48 * MIN_SLICE // len(line)))
    cuts = cut_points(str(path), 2)
    sizes = [b - a for a, b in zip(cuts, cuts[1:], strict=False)]
    assert cuts[0] == 0 and cuts[-1] == path.stat().st_size
    assert all(c % len(line) == 0 for c in cuts)  # each just after a newline
    assert len(sizes) > 8  # more than the jobs * 4 equal slices
    assert sizes[-2] < sizes[0] / 2  # the end is cut finer than the start
    assert all(s >= MIN_SLICE - len(line) for s in sizes[:-1])  # never below the floor
    assert sizes[:-1] == sorted(sizes[:-1], reverse=True)  # shrinking, never growing
