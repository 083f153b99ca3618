"""Hostile input files for ``audit`` (issue 22, "Trust, round two"): FIFOs and devices, symlink
loops and aliases, object-store URIs without a network, a Parquet codec the library cannot
read. Each gets a bounded, clean answer: the real CLI in a subprocess with a generous outer
timeout, so a regression (a hang) fails the test instead of hanging the suite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_support import REPO

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
#: Outer bound on one CLI run: far above what any of these takes (about a second), far
#: below "forever"; a hang is then a TimeoutExpired, a failed test.
BOUND_S = 90


def _schema(tmp_path: Path) -> str:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCHEMA))
    return str(path)


def _log(path: Path, n: int = 2) -> Path:
    path.write_text("".join(json.dumps({"text": json.dumps({"a": i})}) + "\n" for i in range(n)))
    return path


def run_cli(
    *args: str, timeout: float = BOUND_S, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m schemaops ARGS`` in its own process group, all of it killed past
    ``timeout`` (a regression that hangs would otherwise leave ``--jobs`` workers behind
    reading ``/dev/zero``); the timeout then fails the test."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "schemaops", *args],
        cwd=REPO,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"schemaops {' '.join(args)} still running after {timeout} s")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _audit(tmp_path: Path, *args: str, timeout: float = BOUND_S):
    return run_cli(
        "audit", *args, "--schema", _schema(tmp_path), "--json", "--no-cache", timeout=timeout
    )


# --- #9: only regular files (and '-') are read -------------------------------------------


def _fifo_folder(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    _log(logs / "a.jsonl")
    os.mkfifo(logs / "b.jsonl")  # no writer: opening it blocks, reading it never ends
    (logs / "z.jsonl").symlink_to("/dev/zero")  # a device: endless zero bytes
    return logs


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_fifo_and_device_in_a_folder_are_unreadable_shards(tmp_path: Path, jobs: str) -> None:
    """Trust #9: fails on main before this (the audit blocks on the FIFO forever)."""
    logs = _fifo_folder(tmp_path)
    r = _audit(tmp_path, str(logs), "--jobs", jobs)
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    assert doc["outputs"] == 2 and doc["ok"] == 2  # a.jsonl audited
    bad = {Path(u["shard"]).name: u["message"] for u in doc["shards"]["unreadable"]}
    assert set(bad) == {"b.jsonl", "z.jsonl"}
    assert all("not a regular file" in m for m in bad.values())
    assert "unreadable shard" in r.stderr and "b.jsonl" in r.stderr


@pytest.mark.parametrize("name", ["b.jsonl", "z.jsonl"])
def test_a_named_fifo_or_device_is_refused(tmp_path: Path, name: str) -> None:
    """Trust #9: one FIFO or device named alone, or beside a good file: exit 2, named."""
    logs = _fifo_folder(tmp_path)
    r = _audit(tmp_path, str(logs / name))
    assert r.returncode == 2 and name in r.stderr and "not a regular file" in r.stderr
    assert "Traceback" not in r.stderr
    r = _audit(tmp_path, str(logs / "a.jsonl"), str(logs / name))
    assert r.returncode == 2, r.stderr
    assert json.loads(r.stdout)["outputs"] == 2


def test_stdin_named_explicitly_is_still_read(tmp_path: Path) -> None:
    r = run_cli(
        "audit",
        "-",
        "--schema",
        _schema(tmp_path),
        "--json",
        "--no-cache",
        stdin='{"text": "{\\"a\\": 1}"}\n',
        timeout=BOUND_S,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ok"] == 1


# --- #5: one file is one shard, whatever its paths ----------------------------------------


def _loop_tree(tmp_path: Path) -> Path:
    """``logs/a.jsonl`` (2 lines), ``logs/d/b.jsonl`` (3 lines), ``logs/d/up -> ..`` (a loop)
    and ``logs/e -> d`` (an alias folder); the glob once audited a.jsonl 41 times."""
    logs = tmp_path / "logs"
    (logs / "d").mkdir(parents=True)
    _log(logs / "a.jsonl", 2)
    _log(logs / "d" / "b.jsonl", 3)
    (logs / "d" / "up").symlink_to("..")
    (logs / "e").symlink_to("d")
    return logs


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_glob_through_a_symlink_loop_reads_each_file_once(tmp_path: Path, jobs: str) -> None:
    """Trust #5: fails on main before this (82 outputs from a 2-line file, exit 0)."""
    logs = _loop_tree(tmp_path)
    r = _audit(tmp_path, str(logs / "**" / "*.jsonl"), "--jobs", jobs)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["outputs"] == 5 and doc["lines"] == 5
    assert doc["shards"]["count"] == 2


def test_a_file_named_twice_or_by_an_alias_counts_once(tmp_path: Path) -> None:
    """Trust #5: the same (device, inode) under two paths is one shard; the skip is said."""
    logs = _loop_tree(tmp_path)
    a, b = logs / "a.jsonl", logs / "d" / "b.jsonl"
    alias = tmp_path / "alias.jsonl"
    alias.symlink_to(a)
    r = _audit(tmp_path, str(a), str(a), str(alias), str(logs / "e" / "b.jsonl"), str(b))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["outputs"] == 5
    assert doc["shards"]["count"] == 2 and doc["shards"]["duplicates_skipped_count"] == 3
    assert doc["shards"]["duplicates_skipped"] == [
        {"shard": str(a), "same_as": str(a)},
        {"shard": str(alias), "same_as": str(a)},
        {"shard": str(b), "same_as": str(logs / "e" / "b.jsonl")},
    ]
    assert r.stderr.count("warning: duplicate path skipped") == 3
    # a folder and a glob over the same files: each file once
    r = _audit(tmp_path, str(logs), str(logs / "**" / "*.jsonl"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outputs"] == 5
