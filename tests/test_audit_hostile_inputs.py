"""Hostile input files for ``audit`` (issue 22, "Trust, round two"): FIFOs and devices, symlink
loops and aliases, object-store URIs without a network, a Parquet codec the library cannot
read. Each gets a bounded, clean answer: the real CLI in a subprocess with a generous outer
timeout, so a regression (a hang) fails the test instead of hanging the suite."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cli_support import REPO

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


# --- #10: every object-store call has a deadline -----------------------------------------

#: --open-timeout in these tests, and the bound they must finish within: the old code took
#: ~100 s on the silent endpoint below and never finished on gs:// without network.
DEADLINE_S = "3"
URI_BOUND_S = 60


@pytest.fixture
def silent_endpoint():
    """A loopback TCP port that accepts connections and never answers: an S3 endpoint that
    hangs (a fault no real store gives on demand; raw sockets, no HTTP double needed)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join(5)
    for c in held:
        c.close()
    srv.close()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_store_that_never_answers_is_exit_2_within_the_deadline(
    tmp_path: Path, silent_endpoint: int, jobs: str
) -> None:
    """Trust #10: fails on main before this (~100 s, past the bound). Beside a readable file
    too: a URI is looked up when the inputs are expanded, before any audit, so it is an
    input error with no report, as a missing path is."""
    uri = (
        f"s3://bucket/x.jsonl?endpoint_override=127.0.0.1:{silent_endpoint}"
        "&scheme=http&region=us-east-1"
    )
    good = _log(tmp_path / "a.jsonl")
    for args in ([uri], [str(good), uri]):
        r = _audit(
            tmp_path, *args, "--open-timeout", DEADLINE_S, "--jobs", jobs, timeout=URI_BOUND_S
        )
        assert r.returncode == 2, r.stderr
        assert f"cannot read {uri}: no answer from the store within 3 s" in r.stderr
        assert "Traceback" not in r.stderr and r.stdout == ""


@pytest.mark.parametrize("uri", ["gs://bucket/x.jsonl", "s3://bucket/x.jsonl"])
def test_an_object_store_without_network_is_exit_2(tmp_path: Path, uri: str) -> None:
    """Trust #10: gs:// without network hung forever on main (killed after 580 s); this
    machine has no network, so only a refused DNS lookup or connection leaves it."""
    r = _audit(tmp_path, uri, "--open-timeout", DEADLINE_S, timeout=URI_BOUND_S)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"error: cannot read {uri}: ")
    assert "Traceback" not in r.stderr


def test_open_timeout_must_be_positive(tmp_path: Path) -> None:
    r = _audit(tmp_path, str(_log(tmp_path / "a.jsonl")), "--open-timeout", "0")
    assert r.returncode == 2 and "--open-timeout must be above 0" in r.stderr
