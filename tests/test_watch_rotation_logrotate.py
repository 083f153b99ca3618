"""``watch`` against the real ``logrotate`` binary (skipped where it is not installed, failed
under ``CI=true``, where ``.ci/run`` installs Debian's ``logrotate``): each
mode people configure, rotated twice between polls and between restarts, lines written before
and after each rotation, and the totals equal to ``schemaops audit`` of every line written."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from watch_support import audit_doc, by_schema, mixed, registry, watch_once

from schemaops.watch.follow import Follower

LOGROTATE = shutil.which("logrotate") or (
    "/usr/sbin/logrotate" if Path("/usr/sbin/logrotate").exists() else None
)
if LOGROTATE is None and os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
    # A CI run must not pass by running less: .ci/run installs logrotate first.
    raise RuntimeError("logrotate is not installed (CI=true): apt-get install logrotate")
pytestmark = pytest.mark.skipif(LOGROTATE is None, reason="logrotate is not installed")

MODES = {
    "create": "create",
    "create+compress": "create\n    compress",
    "create+compress+delaycompress": "create\n    compress\n    delaycompress",
    "copytruncate": "copytruncate",
    "copytruncate+compress": "copytruncate\n    compress",
    "dateext+compress": "create\n    compress\n    dateext",
}
#: (lines written before, after) each rotation; dateext names one rotation a day
ROUNDS = {m: [(7, 5), (4, 3)] for m in MODES} | {"dateext+compress": [(7, 5)]}


class Rotator:
    """``logrotate -f`` over one log with one mode (its own state file)."""

    def __init__(self, tmp: Path, log: Path, mode: str) -> None:
        self.conf = tmp / "logrotate.conf"
        self.state = tmp / "logrotate.state"
        self.conf.write_text(f"{log} {{\n    rotate 10\n    missingok\n    {MODES[mode]}\n}}\n")
        self.conf.chmod(0o644)

    def rotate(self) -> None:
        assert LOGROTATE is not None
        done = subprocess.run(
            [LOGROTATE, "-f", "-s", str(self.state), str(self.conf)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr


def _append(log: Path, data: bytes) -> None:
    """A writer that opens the log for each write (so ``create`` needs no signal)."""
    with open(log, "ab") as fh:
        fh.write(data)


def _audited(tmp: Path, reg: Path, data: bytes) -> dict:
    want = tmp / "want.txt"
    want.write_bytes(data)
    return by_schema(audit_doc(want, reg))


@pytest.mark.parametrize("target", ["dir", "file"])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_live_follower_under_logrotate(tmp_path: Path, mode: str, target: str) -> None:
    reg = registry(tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "app.log"
    rot = Rotator(tmp_path, log, mode)
    f = Follower([str(logs) if target == "dir" else str(log)])
    written = mixed(0, 20)
    _append(log, written)
    got = [line for b in f.poll() for line in b.lines]
    for k, (before, after) in enumerate(ROUNDS[mode]):
        more = mixed(100 * (k + 1), before)  # written since the last poll, then rotated
        _append(log, more)
        rot.rotate()
        later = mixed(100 * (k + 1) + 50, after)
        _append(log, later)
        written += more + later
        got += [line for _ in range(4) for b in f.poll() for line in b.lines]
    f.close()
    seen = tmp_path / "seen.txt"
    seen.write_bytes(b"".join(line.removesuffix(b"\n") + b"\n" for line in got))
    assert len(got) == len(written.splitlines())
    assert by_schema(audit_doc(seen, reg)) == _audited(tmp_path, reg, written)
    assert f.events.lost_rotations == 0


@pytest.mark.parametrize("mode", sorted(MODES))
def test_restarts_under_logrotate(tmp_path: Path, mode: str) -> None:
    """watch stopped, lines written, the log rotated, more lines, watch restarted: twice,
    each restart run twice (the second must count nothing)."""
    reg = registry(tmp_path)
    logs, state = tmp_path / "logs", tmp_path / "state"
    logs.mkdir()
    log = logs / "app.log"
    rot = Rotator(tmp_path, log, mode)
    written = mixed(0, 20)
    _append(log, written)
    assert by_schema(watch_once([str(logs)], reg, state)) == _audited(tmp_path, reg, written)
    for k, (before, after) in enumerate(ROUNDS[mode]):
        more, later = mixed(100 * (k + 1), before), mixed(100 * (k + 1) + 50, after)
        _append(log, more)
        rot.rotate()
        _append(log, later)
        written += more + later
        want = _audited(tmp_path, reg, written)
        for _ in range(2):
            snap = watch_once([str(logs)], reg, state)
            assert by_schema(snap) == want
            assert snap["follow"]["lost_rotations"] == 0
