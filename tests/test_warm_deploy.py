"""The deploy integrations in warmup/: parsed, and their command lines are valid warm calls.

The shell hook runs for real here (against a closed port; against the dev server in
tests/integration/test_warm_hooks.py). Kubernetes and systemd cannot run here: their files
are parsed and every `schemaops warm` command line in them is parsed by the real CLI.
"""

from __future__ import annotations

import configparser
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml
from test_warm_faults import storm as storm  # the 5xx TEST DOUBLE fixture, reused

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


def _hook(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(WARMUP / "warm-after-start.sh"), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(os.environ, **env),
        timeout=120,
    )


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_shell_hook_keeps_paths_and_arguments_with_spaces_whole(
    tmp_path: Path, registry_dir: Path
) -> None:
    """SCHEMAOPS, WARM_ARGS and `-- ARGS` reach the real CLI word for word (spaces kept)."""
    spaced = tmp_path / "my tools"
    spaced.mkdir()
    wrapper = spaced / "schemaops"  # a path with a space: the real CLI behind it
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m schemaops "$@"\n')
    wrapper.chmod(0o755)
    reg = tmp_path / "my registry"
    reg.mkdir()
    for f in registry_dir.glob("*.json"):
        (reg / f.name).write_bytes(f.read_bytes())
    env = {"SCHEMAOPS": str(wrapper), "WARM_WAIT_READY": "1", "WARM_ARGS": f"--registry '{reg}'"}
    url = _dead_url()
    for extra in ([], ["--", "--model", "my model"]):
        r = _hook(env, url, *extra)
        # the registry with a space in its path was loaded (a split path is exit 2, "not found")
        assert r.returncode == 1, r.stderr
        assert "not ready after" in r.stdout + r.stderr
    # SCHEMAOPS given as a command line: quotes honoured, nothing expanded
    quoted = {"SCHEMAOPS": f"'{sys.executable}' -m schemaops", "WARM_WAIT_READY": "1"}
    r = _hook(dict(quoted, WARM_ARGS=f"--registry '{reg}' --model '$(touch {tmp_path}/x)'"), url)
    assert r.returncode == 1 and not (tmp_path / "x").exists(), r.stderr
    r = _hook(dict(quoted, WARM_ARGS="--model 'unbalanced"), url)
    assert r.returncode == 2 and "cannot split WARM_ARGS" in r.stderr


def test_shell_hook_unwritable_report_is_its_own_usage_error(tmp_path: Path) -> None:
    env = {
        "SCHEMAOPS": f"{sys.executable} -m schemaops",
        "WARM_WAIT_READY": "1",
        "WARM_REPORT": str(tmp_path / "no such dir" / "warm.json"),
    }
    r = _hook(env, _dead_url())
    assert r.returncode == 2, r.stderr
    assert "WARM_REPORT" in r.stderr and "cannot be written" in r.stderr
    assert "not ready" not in r.stdout + r.stderr  # nothing was attempted


def _sidecar_parts() -> tuple[list[str], list[str], str]:
    """The sidecar Deployment's server command, warm-sidecar command and readiness script."""
    docs = [d for d in yaml.safe_load_all((WARMUP / "kubernetes.yaml").read_text()) if d]
    side = next(d for d in docs if d["metadata"]["name"] == "sglang-warm-sidecar")
    server, warm = side["spec"]["template"]["spec"]["containers"]
    ready = server["readinessProbe"]["exec"]["command"]
    assert ready[:2] == ["sh", "-c"]
    return server["command"], warm["command"], ready[2]


def test_kubernetes_sidecar_scripts_avoid_kubernetes_expansion() -> None:
    server, warm, ready = _sidecar_parts()
    for text in [*server, *warm, ready]:
        # Kubernetes rewrites $(VAR) and $$ in command/args before the shell sees them
        assert "$(" not in text and "$$" not in text, text
    assert "server-id" in server[2] and "server-id" in ready and "warmed-id" in ready


def _wait_for(cond: Any, timeout: float, what: str, log: Path) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}; sidecar log:\n{log.read_text()[-3000:]}")


def test_kubernetes_sidecar_retries_and_rewarms_a_restarted_server(
    tmp_path: Path,
    registry_dir: Path,
    storm: Any,  # noqa: F811 - the fixture imported above
) -> None:
    """The yaml's own sidecar and readiness scripts, run here with sh.

    The server is the 5xx-storm TEST DOUBLE of tests/test_warm_faults.py (a real server cannot
    be made to fail every request and then recover on cue); the server's restart is what the
    server container does on start: a new id in server-id. Only the directory, the URL and
    the first retry delay (10 s -> 1 s) are changed.
    """
    _, warm, ready = _sidecar_parts()
    script = warm[2].replace("delay=10", "delay=1")
    ready = ready.replace("/var/run/warm", str(tmp_path)).replace(
        "http://127.0.0.1:30000/ready", f"{storm.url}/health"
    )
    warm_argv = [sys.executable, "-m", "schemaops", "warm", "--server", storm.url]
    warm_argv += ["--registry", str(registry_dir), "--retries", "0", "--no-progress", "--no-probe"]
    warm_argv += ["--tool-choice", "none"]  # the double speaks /generate only, not chat
    log = tmp_path / "sidecar.log"

    def is_ready() -> bool:
        return subprocess.run(["sh", "-c", ready], capture_output=True).returncode == 0

    storm.fail_first = 10**9  # every request fails: the first warm-up fails
    (tmp_path / "server-id").write_text("server-A\n")
    with open(log, "w") as out:
        proc = subprocess.Popen(
            ["sh", "-c", script, "warm-sidecar", str(tmp_path), *warm_argv],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            start_new_session=True,
        )
    try:
        _wait_for(lambda: "retrying in 1 s" in log.read_text(), 120, "a failed warm", log)
        assert not is_ready()
        storm.fail_first = 0  # the server recovers: the retry warms it
        warmed = tmp_path / "warmed-id"
        _wait_for(lambda: warmed.is_file() and warmed.read_text() == "server-A\n", 120, "A", log)
        assert is_ready()
        assert "retrying in 2 s" in log.read_text() or log.read_text().count("retrying") == 1
        before = len(storm.calls)
        # the server container restarts: same emptyDir, new id, empty cache
        (tmp_path / "server-id").write_text("server-B\n")
        assert not is_ready()  # the old marker no longer passes readiness
        _wait_for(lambda: warmed.read_text() == "server-B\n", 120, "B", log)
        assert is_ready() and len(storm.calls) > before  # it warmed the new server again
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def test_shell_hook_report_of_a_failed_warm_is_said_plainly(tmp_path: Path) -> None:
    """warm exits 2 before writing JSON: the hook says so, with no traceback of its own."""
    env = {
        "SCHEMAOPS": f"{sys.executable} -m schemaops",
        "WARM_REPORT": str(tmp_path / "warm.json"),
        "WARM_ARGS": "--api grpc",
    }
    r = _hook(env, _dead_url())
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "no report in" in r.stderr


