"""``kill -9`` of a real ``schemaops watch`` between counting a batch and saving the state:
``/metrics`` never showed more than was saved, so a restart's counters never go backwards
(Prometheus would read the drop as a counter reset and ``increase()`` would spike).

The moment between the count and the save lasts microseconds: no scrape could land in it
except by luck. So the test sets ``SCHEMAOPS_WATCH_TEST_PAUSE`` (``schemaops/watch/run.py``),
a test hook that only waits at that one point (it writes ``paused-N`` in the folder and
waits for ``go-N``); nothing else in watch reads it. Everything else is real: the process,
the HTTP scrape, SIGKILL, the restart from the saved state.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from cli_support import REPO, run_cli
from prometheus_client.parser import text_string_to_metric_families
from watch_support import audit_doc, mixed, registry


def _lines_total(url: str) -> float:
    for fam in text_string_to_metric_families(httpx.get(url, timeout=10).text):
        for s in fam.samples:
            if s.name == "schemaops_watch_lines_total":
                return s.value
    raise AssertionError("no schemaops_watch_lines_total")


def _saved_lines(state: Path) -> int:
    path = state / "watch-state.json"
    return json.loads(path.read_text())["totals"]["lines"] if path.exists() else 0


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert proc.poll() is None, f"watch exited {proc.returncode}"
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.02)


def _address(proc: subprocess.Popen) -> str:
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if "serving http://" in line:
            return line.split("serving ", 1)[1].strip()
        if not line and proc.poll() is not None:
            break
    raise AssertionError(f"no address printed (exit {proc.poll()})")


def test_sigkill_between_count_and_save_never_shows_unsaved_counts(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    log, state, pause = tmp_path / "log.jsonl", tmp_path / "state", tmp_path / "pause"
    pause.mkdir()
    log.write_bytes(mixed(0, 50))
    env = {**os.environ, "SCHEMAOPS_WATCH_TEST_PAUSE": str(pause)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "schemaops", "watch", str(log), "--registry", str(reg),
         "--listen", "127.0.0.1:0", "--interval", "0.05s", "--state-dir", str(state),
         "--no-cache"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    seen: list[float] = []
    try:
        url = _address(proc) + "/metrics"
        _wait_for(pause / "paused-1", proc)  # 50 lines counted, nothing saved yet
        seen.append(_lines_total(url))
        assert seen[-1] <= _saved_lines(state) == 0
        (pause / "go-1").touch()
        with open(log, "ab") as fh:
            fh.write(mixed(50, 30))
        _wait_for(pause / "paused-2", proc)  # 30 more counted, 50 saved
        seen.append(_lines_total(url))
        assert seen[-1] <= _saved_lines(state) == 50
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    # the restart continues from what was saved: exactly the audit of the file, never less
    # than any value a scrape saw
    r = run_cli(
        "watch", str(log), "--registry", str(reg), "--state-dir", str(state), "--once",
        "--json", "--no-cache", "--listen", "none",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    full = audit_doc(log, reg)
    assert doc["lines"] == 80 and doc["outputs"] == full["outputs"] and doc["ok"] == full["ok"]
    assert all(v <= doc["lines"] for v in seen) and seen == sorted(seen)
