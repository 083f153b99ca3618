"""``bench/audit_scale.py`` (issue 36): the structure of its ``--quick`` report, never its
timings: every workload ran every contender as its own process, each figure is there, the
line counts are the workloads', and the audit and the jsonschema-rs loop saw the same lines.
About a minute on 2 cores (a 60-schema JSONSchemaBench sample, small files)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from corpus_paths import REPO

BENCH = REPO / "bench" / "audit_scale.py"
pytestmark = pytest.mark.corpus("jsonschemabench")


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict:
    work = tmp_path_factory.mktemp("scale")
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--quick",
            "--json",
            "--lines",
            "3000",
            "--per-schema",
            "6",
            "--startup-rounds",
            "1",
            "--before",  # a checkout's folder (this one): no git needed where the test runs
            str(REPO),
            "--workdir",
            str(work),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _runs_ok(runs: dict, names: set[str]) -> None:
    assert set(runs) == names
    for r in runs.values():
        assert r["wall_s"] > 0 and r["cpu_s"] > 0 and r["lines_per_s"] > 0
        assert math.isnan(r["peak_rss_mib"]) or r["peak_rss_mib"] > 1


def test_one_schema_workload(quick: dict) -> None:
    a = quick["a"]
    assert a["lines"] == 3000 and a["schema"] == "create_ticket"
    _runs_ok(a["runs"], {"parse_only", "rs_loop", "audit"})
    assert a["loop_counts"]["lines"] == 3000  # the loop read every line
    ok, bad = a["loop_counts"]["ok"], a["loop_counts"]["violation"]
    assert 0 < bad and 0 < a["audit_ok"] <= 3000 and ok > 2500  # a mix, mostly valid
    assert set(a["targets"]) == {"vs_loop", "vs_parse_only"}
    for key in ("vs_loop", "vs_parse_only", "cpu_vs_loop"):
        assert a[key] > 0


def test_jsonschemabench_workload_cold_and_warm(quick: dict) -> None:
    b = quick["b"]
    assert b["lines"] == b["schemas"] * b["per_schema"] and b["per_schema"] == 6
    assert 20 <= b["schemas"] <= 60  # the sample's schemas that load
    _runs_ok(b["runs"], {"parse_only", "rs_loop", "audit_cold", "audit_warm"})
    assert b["loop_counts"]["lines"] == b["lines"]
    assert b["unique_invalid_share"] > 0.4  # most invalid, as the workload
    for key in ("cold_vs_loop", "warm_vs_loop", "cpu_cold_vs_loop", "cpu_warm_vs_loop"):
        assert b[key] > 0
    m = b["memory"]
    assert m["warm_quarter_lines"] == b["lines"] // 4 and m["warm_full_lines"] == b["lines"]


def test_startup_with_the_revision_before(quick: dict) -> None:
    st = quick["startup"]
    assert set(st["runs"]) == {"baseline", "audit", "audit_before"}
    assert st["before"] == str(REPO) and st["target_s"] == 0.2
    assert st["audit_over_baseline"] > 0 and st["before_over_after"] > 0


def test_text_report_names_every_target(tmp_path: Path) -> None:
    """The printed report, from the JSON one (no second run of the workloads)."""
    sys.path.insert(0, str(REPO / "bench"))
    import audit_scale

    doc = {
        "python": "3",
        "cores": 2,
        "load_avg_at_start": [1.0],
        "load_avg_at_end": [1.0],
        "rounds": 1,
        "a": {
            "lines": 10,
            "audit_jobs": 1,
            "runs": {"audit": {"wall_s": 1.0, "cpu_s": 1.0, "lines_per_s": 10, "peak_rss_mib": 5}},
            "vs_loop": 0.5,
            "vs_parse_only": 0.2,
            "cpu_vs_loop": 0.4,
            "targets": {"vs_loop": 1.0, "vs_parse_only": 0.5},
        },
    }
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        audit_scale.print_text(doc)
    text = buf.getvalue()
    assert "vs_loop" in text and "NOT met" in text and "target >= 1.0x" in text
