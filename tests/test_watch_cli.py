"""``schemaops watch`` as a user runs it: /metrics read by prometheus-client's own parser,
--json-lines, SIGTERM saving the state, usage errors (exit 2)."""

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


def _samples(text: str) -> dict[tuple[str, tuple], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def _address(proc: subprocess.Popen, deadline: float) -> str:
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if "serving http://" in line:
            return line.split("serving ", 1)[1].strip()
        if not line and proc.poll() is not None:
            break
    raise AssertionError(f"no address printed (exit {proc.poll()})")


def test_metrics_follow_the_log_and_sigterm_saves_state(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    log, state = tmp_path / "log.jsonl", tmp_path / "state"
    log.write_bytes(mixed(0, 100))
    proc = subprocess.Popen(
        [sys.executable, "-m", "schemaops", "watch", str(log), "--registry", str(reg),
         "--listen", "127.0.0.1:0", "--interval", "0.1s", "--state-dir", str(state),
         "--json-lines", "--summary-interval", "0.2s", "--window", "1m", "--no-cache"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        url = _address(proc, time.monotonic() + 120) + "/metrics"
        with open(log, "ab") as fh:
            fh.write(mixed(100, 60) + b"not json\n")
        full = audit_doc(log, reg)
        deadline = time.monotonic() + 60
        samples: dict = {}
        while time.monotonic() < deadline:
            samples = _samples(httpx.get(url, timeout=10).text)
            if samples.get(("schemaops_watch_lines_total", ())) == 161:
                break
            time.sleep(0.1)
        for schema, row in full["by_schema"].items():
            for cat, n in row["categories"].items():
                key = (("category", cat), ("schema", schema))
                assert samples[("schemaops_watch_outputs_total", key)] == n
            p = samples[("schemaops_watch_p", (("schema", schema), ("window", "1m")))]
            assert p == row["p"]
            key = (("input", "watch"), ("schema", schema))
            assert samples[("schemaops_audit_schema_p", key)] == row["p"]
        assert samples[("schemaops_watch_input_errors_total", ())] == 1
        assert samples[("schemaops_audit_p", (("input", "watch"),))] == full["p"]
        assert ("schemaops_watch_lag_bytes", (("file", str(log)),)) in samples
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows and rows[-1]["outputs"] == 160 and rows[-1]["p"] == full["p"]
    saved = json.loads((state / "watch-state.json").read_text())
    assert saved["totals"]["outputs"] == 160
    assert saved["files"][0]["offset"] == os.path.getsize(log)


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    (tmp_path / "log.jsonl").write_bytes(mixed(0, 3))
    log = str(tmp_path / "log.jsonl")
    r = run_cli("watch", log, "--registry", str(reg), "--listen", "nowhere", "--once")
    assert r.returncode == 2 and "--listen expects HOST:PORT" in r.stderr
    r = run_cli("watch", log, "--interval", "soon", "--once")
    assert r.returncode == 2 and "--interval" in r.stderr
    fifo = tmp_path / "p.jsonl"
    os.mkfifo(fifo)
    r = run_cli("watch", str(fifo), "--once", "--listen", "none", timeout=60)
    assert r.returncode == 2 and "not a regular file" in r.stderr


def test_once_json_is_one_document(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    (tmp_path / "log.jsonl").write_bytes(mixed(0, 30))
    r = run_cli(
        "watch", str(tmp_path / "log.jsonl"), "--registry", str(reg), "--once", "--json",
        "--listen", "none",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outputs"] == 30


def test_stdin_is_read_to_its_end(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    r = run_cli(
        "watch", "-", "--registry", str(reg), "--json", "--listen", "none",
        stdin=mixed(0, 40).decode(),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outputs"] == 40


def test_once_prints_the_summary_and_serves_nothing_by_default(tmp_path: Path) -> None:
    """``--once`` with /metrics' default port taken (a watch daemon runs there): exit 0, the
    audit's terminal summary on stdout, no server; ``--listen`` given explicitly serves."""
    import socket

    reg = registry(tmp_path)
    log = tmp_path / "log.jsonl"
    log.write_bytes(mixed(0, 30))
    full = audit_doc(log, reg)
    wide = {**os.environ, "COLUMNS": "200"}  # the report's lines unwrapped, whatever the CI
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            taken.bind(("127.0.0.1", 9464))
            taken.listen()
        except OSError:
            pass  # already taken by something else: the case under test either way
        r = run_cli(
            "watch", str(log), "--registry", str(reg), "--once", "--no-cache", env=wide,
        )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "serving" not in r.stderr
    assert f"30 total: 30 outputs classified, {full['ok']} ok, 0 input errors" in r.stdout
    assert "Per-step success p =" in r.stdout and "By schema" in r.stdout
    assert r.stdout.startswith("schemaops watch --once "), r.stdout[:80]  # not "audit"
    r = run_cli(
        "watch", str(log), "--registry", str(reg), "--once", "--listen", "127.0.0.1:0",
        "--no-cache",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "serving http://127.0.0.1:" in r.stderr and "outputs classified" in r.stdout
