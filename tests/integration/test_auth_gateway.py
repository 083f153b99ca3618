"""``probe`` and ``warm`` through a real API-key gateway in front of the real SGLang dev server.

The gateway (``tests/auth_gateway.py``, on 127.0.0.1) forwards authorised requests to the
session's dev server and answers anything else 401 with an echo of what it got. With
``--api-key`` (here from ``SCHEMAOPS_API_KEY``) and ``--header``: the grammar paths are
``enforced`` and the schemas ``warmed``; without: 401, said as such. The key and the header
value never appear in stdout, stderr, ``--json`` or ``--prometheus``. No server of its own:
the session server is reused.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from auth_gateway import gateway
from cli_support import key_env, run_cli

from schemaops.devserver import DevServer

pytestmark = pytest.mark.integration

KEY = "sk-int-7d1e9c3b5a2f4860"
TENANT = "tenant-int-4412"


def _cli(*args: str, key: str | None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env=key_env(key), timeout=600)


def test_probe_and_warm_through_an_api_key_gateway(
    sglang_server: DevServer, tmp_path: Path
) -> None:
    prom = tmp_path / "m.prom"
    probe = ["probe", "--json", "--canaries", "1", "--prometheus", str(prom)]
    probe += ["--paths", "generate.json_schema,response_format.json_schema"]
    warm = ["warm", "--json", "--no-progress", "--no-probe", "--prometheus", str(prom)]
    registry = tmp_path / "reg"
    registry.mkdir()
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    (registry / "item.json").write_text(json.dumps(schema))
    with gateway(KEY, {"X-Tenant": TENANT}, upstream=sglang_server.url) as gw:
        tenant = ["--header", f"X-Tenant: {TENANT}"]
        denied = _cli(*probe, "--server", gw.url, *tenant, key=None)
        ok = _cli(*probe, "--server", gw.url, *tenant, key=KEY)
        probe_prom = prom.read_text()
        w_denied = _cli(*warm, "--server", gw.url, "--registry", str(registry), key=None)
        w_ok = _cli(*warm, "--server", gw.url, "--registry", str(registry), *tenant, key=KEY)
        warm_prom = prom.read_text()
    # the tenant header alone is not enough: refused, with what to pass
    error = json.loads(denied.stdout)["error"]
    assert denied.returncode == 2 and "HTTP 401" in error and "--api-key" in error, error
    doc = json.loads(ok.stdout)
    assert ok.returncode == 0, ok.stdout
    assert {p["path"]: p["verdict"] for p in doc["paths"]} == {
        "generate.json_schema": "enforced",
        "response_format.json_schema": "enforced",
    }
    assert w_denied.returncode == 1
    assert "requires credentials" in json.loads(w_denied.stdout)["servers"][0]["error"]
    assert w_ok.returncode == 0, w_ok.stdout
    assert [r["status"] for r in json.loads(w_ok.stdout)["results"]] == ["warmed"]
    out = "".join(r.stdout + r.stderr for r in (denied, ok, w_denied, w_ok))
    for secret in (KEY, TENANT):
        assert secret not in out + probe_prom + warm_prom
