"""``--prometheus`` of ``warm`` and ``probe`` on the real session dev server: the files parse
with prometheus-client's parser and carry what the JSON documents say."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_support import prom_samples as samples
from cli_support import run_cli

from schemaops.devserver import DevServer

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, timeout=600, cwd=ROOT)


def test_warm_and_probe_metrics(sglang_server: DevServer, tmp_path: Path) -> None:
    warm_prom, probe_prom = tmp_path / "warm.prom", tmp_path / "probe.prom"
    r = _cli(
        "warm",
        "--server",
        sglang_server.url,
        "--registry",
        "schemas",
        "--json",
        "--no-progress",
        "--prometheus",
        str(warm_prom),
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    got = samples(warm_prom)
    status = {
        s.labels["schema"]: s.labels["status"] for s in got["schemaops_warm_status"] if s.value
    }
    assert status == {row["schema"]: row["status"] for row in doc["results"]}
    cold = {s.labels["schema"]: s.value for s in got["schemaops_warm_cold_seconds"]}
    for row in doc["results"]:
        assert cold[row["schema"]] == pytest.approx(row["cold_ms"] / 1000)
    r = _cli(
        "probe",
        "--server",
        sglang_server.url,
        "--paths",
        "generate.regex",
        "--canaries",
        "1",
        "--json",
        "--prometheus",
        str(probe_prom),
    )
    assert r.returncode == 0, r.stderr
    got = samples(probe_prom)
    (on,) = [s for s in got["schemaops_probe_verdict"] if s.value == 1]
    assert on.labels["path"] == "generate.regex" and on.labels["verdict"] == "enforced"
    assert on.labels["engine"] == "sglang"
