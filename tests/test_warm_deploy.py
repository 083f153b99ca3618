"""The deploy integrations in warmup/: parsed, and their command lines are valid warm calls.

The shell hook runs for real here (against a closed port; against the dev server in
tests/integration/test_warm_hooks.py). Kubernetes and systemd cannot run here: their files
are parsed and every `schemaops warm` command line in them is parsed by the real CLI.
"""

from __future__ import annotations

import configparser
import os
import shlex
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml

REPO = Path(__file__).resolve().parents[1]
WARMUP = REPO / "warmup"


def check_warm_argv(argv: list[str]) -> Any:
    """Parse ``argv`` (starting at ``schemaops``) with the real CLI; raise on a usage error."""
    from schemaops.cli import app

    assert Path(argv[0]).name == "schemaops" and argv[1] == "warm", argv
    group = typer.main.get_command(app)
    with group.make_context("schemaops", ["warm"]) as gctx:
        cmd = group.get_command(gctx, "warm")
        assert cmd is not None
        return cmd.make_context("warm", argv[2:], parent=gctx)


def test_checker_rejects_bad_invocations() -> None:
    # typer >= 0.29 vendors click, so match the usage error by its message
    with pytest.raises(Exception, match="No such option"):
        check_warm_argv(["schemaops", "warm", "--server", "http://x", "--no-such-flag"])
    with pytest.raises(Exception, match="Missing (option|parameter)"):
        check_warm_argv(["schemaops", "warm", "--registry", "/x"])  # --server is required
    with pytest.raises(Exception, match="valid (float|number)"):
        check_warm_argv(["schemaops", "warm", "--server", "http://x", "--timeout", "soon"])


def _k8s_commands() -> list[list[str]]:
    docs = [d for d in yaml.safe_load_all((WARMUP / "kubernetes.yaml").read_text()) if d]
    found = []
    for d in docs:
        assert d["kind"] == "Deployment"
        for c in d["spec"]["template"]["spec"]["containers"]:
            post = c.get("lifecycle", {}).get("postStart", {}).get("exec", {}).get("command")
            if post:
                found.append(post)
            if c.get("args"):
                script = " ".join(c["args"])
                segment = script[script.index("schemaops warm") :].split(">")[0]
                found.append(shlex.split(segment))
    return found


def test_kubernetes_examples_parse_and_call_warm_correctly() -> None:
    cmds = _k8s_commands()
    assert len(cmds) == 2  # postStart and sidecar
    for argv in cmds:
        ctx = check_warm_argv(argv)
        assert ctx.params["server"] == ["http://127.0.0.1:30000"]  # the pod's own server
        assert ctx.params["wait_ready"] >= 300 and ctx.params["timeout"] >= 600


def test_systemd_dropin_parses_and_calls_warm_correctly() -> None:
    cp = configparser.ConfigParser(interpolation=None, strict=True)
    cp.optionxform = str  # systemd keys are case-sensitive
    cp.read_string((WARMUP / "sglang-warm.conf").read_text())
    assert cp.sections() == ["Service"]
    argv = shlex.split(cp["Service"]["ExecStartPost"].lstrip("-"))
    ctx = check_warm_argv(argv)
    assert ctx.params["wait_ready"] >= 300
    assert int(cp["Service"]["TimeoutStartSec"]) > ctx.params["wait_ready"]


def test_shell_hook_syntax_usage_and_dead_server() -> None:
    hook = WARMUP / "warm-after-start.sh"
    assert os.access(hook, os.X_OK)
    subprocess.run(["bash", "-n", str(hook)], check=True)
    r = subprocess.run([str(hook)], capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, SCHEMAOPS=f"{sys.executable} -m schemaops", WARM_WAIT_READY="1")
    r = subprocess.run(
        [str(hook), f"http://127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert r.returncode == 1
    assert "not ready after" in r.stdout + r.stderr
