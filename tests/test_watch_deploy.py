"""The watch deploy files in warmup/: alert rules, dashboard row, systemd unit, Kubernetes
sidecar and the hook script, parsed, their series checked against what watch serves and
their command lines parsed by the real CLI (the hook script runs for real, on a closed port).
"""

from __future__ import annotations

import configparser
import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer.main
import yaml
from test_metrics import watch_series

REPO = Path(__file__).resolve().parents[1]
WARMUP = REPO / "warmup"


def check_watch_argv(argv: list[str]) -> Any:
    """Parse ``argv`` (starting at ``schemaops watch``) with the real CLI."""
    from schemaops.cli import app

    assert Path(argv[0]).name == "schemaops" and argv[1] == "watch", argv
    group = typer.main.get_command(app)
    with group.make_context("schemaops", ["watch"]) as gctx:
        cmd = group.get_command(gctx, "watch")
        assert cmd is not None
        return cmd.make_context("watch", argv[2:], parent=gctx)


def _names(expr: str) -> set[str]:
    return set(re.findall(r"schemaops_[a-z0-9_]+", expr))


def test_alert_rules_read_only_series_watch_serves() -> None:
    doc = yaml.safe_load((WARMUP / "watch-alerts.yml").read_text())
    rules = doc["groups"][0]["rules"]
    names = {r["alert"] for r in rules}
    assert {"SchemaopsSchemaPoisoned", "SchemaopsSchemaBelowTarget"} <= names
    assert {"SchemaopsWatchLagging", "SchemaopsWatchNoLines"} <= names
    served = watch_series()
    for r in rules:
        assert r["labels"]["severity"] and r["annotations"]["summary"], r
        assert _names(r["expr"]) <= served, _names(r["expr"]) - served


def test_dashboard_has_the_live_row() -> None:
    import json

    dash = json.loads((WARMUP / "grafana-schemaops.json").read_text())
    exprs = " ".join(t["expr"] for p in dash["panels"] for t in p.get("targets", []))
    for series in ("schemaops_watch_p", "schemaops_watch_poisoned", "schemaops_watch_lag_seconds"):
        assert series in exprs
    assert any(p["type"] == "row" and p["title"].startswith("watch") for p in dash["panels"])


def test_systemd_unit_parses_and_calls_watch_correctly() -> None:
    cp = configparser.ConfigParser(interpolation=None, strict=True)
    cp.optionxform = str  # systemd keys are case-sensitive
    cp.read_string((WARMUP / "schemaops-watch.service").read_text())
    assert cp.sections() == ["Unit", "Service", "Install"]
    svc = cp["Service"]
    argv = shlex.split(svc["ExecStart"])
    ctx = check_watch_argv(argv)
    assert ctx.params["listen"].startswith("127.0.0.1:")  # never all interfaces by default
    assert ctx.params["state_dir"] == Path("/var/lib/schemaops-watch")
    assert svc["ReadWritePaths"] == "/var/lib/schemaops-watch" and svc["StateDirectory"]
    assert ctx.params["on_poisoned"].endswith("watch-on-poisoned.sh")
    assert "--api-key" not in svc["ExecStart"]
    assert Path(svc["EnvironmentFile"].lstrip("-")).is_absolute()


def test_kubernetes_watch_sidecar_follows_the_servers_own_request_log() -> None:
    docs = [d for d in yaml.safe_load_all((WARMUP / "kubernetes.yaml").read_text()) if d]
    dep = next(d for d in docs if d["metadata"]["name"] == "sglang-watch-sidecar")
    server, watch = dep["spec"]["template"]["spec"]["containers"]
    ctx = check_watch_argv(watch["command"])
    target = server["command"][server["command"].index("--log-requests-target") + 1]
    assert ctx.params["files"] == [target]
    assert server["command"][server["command"].index("--log-requests-format") + 1] == "json"
    mounts = {m["name"]: m for m in watch["volumeMounts"]}
    assert mounts["requests"]["mountPath"] == target and mounts["requests"]["readOnly"]
    assert mounts["watch-state"]["mountPath"] == str(ctx.params["state_dir"])
    (key,) = [e for e in watch["env"] if e["name"] == "SCHEMAOPS_API_KEY"]
    assert "value" not in key and key["valueFrom"]["secretKeyRef"]["optional"] is True
    assert "args" not in watch and not any("$(" in a for a in watch["command"])


def test_hook_script_usage_escapes_the_name_and_fails_on_a_dead_server(tmp_path: Path) -> None:
    hook = WARMUP / "watch-on-poisoned.sh"
    assert os.access(hook, os.X_OK)
    subprocess.run(["bash", "-n", str(hook)], check=True)
    r = subprocess.run([str(hook)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "usage" in r.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(
        os.environ,
        SGLANG_URL=f"http://127.0.0.1:{port}",
        SCHEMAOPS=f"{sys.executable} -m schemaops",
    )
    name = "x$(touch PWNED)\n\x1b[2J"
    r = subprocess.run(
        [str(hook), name], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )
    assert r.returncode == 1  # the flush could not be done: no warm-up claimed
    assert "\x1b" not in r.stderr and "flush_cache" in r.stderr
    assert not (tmp_path / "PWNED").exists()
