"""warmup/warm-after-start.sh run for real against the dev server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lifecycle_support import kill_then_restart, stop_leaves_nothing
from warm_support import REPO, heavy_registry

from schemaops.devserver import DevServer

pytestmark = pytest.mark.integration


def test_shell_hook_warms_the_dev_server(sglang_server: DevServer, tmp_path: Path) -> None:
    spaced = tmp_path / "my registries"  # a path with a space, passed through WARM_ARGS
    spaced.mkdir()
    reg = heavy_registry(spaced, 1000, 3)
    report = tmp_path / "warm.json"
    env = dict(
        os.environ,
        SCHEMAOPS=f"{sys.executable} -m schemaops",
        WARM_ARGS=f"--registry '{reg}'",
        WARM_WAIT_READY="120",
        WARM_REPORT=str(report),
    )
    r = subprocess.run(
        [str(REPO / "warmup" / "warm-after-start.sh"), sglang_server.url],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert "3/3 warmed" in r.stderr
    doc = json.loads(report.read_text())
    assert doc["ok"] and doc["summary"]["warmed"] == 3
    assert [row["proof"] for row in doc["results"]].count("hit") >= 2, doc["results"]


def test_kubernetes_sidecar_rewarms_a_restarted_server(sglang_factory, tmp_path: Path) -> None:
    """warmup/kubernetes.yaml's sidecar and readiness scripts against a real server restart.

    The sidecar is paused while the server restarts (a new id in server-id, as the server
    container writes on start; an empty cache): readiness must fail although the emptyDir
    still holds the old marker, then pass once the sidecar has warmed the new server.
    """
    import signal

    from test_warm_deploy import _sidecar_parts, _wait_for

    (srv,) = sglang_factory(fresh=True)
    reg = heavy_registry(tmp_path, 1100, 2)
    _, warm, ready = _sidecar_parts()
    ready = ready.replace("/var/run/warm", str(tmp_path)).replace("http://127.0.0.1:30000", srv.url)
    warm_argv = [sys.executable, "-m", "schemaops", "warm", "--server", srv.url]
    warm_argv += ["--registry", str(reg), "--wait-ready", "300", "--timeout", "300"]
    warm_argv += ["--no-progress"]
    log, warmed = tmp_path / "sidecar.log", tmp_path / "warmed-id"

    def is_ready() -> bool:
        return subprocess.run(["sh", "-c", ready], capture_output=True).returncode == 0

    (tmp_path / "server-id").write_text("server-A\n")
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["sh", "-c", warm[2], "warm-sidecar", str(tmp_path), *warm_argv],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            start_new_session=True,
        )
    try:
        _wait_for(lambda: warmed.is_file() and warmed.read_text() == "server-A\n", 600, "A", log)
        assert is_ready()
        os.killpg(proc.pid, signal.SIGSTOP)  # the sidecar cannot react while the server restarts
        # a crash (SIGKILL) leaves no process; the restart keeps the URL (the lifecycle check)
        kill_then_restart(srv, lambda: (tmp_path / "server-id").write_text("server-B\n"))
        assert not is_ready()  # old marker, new server with an empty cache: not ready
        os.killpg(proc.pid, signal.SIGCONT)
        _wait_for(lambda: warmed.read_text() == "server-B\n", 600, "B", log)
        assert is_ready(), log.read_text()[-2000:]
        doc = json.loads((tmp_path / "report.json").read_text())
        assert doc["ok"] and doc["summary"]["warmed"] == 2, doc["summary"]
        stop_leaves_nothing(srv)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        os.killpg(proc.pid, signal.SIGCONT)
        proc.wait(timeout=10)
