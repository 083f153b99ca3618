"""``--api-key`` / ``SCHEMAOPS_API_KEY`` and ``--header`` on ``probe`` and ``warm``.

Against a real API-key gateway on 127.0.0.1 (``auth_gateway.py``; it echoes the credentials
it got in its 401, the worst case): without the key a clear 401 (probe: exit 2, nothing could
be probed; warm: every row failed, exit 1), with a wrong one "refused", with the right one
every request (readiness checks included) carries it; the key and header values never show
in stdout, stderr, ``--json`` or ``--prometheus``. Success through the gateway to a real
SGLang server: ``tests/integration/test_auth_gateway.py``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from auth_gateway import gateway
from cli_support import key_env, run_cli

from schemaops.errors import InputError
from schemaops.http.auth import ENV_KEY, build_auth, parse_header

KEY = "sk-test-5e3c9a1f7b2d4e6a"
WRONG = "sk-wrong-0b8d7c6e5f4a3921"
TENANT = "tenant-alpha-93"


def _cli(*args: str, key: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env=key_env(key))


def _leaks(r: subprocess.CompletedProcess[str], *files: Path) -> list[str]:
    text = r.stdout + r.stderr + "".join(f.read_text() for f in files if f.exists())
    return [s for s in (KEY, WRONG, TENANT) if s in text]


def test_headers_are_checked_and_never_quoted(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_header("X-Tenant:  a b ") == ("X-Tenant", "a b")
    for bad in ("no colon", "Bad Name: v", f"X-Tenant: {TENANT}\r\nX: y", "Host: x", "X-A:"):
        with pytest.raises(InputError) as exc:
            parse_header(bad)
        assert TENANT not in str(exc.value)
    with pytest.raises(InputError, match="give one"):
        build_auth(KEY, [f"Authorization: Basic {TENANT}"])
    with pytest.raises(InputError) as exc:
        build_auth(f"{KEY}\nX-Injected: 1")
    assert KEY not in str(exc.value)
    monkeypatch.setenv(ENV_KEY, KEY)
    auth = build_auth(None, [f"x-tenant: {TENANT}", f"X-Tenant: {TENANT}"])
    assert auth.headers == {"X-Tenant": TENANT, "Authorization": f"Bearer {KEY}"}
    assert set(auth.secrets()) == {f"Bearer {KEY}", KEY, TENANT}
    assert build_auth("", None).headers == {}  # an empty --api-key: none, not the env's


def test_probe_without_the_key_says_401_and_exits_2(tmp_path: Path) -> None:
    prom = tmp_path / "p.prom"
    with gateway(KEY) as gw:
        r = _cli("probe", "--server", gw.url, "--json", "--prometheus", str(prom))
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    assert "HTTP 401" in doc["error"] and "--api-key" in doc["error"], doc["error"]
    assert "requires credentials" in r.stderr
    assert gw.seen and not any(ok for _, ok in gw.seen)


def test_probe_denied_on_every_path_but_ready_exits_2() -> None:
    """Readiness open, every request path 401 (vLLM's --api-key guards /v1 only)."""
    with gateway(KEY, open_paths=("/ready", "/health")) as gw:
        r = _cli("probe", "--server", gw.url, "--json", "--paths", "response_format.json_schema")
    assert r.returncode == 2, r.stdout
    doc = json.loads(r.stdout)
    assert doc["paths"][0]["verdict"] == "rejected"
    assert "no path could be probed (HTTP 401: the server requires credentials" in doc["error"]


def test_probe_with_a_wrong_key_is_refused_and_the_key_is_never_printed(tmp_path: Path) -> None:
    """The gateway echoes the wrong key and the header in its 401: both are scrubbed."""
    prom = tmp_path / "p.prom"
    with gateway(KEY, {"X-Tenant": TENANT}) as gw:
        r = _cli(
            "probe", "--server", gw.url, "--json", "--prometheus", str(prom),
            "--header", f"X-Tenant: {TENANT}", key=WRONG,
        )  # fmt: skip
        text = _cli("probe", "--server", gw.url, "-H", f"X-Tenant: {TENANT}", key=WRONG)
    assert r.returncode == 2 and text.returncode == 2
    assert "refused the credentials" in json.loads(r.stdout)["error"]
    assert "***" in r.stdout  # the echo is still there, without the secrets
    assert _leaks(r, prom) == [] and _leaks(text) == []


def test_probe_with_the_key_sends_it_on_every_request(tmp_path: Path) -> None:
    prom = tmp_path / "p.prom"
    with gateway(KEY, {"X-Tenant": TENANT}) as gw:
        r = _cli(
            "probe", "--server", gw.url, "--json", "--prometheus", str(prom),
            "--api-key", KEY, "--header", f"X-Tenant: {TENANT}", "--paths",
            "response_format.json_schema",
        )  # fmt: skip
    paths = {p for p, _ in gw.seen}
    assert {"/ready", "/v1/chat/completions"} <= paths, paths
    assert all(ok for _, ok in gw.seen), gw.seen  # readiness and discovery too
    assert _leaks(r, prom) == []
    # no upstream behind this gateway: its 404 is a refusal, not a credentials problem
    assert json.loads(r.stdout)["paths"][0]["verdict"] == "rejected"


def test_warm_without_and_with_the_key(tmp_path: Path) -> None:
    prom = tmp_path / "w.prom"
    args = ["warm", "--engine", "sglang", "--json", "--no-progress", "--prometheus", str(prom)]
    with gateway(KEY) as gw:
        denied = _cli(*args, "--server", gw.url)
        refused = _cli(*args, "--server", gw.url, key=WRONG)
        n = len(gw.seen)
        sent = _cli(*args, "--server", gw.url, "--api-key", KEY)
    assert denied.returncode == 1
    doc = json.loads(denied.stdout)
    assert doc["servers"][0]["ready"] is False
    assert "requires credentials" in doc["servers"][0]["error"], doc["servers"][0]
    assert {r["status"] for r in doc["results"]} == {"failed"}
    assert "refused the credentials" in json.loads(refused.stdout)["servers"][0]["error"]
    assert all(ok for _, ok in gw.seen[n:]) and len(gw.seen) > n
    assert _leaks(denied, prom) == [] and _leaks(refused) == [] and _leaks(sent, prom) == []