def _runs_warm(container: dict[str, Any]) -> bool:
    post = container.get("lifecycle", {}).get("postStart", {}).get("exec", {}).get("command")
    return "warm" in (post or []) or "warm" in (container.get("args") or [])


def test_deploy_hooks_take_the_key_from_a_secret_never_from_the_command_line() -> None:
    """Kubernetes: SCHEMAOPS_API_KEY from a Secret (optional: no Secret, no key) in every
    container that runs warm; systemd: from an EnvironmentFile; neither puts --api-key in a
    command line (the pod spec, ps and `systemctl show` would show it)."""
    docs = [d for d in yaml.safe_load_all((WARMUP / "kubernetes.yaml").read_text()) if d]
    warming = [
        c for d in docs for c in d["spec"]["template"]["spec"]["containers"] if _runs_warm(c)
    ]
    assert len(warming) == 2  # postStart and sidecar
    for c in warming:
        (env,) = [e for e in c.get("env", []) if e["name"] == "SCHEMAOPS_API_KEY"]
        assert "value" not in env  # never a literal key in the manifest
        ref = env["valueFrom"]["secretKeyRef"]
        assert ref["name"] and ref["key"] and ref["optional"] is True
    assert "--api-key" not in (WARMUP / "kubernetes.yaml").read_text().split("# Credentials")[0]
    for argv in _k8s_commands():
        assert not any(a.startswith("--api-key") for a in argv), argv
    cp = configparser.ConfigParser(interpolation=None, strict=True)
    cp.optionxform = str
    cp.read_string((WARMUP / "sglang-warm.conf").read_text())
    assert Path(cp["Service"]["EnvironmentFile"].lstrip("-")).is_absolute()
    assert "--api-key" not in cp["Service"]["ExecStartPost"]


def test_shell_hook_sends_the_key_from_the_environment_and_refuses_it_as_an_argument(
    tmp_path: Path, registry_dir: Path
) -> None:
    """Against the real API-key gateway of tests/auth_gateway.py (no server behind it: its
    readiness answers, generation is 404): the key in SCHEMAOPS_API_KEY goes with every
    request and is in no argument of schemaops; `--api-key KEY` in WARM_ARGS or after `--`
    is exit 2 before anything is sent, without quoting the key."""
    from auth_gateway import gateway

    key = "sk-hook-7f3a9c1e5b"
    argv_log = tmp_path / "argv"
    wrapper = tmp_path / "schemaops"  # records its arguments, then runs the real CLI
    run = f'exec "{sys.executable}" -m schemaops "$@"'
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> "{argv_log}"\n{run}\n')
    wrapper.chmod(0o755)
    base = {"SCHEMAOPS": str(wrapper), "WARM_WAIT_READY": "10", "WARM_REGISTRY": str(registry_dir)}
    tail = ["--", "--engine", "sglang", "--retries", "0", "--no-probe"]
    with gateway(key) as gw:
        r = _hook(dict(base, SCHEMAOPS_API_KEY=key), gw.url, *tail)
        # authorised all the way: the gateway has no SGLang behind it, so /server_info is 404
        assert r.returncode == 2 and "no /server_info: HTTP 404" in r.stderr, r.stderr
        assert gw.seen and all(ok for _, ok in gw.seen), gw.seen  # readiness included
        assert key not in r.stdout + r.stderr and key not in argv_log.read_text()
        n = len(gw.seen)
        for env, extra in (
            (dict(base, WARM_ARGS=f"--api-key {key}"), []),
            (base, ["--api-key", key]),
            (base, [f"--api-key={key}"]),
        ):
            r = _hook(env, gw.url, *tail, *extra)
            assert r.returncode == 2 and "SCHEMAOPS_API_KEY" in r.stderr, r.stderr
            assert key not in r.stdout + r.stderr
        assert len(gw.seen) == n  # refused before any request
        # --api-key "" (send no key, whatever the environment holds) is no secret: allowed
        r = _hook(dict(base, SCHEMAOPS_API_KEY=key), gw.url, *tail, "--api-key", "")
        assert r.returncode == 1 and "requires credentials" in r.stdout + r.stderr, r.stderr
