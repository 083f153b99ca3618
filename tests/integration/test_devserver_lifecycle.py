"""Dev server lifecycle: the CLI starts and stops cleanly, kill/restart keeps the URL, backends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from cli_support import run_cli

from schemaops.devserver import DevServer, default_cache_dir, ensure_env
from schemaops.devserver.launcher import group_members

pytestmark = pytest.mark.integration


def _health(url: str) -> int:
    try:
        return httpx.get(url + "/health", timeout=10).status_code
    except httpx.HTTPError:
        return 0


def _isolated_cache(tmp_path: Path) -> Path:
    """A cache dir sharing the installed venv and model, with its own pid files and logs.

    ``--stop`` stops every server of a cache dir: the test must not stop the session's.
    """
    real = ensure_env()
    cache = tmp_path / "devserver"
    cache.mkdir()
    for name in ("venv", "model", "stubs", "env.json"):
        (cache / name).symlink_to(real.root / name)
    return cache


def _cli(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SCHEMAOPS_DEVSERVER_DIR": str(cache)}
    return run_cli("dev-server", *args, env=env, timeout=900, cwd=None)


def test_cli_start_status_stop_leaves_no_process(tmp_path: Path) -> None:
    cache = _isolated_cache(tmp_path)
    started = _cli("--json", cache=cache)  # the defaults a new user gets
    assert started.returncode == 0, started.stderr
    doc = json.loads(started.stdout)
    server = doc["servers"][0]
    url, pid = doc["url"], server["pid"]
    try:
        assert _health(url) == 200
        assert Path(server["log"]).is_file()
        status = json.loads(_cli("--status", "--json", cache=cache).stdout)
        assert [s["url"] for s in status["servers"]] == [url]
        # compact JSON whitespace by default: a new user's first JSON request finishes
        info = httpx.get(url + "/server_info", timeout=30).json()
        assert info["constrained_json_disable_any_whitespace"] is True
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        params = {"max_new_tokens": 64, "temperature": 0, "json_schema": json.dumps(schema)}
        out = httpx.post(
            url + "/generate", json={"text": "x", "sampling_params": params}, timeout=300
        )
        assert out.json()["meta_info"]["finish_reason"]["type"] == "stop", out.text
        assert json.loads(out.json()["text"]) in ({"ok": True}, {"ok": False})
    finally:
        stopped = _cli("--stop", "--json", cache=cache)
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout)["stopped"] == [server["port"]]
    assert group_members(pid) == []  # scheduler, detokenizer and helpers are gone too
    assert _health(url) == 0
    assert not list((cache / "run").glob("*.json"))


def test_kill_then_restart_keeps_the_url(sglang_factory) -> None:
    (server,) = sglang_factory(fresh=True)
    url, first_pid = server.url, server.pid
    server.kill()
    assert not server.is_running()
    assert group_members(first_pid) == []
    assert _health(url) == 0
    server.restart()
    assert server.url == url and server.pid != first_pid
    assert _health(url) == 200
    second_pid = server.pid
    server.stop()
    assert group_members(second_pid) == []


def test_llguidance_backend(sglang_factory) -> None:
    (server,) = sglang_factory(grammar_backend="llguidance")
    info = httpx.get(server.url + "/server_info", timeout=30).json()
    assert info["grammar_backend"] == "llguidance"
    _assert_enforces_ok_boolean(server.url, max_new_tokens=64)


def _assert_enforces_ok_boolean(url: str, max_new_tokens: int) -> None:
    """One /generate with a one-boolean schema: HTTP 200 and exactly {"ok": true|false}."""
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    resp = httpx.post(
        url + "/generate",
        json={
            "text": "x",
            "sampling_params": {
                "max_new_tokens": max_new_tokens,
                "temperature": 0,
                "json_schema": json.dumps(schema),
            },
        },
        timeout=300,
    )
    assert resp.status_code == 200, resp.text
    assert json.loads(resp.json()["text"]) in ({"ok": True}, {"ok": False})


def test_whitespace_default_and_opt_out_in_the_launch_command() -> None:
    env = ensure_env()
    assert "--constrained-json-disable-any-whitespace" in DevServer(env, port=1).command()
    sglang_default = DevServer(env, port=1, disable_any_whitespace=False).command()
    assert "--constrained-json-disable-any-whitespace" not in sglang_default
    r = subprocess.run(
        [sys.executable, "-m", "schemaops", "dev-server", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert "--any-whitespace" in r.stdout and "compact" in r.stdout


_DP2: list[DevServer] = []  # the dp-2 server of the next test, checked by the one after it


def test_dp_size_2_on_one_numa_node(sglang_factory) -> None:
    """dp_size 2 needs SGLANG_CPU_OMP_THREADS_BIND on a one-node CPU: the launcher sets it."""
    (server,) = sglang_factory(dp_size=2)
    _DP2.append(server)
    info = httpx.get(server.url + "/server_info", timeout=30).json()
    assert info["dp_size"] == 2
    for _ in range(2):  # both replicas (round robin) enforce the grammar
        _assert_enforces_ok_boolean(server.url, max_new_tokens=32)


def test_dp_2_server_is_stopped_once_its_test_ends() -> None:
    """Its data_parallel_controller spins a full core while up: no test keeps it after use."""
    assert _DP2, "runs after test_dp_size_2_on_one_numa_node (file order)"
    pid = _DP2[0].pid
    assert pid is not None and group_members(pid) == []
    assert _health(_DP2[0].url) == 0


def test_start_failure_reports_the_log_tail(tmp_path: Path) -> None:
    """A bad SGLang flag must fail fast with the log tail, not hang until the timeout."""
    from schemaops.devserver import DevServerError

    server = DevServer(ensure_env(), extra_args=["--no-such-flag"], start_timeout=300)
    with pytest.raises(DevServerError) as info:
        server.start()
    assert "exited with code" in str(info.value)
    assert "no-such-flag" in str(info.value)
    assert not server.is_running()


def test_default_cache_dir_honours_env(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SCHEMAOPS_DEVSERVER_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path
