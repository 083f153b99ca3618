"""CLI contract: usage errors exit 2; a server that is not running fails fast and clearly."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from cli_support import free_port, run_cli

REPO = Path(__file__).resolve().parents[1]


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return run_cli(*args, timeout=timeout, cwd=REPO)


_free_port = free_port


@pytest.mark.parametrize(
    "args",
    [
        ["warm", "--server", "localhost:30000"],
        ["warm", "--server", "http://127.0.0.1:1", "--api", "grpc"],
        ["warm", "--server", "http://127.0.0.1:1", "--tools", "named"],
        ["warm", "--server", "http://127.0.0.1:1", "--concurrency", "0"],
        ["warm", "--server", "http://127.0.0.1:1", "--registry", "/nonexistent"],
        ["warm", "--server", "http://127.0.0.1:1", "--from-log", "/nonexistent.jsonl"],
        ["warm", "--server", "http://127.0.0.1:99999"],
        ["warm", "--server", "http://127.0.0.1:0"],
        ["warm", "--server", "http://[::1"],
        ["warm", "--server", "http://[::1:30000"],
        ["warm", "--server", "http://127.0.0.1:port"],
        ["warm", "--server", "http://"],
        ["warm", "--server", "http://u:pw@[::1"],
        ["warm", "--server", "http://127.0.0.1:1", "--dp", "100000"],
        ["warm", "--server", "http://127.0.0.1:1", "--require-proof", "--no-probe"],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    r = _cli(*args)
    assert r.returncode == 2, r.stderr
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert "pw@" not in r.stderr  # a malformed URL's credentials are not echoed either


def test_help_says_what_the_code_does() -> None:
    """--wait-ready polls /ready (falling back to /health); --require-proof fails on suspect."""
    from schemaops.warm import report

    out = " ".join(_cli("warm", "--help").stdout.split())
    assert "/ready" in out and "suspect" in out
    doc = {"ok": True, "summary": {"proof": {"miss": 0, "suspect": 1, "unproven": 1}}}
    assert report.exit_code(doc) == 0 and report.exit_code(doc, require_proof=True) == 1


def test_no_arguments_prints_usage_and_exits_2() -> None:
    r = _cli("warm")
    assert r.returncode == 2 and "--server" in r.stdout + r.stderr


def test_server_not_running_fails_fast_with_a_clear_message() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    t0 = time.monotonic()
    r = _cli("warm", "--server", url, "--json", "--retries", "2", "--backoff", "0.1")
    elapsed = time.monotonic() - t0
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert doc["ok"] is False and doc["summary"]["failed"] == doc["summary"]["rows"] > 0
    err = doc["servers"][0]["error"]
    assert url in err and "not reachable" in err and "--wait-ready" in err
    assert all(row["status"] == "failed" and row["cold_ms"] is None for row in doc["results"])
    assert elapsed < 30  # interpreter start dominates; the warm itself gives up in < 1 s


def test_wait_ready_deadline_is_bounded() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    t0 = time.monotonic()
    r = _cli("warm", "--server", url, "--wait-ready", "2", "--json")
    assert r.returncode == 1
    assert "not ready after" in json.loads(r.stdout)["servers"][0]["error"]
    assert time.monotonic() - t0 < 30


def test_wait_ready_is_one_deadline_for_the_whole_command(registry_dir: Path) -> None:
    """Issue 22 #18: engine detection waited ``--wait-ready`` for a dead server, then the
    server's discovery waited it again (31.7 s for 15, the report saying 15.1 s). One
    deadline now: the run ends well before twice the wait (a loose bound: it cannot end
    before the wait, and twice would be the old behaviour), and the figure reported covers
    the whole wait, not its last step (the old one said half the time the run had taken)."""
    import re

    from schemaops.warm import WarmOptions, WarmSettings, run_warm

    wait = 4.0
    opts = WarmOptions(servers=[f"http://127.0.0.1:{_free_port()}"], wait_ready_s=wait)
    settings = WarmSettings(options=opts, registry=registry_dir, schemas=("get_order",))
    t0 = time.monotonic()
    doc, code = run_warm(settings, notify=lambda _line: None)
    elapsed = time.monotonic() - t0
    assert code == 1
    error = doc["servers"][0]["error"]
    said = float(re.search(r"not ready after ([0-9.]+) s", error).group(1))  # type: ignore[union-attr]
    assert elapsed < 1.5 * wait + 1.0, (elapsed, error)
    assert wait <= said <= elapsed + 0.05, (said, elapsed)
    assert said >= elapsed - 1.5, (said, elapsed)  # only checks and the report are outside it


def test_drift_cli_exit_codes(tmp_path: Path) -> None:
    log = tmp_path / "r.jsonl"
    a, b = '{"type":"object"}', '{"type": "object"}'
    log.write_text(
        "\n".join(json.dumps({"sampling_params": {"json_schema": t}}) for t in (a, b, a)) + "\n"
    )
    r = _cli("registry", "drift", str(log), "--json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["drifting"] == 1 and doc["cache_entries"] == 2
    log.write_text(json.dumps({"sampling_params": {"json_schema": a}}) + "\n")
    assert _cli("registry", "drift", str(log)).returncode == 0
    assert _cli("registry", "drift", str(tmp_path / "missing.jsonl")).returncode == 2


@pytest.mark.parametrize(
    ("servers", "extra", "message"),
    [
        (["http://u:pw@[::1"], {}, "not a valid URL"),
        (["http://127.0.0.1:1"], {"tools": "named"}, "--tools needs --api openai"),
        (["http://127.0.0.1:1"], {"dp": 100000}, "--dp must be 1..256"),
        (["http://127.0.0.1:1"], {"require_proof": True}, "--require-proof needs the probes"),
    ],
)
def test_run_warm_checks_settings_before_any_request(
    servers: list[str], extra: dict, message: str, registry_dir: Path
) -> None:
    """The library call the CLI makes refuses unusable settings itself (InputError: exit 2)."""
    from schemaops.errors import InputError
    from schemaops.warm import WarmOptions, WarmSettings, run_warm

    opts = WarmOptions(
        servers=servers, probe=not extra.get("require_proof"), dp=extra.pop("dp", None)
    )
    with pytest.raises(InputError, match=message) as err:
        run_warm(WarmSettings(options=opts, registry=registry_dir, **extra))
    assert err.value.exit_code == 2 and "pw" not in str(err.value)
