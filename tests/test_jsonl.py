"""One JSONL reader (schemaops.jsonl) for audit and warm --from-log: the same rules for gzip,
broken streams, overlong lines and bytes that are not UTF-8 (issue 16.4)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from schemaops import jsonl
from schemaops.audit import AuditOptions, run_audit
from schemaops.errors import InputError
from schemaops.requestlog import scan

# A gzip header followed by a deflate block of the reserved type 3: zlib.error, not OSError.
BAD_DEFLATE = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff\x07" + b"\x00" * 20
REQUEST = json.dumps({"sampling_params": {"regex": "a"}}).encode() + b"\n"


def test_bad_deflate_data_is_an_input_error_for_both_readers(tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl.gz"
    f.write_bytes(BAD_DEFLATE)
    with pytest.raises(InputError, match="unreadable after line 0"):
        run_audit(str(f), AuditOptions(jobs=1))
    with pytest.raises(InputError, match="request log .* unreadable after line 0"):
        scan(f)


def test_gzip_is_recognised_by_its_bytes_for_both_readers(tmp_path: Path) -> None:
    f = tmp_path / "log.jsonl"  # gzip without a .gz name
    f.write_bytes(gzip.compress(REQUEST + json.dumps({"text": "{}"}).encode() + b"\n"))
    assert [x.line for x in scan(f).found] == [1]
    assert run_audit(str(f), AuditOptions(jobs=1)).to_json()["total"] == 2


def test_not_utf8_is_worded_the_same_by_both_readers(tmp_path: Path) -> None:
    f = tmp_path / "log.jsonl"
    f.write_bytes(REQUEST + b'{"text": "{}"}\n' + b'{"text": "\xff"}\n')
    reason = scan(f).input_errors[-1]["reason"]
    assert reason == "not UTF-8: byte 0xff at offset 10 of the line"
    doc = run_audit(str(f), AuditOptions(jobs=1)).to_json()
    assert doc["input_error_lines"][-1]["line"] == 3
    assert reason in doc["input_error_lines"][-1]["message"]


def test_missing_file_and_directory_are_input_errors(tmp_path: Path) -> None:
    for path in (tmp_path / "nope.jsonl", tmp_path):
        with pytest.raises(InputError, match="cannot read"), jsonl.open_lines(path, 10):
            pass


def test_overlong_lines_are_read_past_and_numbered(tmp_path: Path) -> None:
    f = tmp_path / "long.jsonl.gz"
    f.write_bytes(gzip.compress(b"a\n" + b"x" * 100 + b"\nb\n"))
    with jsonl.open_lines(f, 10) as lines:
        got = list(lines)
    assert got[0] == b"a\n" and type(got[1]) is jsonl.OverlongLine and got[2] == b"b\n"


def test_block_lines_matches_a_plain_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """``block_lines`` (the audit's reader) against ``bytes.split``, over seeded random files,
    line caps and block sizes small enough that lines straddle blocks: the same lines, an
    ``OverlongLine`` for each line over the cap (never held), no trailing empty line."""
    import io
    import random

    rng = random.Random(24)
    for _ in range(3000):
        lines = [b"x" * rng.choice([0, 1, 2, 3, 5, 8, 13]) for _ in range(rng.randint(0, 8))]
        data = b"\n".join(lines) + (b"\n" if rng.random() < 0.5 else b"")
        limit = rng.choice([1, 3, 5, 100])
        monkeypatch.setattr(jsonl, "BLOCK", rng.choice([1, 2, 3, 4, 7, 64]))
        parts = data.split(b"\n")
        if parts and parts[-1] == b"":
            parts.pop()
        want = ["over" if len(p) > limit else p for p in parts]
        got = jsonl.block_lines(io.BytesIO(data), limit, "t")
        assert [("over" if type(x) is jsonl.OverlongLine else x) for x in got] == want


def test_block_lines_names_the_line_a_stream_broke_after() -> None:
    import io

    whole = gzip.compress(b"".join(b'{"n": %d}\n' % i for i in range(300_000)))
    broken = gzip.GzipFile(fileobj=io.BytesIO(whole[: len(whole) // 2]))
    got = 0
    with pytest.raises(InputError, match=r"t: unreadable after line \d+: EOFError"):
        for _ in jsonl.block_lines(broken, 1 << 20, "t"):
            got += 1
    assert got > 0
