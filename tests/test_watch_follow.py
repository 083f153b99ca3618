"""``schemaops watch`` reading logs: p equal to audit's, partial lines, rotation, truncation,
``.gz`` rolls, restarts without a line lost or doubled, hostile inputs (real files, real
audit; no doubles)."""

from __future__ import annotations

import gzip
import os
import threading
import time
from pathlib import Path

import pytest
from watch_support import audit_doc, by_schema, mixed, record, registry, watch_once

from schemaops.audit import AuditOptions
from schemaops.errors import InputError
from schemaops.watch import WatchOptions, run_watch
from schemaops.watch.follow import Follower


def _lines(follower: Follower) -> list[bytes]:
    return [line for b in follower.poll() for line in b.lines]


def test_p_per_schema_equals_audit(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    log = tmp_path / "log.jsonl"
    log.write_bytes(mixed(0, 500) + b"not json\n" + b'{"schema": "nope", "text": "{}"}\n')
    doc = audit_doc(log, reg)
    snap = watch_once([str(log)], reg)
    assert by_schema(snap) == by_schema(doc)
    assert snap["p"] == doc["p"] and snap["outputs"] == doc["outputs"] == 500
    assert snap["input_errors"] == doc["input_errors"] == 2
    assert snap["windows"]["5m"]["item"]["p"] == doc["by_schema"]["item"]["p"]


def test_partial_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    whole = record(1)
    log.write_bytes(record(0) + whole[:10])
    f = Follower([str(log)])
    assert len(_lines(f)) == 1
    assert _lines(f) == []  # still no newline: not consumed
    with open(log, "ab") as fh:
        fh.write(whole[10:])
    assert _lines(f) == [whole[:-1]]
    f.close()


def test_rotation_reads_old_tail_and_new_file_once(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(mixed(0, 10))
    f = Follower([str(log)])
    assert len(_lines(f)) == 10
    with open(log, "ab") as old:
        os.rename(log, tmp_path / "log.jsonl.1")  # rotated: the writer still holds the old one
        old.write(mixed(10, 3))
        log.write_bytes(mixed(100, 4))
        old.write(mixed(13, 2))  # written before the writer reopened
    got = _lines(f)
    want = (mixed(10, 5) + mixed(100, 4)).splitlines()
    assert sorted(got) == sorted(want)
    assert f.events.rotations == 1
    assert _lines(f) == []
    f.close()


def test_truncation_starts_over(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(mixed(0, 20))
    f = Follower([str(log)])
    assert len(_lines(f)) == 20
    with open(log, "r+b") as fh:  # copytruncate
        fh.truncate(0)
    log.write_bytes(mixed(50, 5))
    after = [line for _ in range(4) for line in _lines(f)]  # polled several times after
    assert sorted(after) == sorted(mixed(50, 5).splitlines())
    assert f.events.truncations == 1
    f.close()


def test_restart_neither_loses_nor_doubles(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    log, state = tmp_path / "log.jsonl", tmp_path / "state"
    data = mixed(0, 300)
    cut = data.index(b"\n", len(data) // 2) + 15  # the first run ends inside a line
    log.write_bytes(data[:cut])
    first = watch_once([str(log)], reg, state)
    with open(log, "ab") as fh:
        fh.write(data[cut:])
    second = watch_once([str(log)], reg, state)
    third = watch_once([str(log)], reg, state)  # nothing new: nothing counted again
    full = audit_doc(log, reg)
    assert 0 < first["outputs"] < second["outputs"] == full["outputs"] == 300
    assert by_schema(second) == by_schema(full) == by_schema(third)
    assert second["lines"] == third["lines"] == 300


def test_restart_after_rotation_to_gz_reads_the_rest_from_the_roll(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    log, state = tmp_path / "app.jsonl", tmp_path / "state"
    log.write_bytes(mixed(0, 100))
    watch_once([str(log)], reg, state)
    with open(log, "ab") as fh:
        fh.write(mixed(100, 40))  # written while watch was down, then rotated and gzipped
    with gzip.open(tmp_path / "app.jsonl.1.gz", "wb") as gz:
        gz.write(log.read_bytes())
    everything = log.read_bytes()
    log.unlink()
    log.write_bytes(mixed(500, 25))
    snap = watch_once([str(tmp_path / "app.jsonl*")], reg, state)
    expected = tmp_path / "expected.jsonl"
    expected.write_bytes(everything + mixed(500, 25))
    assert by_schema(snap) == by_schema(audit_doc(expected, reg))
    assert snap["outputs"] == 165


def test_gz_given_at_start_is_read_whole(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    with gzip.open(tmp_path / "old.jsonl.gz", "wb") as gz:
        gz.write(mixed(0, 70))
    snap = watch_once([str(tmp_path)], reg)
    assert snap["outputs"] == 70


def test_overlong_and_hostile_lines_are_counted_never_fatal(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    log = tmp_path / "log.jsonl"
    hostile = [
        b"x" * 5000 + b"\n",  # past --max-line below
        b"\xff\xfe not utf-8\n",
        b"[" * 100_000 + b"\n",
        b'{"schema": "\\u001b[2Jitem", "text": "{}"}\n',
        b"\n",
    ]
    log.write_bytes(mixed(0, 10) + b"".join(hostile) + mixed(10, 10))
    snap = watch_once([str(log)], reg, max_line=4096)
    assert snap["outputs"] == 20 and snap["input_errors"] == len(hostile)


def test_fifo_as_file_is_refused_and_in_a_folder_skipped(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        watch_once([str(fifo)], reg)
    (tmp_path / "ok.jsonl").write_bytes(mixed(0, 5))
    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")  # a symlink loop
    snap = watch_once([str(tmp_path)], reg)  # returns: neither the FIFO nor the loop hang it
    assert snap["outputs"] == 5 and snap["follow"]["unreadable"] == 1


def test_second_watch_on_one_state_dir_is_refused(tmp_path: Path) -> None:
    from schemaops.watch.state import StateDir

    held = StateDir(tmp_path / "state")
    try:
        with pytest.raises(InputError, match="another schemaops watch"):
            watch_once([str(tmp_path / "none.jsonl")], registry(tmp_path), tmp_path / "state")
    finally:
        held.close()


def test_live_loop_sees_appended_lines_and_stops_on_event(tmp_path: Path) -> None:
    """The loop proper (not --once), in a thread: lines appended while it runs are counted
    within a generous deadline; setting the stop event ends it with the state saved."""
    reg = registry(tmp_path)
    log, state = tmp_path / "log.jsonl", tmp_path / "state"
    log.write_bytes(b"")
    stop = threading.Event()
    opts = WatchOptions(
        targets=[str(log)],
        audit=AuditOptions(registry=str(reg), cache=False),
        listen=None,
        state_dir=str(state),
        interval=0.05,
    )
    result: dict = {}
    t = threading.Thread(target=lambda: result.update(run_watch(opts, stop=stop)))
    t.start()
    try:
        for k in range(5):
            with open(log, "ab") as fh:
                fh.write(mixed(k * 20, 20))
            time.sleep(0.05)
    finally:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (state / "watch-state.json").exists():
            time.sleep(0.05)
        time.sleep(0.5)
        stop.set()
        t.join(60)
    assert not t.is_alive()
    assert result["outputs"] == 100
    assert watch_once([str(log)], reg, state)["outputs"] == 100  # resumed: nothing doubled


def test_corrupt_gz_in_a_folder_is_counted_once_and_the_rest_read(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "bad.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00garbage" * 10)
    (logs / "ok.jsonl").write_bytes(mixed(0, 12))
    f = Follower([str(logs)])
    got = [line for _ in range(4) for b in f.poll() for line in b.lines]
    assert len(got) == 12 and f.events.unreadable == 1
    f.close()
    assert watch_once([str(logs)], reg)["outputs"] == 12
