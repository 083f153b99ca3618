"""warmup/warm-after-start.sh run for real against the dev server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from warm_support import REPO, heavy_registry

from schemaops.devserver import DevServer

pytestmark = pytest.mark.integration


def test_shell_hook_warms_the_dev_server(sglang_server: DevServer, tmp_path: Path) -> None:
    reg = heavy_registry(tmp_path, 1000, 3)
    report = tmp_path / "warm.json"
    env = dict(
        os.environ,
        SCHEMAOPS=f"{sys.executable} -m schemaops",
        WARM_REGISTRY=str(reg),
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
