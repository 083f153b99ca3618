"""``watch`` under the rotation sequences people run (logrotate's rename, ``copytruncate``,
``compress``, ``dateext``; Python's and SGLang's renamed logs; many rolled files; restarts),
each against real files, polled several times after the event, and compared with
``schemaops audit`` on the same lines (issue 33, items 1-4, 22-24)."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from watch_support import audit_doc, by_schema, mixed, registry, watch_once

from schemaops.watch import follow, reading
from schemaops.watch.files import followed_name
from schemaops.watch.follow import Follower


def _polls(f: Follower, n: int = 4) -> list[bytes]:
    """Every line ``n`` polls give (after an event: several, so a re-count shows); a
    ``.gz``'s lines come with their newline, a plain file's without."""
    return [line.removesuffix(b"\n") for _ in range(n) for b in f.poll() for line in b.lines]


def _equal_to_audit(tmp: Path, got: list[bytes], want: bytes) -> None:
    """The lines the follower gave, audited, equal the audit of the lines written."""
    reg = registry(tmp)
    a, b = tmp / "got.txt", tmp / "want.txt"
    a.write_bytes(b"".join(line + b"\n" for line in got))
    b.write_bytes(want)
    assert sorted(got) == sorted(want.splitlines())
    assert by_schema(audit_doc(a, reg)) == by_schema(audit_doc(b, reg))


def _copytruncate(log: Path, to: Path) -> None:
    """logrotate's ``copytruncate``: copy the live file, then truncate it in place."""
    shutil.copyfile(log, to)
    with open(log, "r+b") as fh:
        fh.truncate(0)


def _gzip(path: Path) -> Path:
    """logrotate's ``compress``: ``gzip FILE`` (FILE.gz written, FILE removed)."""
    out = path.with_name(path.name + ".gz")
    with open(path, "rb") as src, gzip.open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()
    return out


