"""Dev server lifecycle: the CLI starts and stops cleanly, a bad flag fails fast, backends.

Kill/restart keeping the URL and stop() ending the process group are checked where a test
kills and restarts a server anyway (``lifecycle_support``: the Kubernetes sidecar test in
``test_warm_hooks.py``); the dp-2 server on a one-NUMA-node CPU in ``test_warm_resilience.py``'s
dp-2 test, which starts it without setting the binding itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from cli_support import run_cli
from lifecycle_support import enforces_ok_boolean, health

from schemaops.devserver import DevServer, default_cache_dir, ensure_env
from schemaops.devserver.launcher import group_members

pytestmark = pytest.mark.integration


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
        assert health(url) == 200
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
    assert health(url) == 0
    assert not list((cache / "run").glob("*.json"))


def test_llguidance_backend(sglang_factory) -> None:
    (server,) = sglang_factory(grammar_backend="llguidance")
    info = httpx.get(server.url + "/server_info", timeout=30).json()
    assert info["grammar_backend"] == "llguidance"
    enforces_ok_boolean(server.url, max_new_tokens=64)


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