def test_copytruncate_counts_once_however_often_polled(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "app.log"
    log.write_bytes(mixed(0, 20))
    f = Follower([str(logs)])
    got = _polls(f)
    _copytruncate(log, logs / "app.log.1")
    with open(log, "ab") as fh:
        fh.write(mixed(50, 5))
    got += _polls(f, 5)
    _equal_to_audit(tmp_path, got, mixed(0, 20) + mixed(50, 5))
    assert f.events.truncations == 1
    f.close()


def test_copytruncate_compress_keeps_lines_written_since_the_last_poll(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "app.log"
    log.write_bytes(mixed(0, 20))
    f = Follower([str(logs)])
    got = _polls(f)
    with open(log, "ab") as fh:
        fh.write(mixed(20, 7))  # written after the last poll: in the roll only
    _copytruncate(log, logs / "app.log.1")
    _gzip(logs / "app.log.1")
    with open(log, "ab") as fh:
        fh.write(mixed(50, 5))
    got += _polls(f, 5)
    _equal_to_audit(tmp_path, got, mixed(0, 27) + mixed(50, 5))
    f.close()


def test_copytruncate_then_delayed_compress_polled_between(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "app.log"
    log.write_bytes(mixed(0, 20))
    f = Follower([str(logs)])
    got = _polls(f)
    with open(log, "ab") as fh:
        fh.write(mixed(20, 7))
    _copytruncate(log, logs / "app.log.1")
    with open(log, "ab") as fh:
        fh.write(mixed(50, 3))
    got += _polls(f, 3)  # the plain copy is seen first (delaycompress)
    _gzip(logs / "app.log.1")
    with open(log, "ab") as fh:
        fh.write(mixed(60, 2))
    got += _polls(f, 3)
    _equal_to_audit(tmp_path, got, mixed(0, 27) + mixed(50, 3) + mixed(60, 2))
    f.close()


def test_rotated_file_is_read_to_its_end_after_the_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(follow, "ROTATE_GRACE_S", 0.0)  # the grace is over at once
    monkeypatch.setattr(reading, "CHUNK", 1024)  # reads of 1 KiB: a poll reads 4 KiB
    log, away = tmp_path / "app.log", tmp_path / "archive"
    away.mkdir()
    data = mixed(0, 300)
    log.write_bytes(data[:2000])
    f = Follower([str(log)], batch_bytes=4096)  # behind: a poll reads 4 KiB
    got = _polls(f, 1)
    with open(log, "ab") as fh:
        fh.write(data[2000:])
        os.rename(log, away / "app.log")  # renamed out of the followed set
    got += _polls(f, 40)
    _equal_to_audit(tmp_path, got, data)
    assert f.events.lost_rotations == 0
    f.close()


@pytest.mark.parametrize(
    "rolled",
    [
        "host_0.log.2026-12-03_13",  # SGLang's hourly rename (TimedRotatingFileHandler 'H')
        "app.log-20261203",  # logrotate dateext
        "app.log.1",  # logrotate / RotatingFileHandler
    ],
)
def test_rename_while_down_is_followed_by_its_rolled_name(tmp_path: Path, rolled: str) -> None:
    reg = registry(tmp_path)
    logs, state = tmp_path / "logs", tmp_path / "state"
    logs.mkdir()
    base = logs / rolled.split(".log")[0]
    log = base.with_name(base.name + ".log")
    log.write_bytes(mixed(0, 40))
    assert watch_once([str(logs)], reg, state)["outputs"] == 40
    with open(log, "ab") as fh:
        fh.write(mixed(40, 15))  # written while watch is down, then renamed
    os.rename(log, logs / rolled)
    log.write_bytes(mixed(100, 6))
    snaps = [watch_once([str(logs)], reg, state) for _ in range(3)]
    want = tmp_path / "want.jsonl"
    want.write_bytes(mixed(0, 55) + mixed(100, 6))
    for snap in snaps:
        assert by_schema(snap) == by_schema(audit_doc(want, reg))
        assert snap["follow"]["lost_rotations"] == 0


def test_file_deleted_before_it_was_read_is_a_counted_loss(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    logs, state = tmp_path / "logs", tmp_path / "state"
    logs.mkdir()
    log = logs / "app.log"
    log.write_bytes(mixed(0, 30))
    watch_once([str(logs)], reg, state)
    with open(log, "ab") as fh:
        fh.write(mixed(30, 10))
    log.unlink()  # rotated and removed while watch was down: 10 lines cannot be read
    (logs / "other.log").write_bytes(mixed(200, 4))  # the new inode is not app.log's
    err = tmp_path / "err.txt"
    with open(err, "w") as e:
        from schemaops.audit import AuditOptions
        from schemaops.watch import WatchOptions, run_watch

        opts = WatchOptions(
            targets=[str(logs)],
            audit=AuditOptions(registry=str(reg), cache=False),
            listen=None,
            state_dir=str(state),
            once=True,
            json_lines=True,
        )
        with open(tmp_path / "out.txt", "w") as out:
            snap = run_watch(opts, out=out, err=e)
    assert snap["outputs"] == 34
    assert snap["follow"]["lost_rotations"] == 1
    assert '"lost_rotations":1' in (tmp_path / "out.txt").read_text()
    assert "lost" in err.read_text()
    again = watch_once([str(logs)], reg, state)  # said once, not at every restart
    assert again["follow"]["lost_rotations"] == 0 and again["outputs"] == 34


def test_more_rolled_files_than_remembered_are_counted_once(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    logs, state = tmp_path / "logs", tmp_path / "state"
    logs.mkdir()
    n = follow.RETIRED_MAX + 100
    for i in range(n):
        (logs / f"app.log.{i}.gz").write_bytes(gzip.compress(mixed(2 * i, 2), mtime=0))
    f = Follower([str(logs)])
    got = _polls(f, 4)
    assert len(got) == 2 * n
    f.close()
    snaps = [watch_once([str(logs)], reg, state) for _ in range(3)]
    assert [s["outputs"] for s in snaps] == [2 * n] * 3


def test_create_compress_with_inode_reuse_across_restarts(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    logs, state = tmp_path / "logs", tmp_path / "state"
    logs.mkdir()
    log = logs / "app.log"
    log.write_bytes(mixed(0, 100))
    counts = [watch_once([str(logs)], reg, state)["outputs"]]
    with open(log, "ab") as fh:
        fh.write(mixed(100, 50))
    ino = log.stat().st_ino
    os.rename(log, logs / "app.log.1")  # logrotate create + compress, watch down
    _gzip(logs / "app.log.1")  # frees the inode
    log.write_bytes(mixed(500, 20))  # the new log
    if log.stat().st_ino != ino:
        pytest.skip("this filesystem did not hand the freed inode to the new log")
    snaps = [watch_once([str(logs)], reg, state) for _ in range(3)]
    assert counts + [s["outputs"] for s in snaps] == [100, 170, 170, 170]
    assert [s["follow"]["lost_rotations"] for s in snaps] == [0, 0, 0]


def test_more_files_than_the_open_file_limit(tmp_path: Path) -> None:
    """1,100 files under ``ulimit -n 1024``: read, never "Too many open files"."""
    reg = registry(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(1100):
        (logs / f"f{i:04}.jsonl").write_bytes(mixed(i, 1))
    code = (
        "import resource, sys, orjson\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))\n"
        "from schemaops.audit import AuditOptions\n"
        "from schemaops.watch import WatchOptions, run_watch\n"
        "opts = WatchOptions(targets=[sys.argv[1]], listen=None, once=True,\n"
        "    audit=AuditOptions(registry=sys.argv[2], cache=False))\n"
        "print(orjson.dumps(run_watch(opts)).decode())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(logs), str(reg)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"outputs":1100' in done.stdout


def test_idle_files_are_closed_and_reopened(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(40):
        (logs / f"f{i:02}.jsonl").write_bytes(mixed(i, 1))
    f = Follower([str(logs)], max_open=8)
    got = _polls(f, 3)
    assert len(got) == 40
    assert sum(t.fh is not None for t in f.files.values()) <= 8
    for i in range(0, 40, 3):
        with open(logs / f"f{i:02}.jsonl", "ab") as fh:
            fh.write(mixed(100 + i, 2))
    got += _polls(f, 4)
    assert len(got) == 40 + 2 * 14
    assert sum(t.fh is not None for t in f.files.values()) <= 8
    f.close()


def test_non_utf8_file_name_never_breaks_outputs(tmp_path: Path) -> None:
    from schemaops.watch.serve import families

    reg = registry(tmp_path)
    logs, state = tmp_path / "logs", tmp_path / "state"
    logs.mkdir()
    name = os.fsdecode(b"app-\xff\xfe.log")
    (logs / name).write_bytes(mixed(0, 5) + mixed(5, 1)[:-3])  # a partial line: lag > 0
    snap = watch_once([str(logs)], reg, state, json_lines=True)
    assert snap["outputs"] == 5
    assert watch_once([str(logs)], reg, state)["outputs"] == 5  # the state was saved

    class _One:
        def collect(self):  # noqa: ANN202 - prometheus-client's collector protocol
            return families_of

    families_of = list(families({**snap, "hooks": {}, "started": 0.0}))
    r = CollectorRegistry()
    r.register(_One())
    assert b"schemaops_watch_lag_bytes" in generate_latest(r)


@pytest.mark.parametrize("compress", [False, True])
def test_copytruncate_of_a_file_target_reads_the_copy(tmp_path: Path, compress: bool) -> None:
    """``watch app.log`` (a FILE): the copy is not a followed name, but it is where the
    lines written since the last poll are: it is found among the file's rotated names."""
    log = tmp_path / "app.log"
    (tmp_path / "app.log.2.gz").write_bytes(gzip.compress(mixed(900, 3)))  # an older roll
    log.write_bytes(mixed(0, 20))
    f = Follower([str(log)])
    got = _polls(f)
    with open(log, "ab") as fh:
        fh.write(mixed(20, 7))
    _copytruncate(log, tmp_path / "app.log.1")
    if compress:
        _gzip(tmp_path / "app.log.1")
    with open(log, "ab") as fh:
        fh.write(mixed(50, 5))
    got += _polls(f, 5)
    _equal_to_audit(tmp_path, got, mixed(0, 27) + mixed(50, 5))
    f.close()


def test_rolled_files_removed_while_down_are_no_loss(tmp_path: Path) -> None:
    """Retention removing old rolls that were read to their end loses nothing: no count."""
    reg = registry(tmp_path)
    logs, state = tmp_path / "logs", tmp_path / "state"
    logs.mkdir()
    for i in range(1, 4):
        (logs / f"app.log.{i}").write_bytes(mixed(10 * i, 5))
    (logs / "app.log").write_bytes(mixed(0, 5))
    assert watch_once([str(logs)], reg, state)["outputs"] == 20
    (logs / "app.log.3").unlink()
    snap = watch_once([str(logs)], reg, state)
    assert snap["outputs"] == 20 and snap["follow"]["lost_rotations"] == 0


@pytest.mark.parametrize("handler", ["timed", "size"])
def test_python_logging_rollover_is_followed(
    tmp_path: Path, handler: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's own rotating handlers (``doRollover``: the rename they do on time or size;
    TimedRotatingFileHandler names ``app.log.2026-12-03_13``, as SGLang's hourly log),
    with the reader behind (it reads 4 KiB a poll) and no grace: the rolled name is followed
    as the file it was, however long the reader needs."""
    import logging
    import logging.handlers

    monkeypatch.setattr(follow, "ROTATE_GRACE_S", 0.0)
    monkeypatch.setattr(reading, "CHUNK", 1024)

    logs = tmp_path / "logs"
    logs.mkdir()
    path = str(logs / "app.log")
    h: logging.Handler = (
        logging.handlers.TimedRotatingFileHandler(path, when="H")
        if handler == "timed"
        else logging.handlers.RotatingFileHandler(path, maxBytes=0, backupCount=5)
    )
    h.setFormatter(logging.Formatter("%(message)s"))
    log = logging.getLogger(f"schemaops-test-{handler}")
    log.propagate = False
    log.addHandler(h)
    log.setLevel(logging.INFO)
    try:
        f = Follower([str(logs)], batch_bytes=4096)
        lines = mixed(0, 600).decode().splitlines()
        for line in lines[:150]:
            log.info(line)
        got = _polls(f, 1)  # 4 of its 15 KiB
        rounds = 2 if handler == "size" else 1  # a second hourly roll in one hour overwrites
        for r in range(rounds):
            for line in lines[150 + 200 * r : 250 + 200 * r]:
                log.info(line)
            h.doRollover()  # type: ignore[attr-defined]
            for line in lines[250 + 200 * r : 350 + 200 * r]:
                log.info(line)
            got += _polls(f, 20)
        want = "".join(x + "\n" for x in lines[: 150 + 200 * rounds])
        _equal_to_audit(tmp_path, got, want.encode())
        rolled = sorted(p.name for p in logs.iterdir() if p.name != "app.log")
        assert rolled and all(followed_name(n) for n in rolled)
        f.close()
    finally:
        log.removeHandler(h)
        h.close()
