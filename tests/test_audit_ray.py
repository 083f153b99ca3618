"""``audit --ray`` on a real two-node Ray cluster (``ray_cluster``: head + worker node, loopback
only): the report equals the single-process audit of the same shards field by field (every
field of ``--json`` but the run's own: input aside, ``jobs``, ``elapsed_s``, ``ray``), and the
``--records`` file byte for byte; episodes cross shard boundaries; an unreadable shard is
named and the rest audited; a node killed mid-run loses and doubles nothing. No mocks."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from test_audit_shards import EXAMPLE, REGISTRY, assert_same_report, make_shards

from schemaops.audit import AuditOptions, run_audit

pytestmark = pytest.mark.ray
pytest.importorskip("pyarrow")


def local(inputs: str, records: Path) -> tuple[dict, bytes]:
    doc = run_audit(inputs, AuditOptions(registry=REGISTRY, records=str(records))).to_json()
    return doc, records.read_bytes()


def on_ray(cluster, inputs: str, records: Path, timeout: float = 300.0):
    """The CLI as a driver inside the cluster's namespace (where the cluster is reachable)."""
    cmd = [sys.executable, "-m", "schemaops", "audit", inputs, "--registry", REGISTRY]
    cmd += ["--ray", cluster.address, "--json", "--records", str(records)]
    return cluster.run(cmd, timeout=timeout, env={"PYTHONPATH": str(Path(REGISTRY).parent)})


def split_more(folder: Path, n: int) -> None:
    """More shards than the cluster has CPUs: the example log again, in ``n`` plain shards
    (its episodes then span shards of both splits)."""
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    per = len(lines) // n + 1
    for i in range(n):
        (folder / f"more-{i:02d}.jsonl").write_bytes(b"".join(lines[i * per : (i + 1) * per]))


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ray") / "logs"
    make_shards(folder)
    split_more(folder, 6)
    return folder


def test_ray_report_equals_single_process(ray_cluster, shards, tmp_path):
    want, want_rows = local(str(shards), tmp_path / "local.jsonl")
    r = on_ray(ray_cluster, str(shards), tmp_path / "ray.jsonl")
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout)
    assert got["ray"]["nodes"] == 2 and got["ray"]["tasks"] == want["shards"]["count"] == 10
    assert got["jobs"] == 2 and got["ray"]["task_cpu_s"] > 0
    assert_same_report(want, got, shard_fields=True)  # every field, shard names included
    assert got["input"] == want["input"] and got["shards"] == want["shards"]
    assert (tmp_path / "ray.jsonl").read_bytes() == want_rows
    # episodes were cut by shards (make_shards checks it) and still counted whole
    assert got["episodes"]["episodes"] == len(
        {json.loads(x)["episode_id"] for x in EXAMPLE.read_text().splitlines()}
    )


def test_ray_unreadable_shard_named_rest_audited(ray_cluster, shards, tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    for p in sorted(shards.iterdir()):
        if p.name.startswith("part-"):
            (folder / p.name).write_bytes(p.read_bytes())
    (folder / "part-1.jsonl.gz").write_bytes((shards / "part-1.jsonl.gz").read_bytes()[:2000])
    want, want_rows = local(str(folder), tmp_path / "local.jsonl")
    r = on_ray(ray_cluster, str(folder), tmp_path / "ray.jsonl")
    assert r.returncode == 2, r.stderr[-2000:]
    got = json.loads(r.stdout)
    (bad,) = got["shards"]["unreadable"]
    assert bad["shard"] == str(folder / "part-1.jsonl.gz")
    assert "unreadable after line" in bad["message"] and bad["shard"] in r.stderr
    assert got["shards"] == want["shards"]
    assert_same_report(want, got, shard_fields=True)
    assert (tmp_path / "ray.jsonl").read_bytes() == want_rows


def _task_on_worker_node(cluster) -> int | None:
    """The pid of a Ray worker running an audit task on the second node (Ray names a busy
    worker process ``ray::<function>``)."""
    for pid in cluster.members():
        try:
            if os.getsid(pid) != cluster.worker_sid:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if fh.read().startswith(b"ray::_ray_task"):
                    return pid
        except OSError:
            continue
    return None


def test_ray_node_killed_mid_run_loses_and_doubles_nothing(ray_cluster, tmp_path):
    folder = tmp_path / "big"
    folder.mkdir()
    lines = EXAMPLE.read_bytes()
    for i in range(8):  # 8 shards of 15,000 lines: each task runs long enough to be caught
        (folder / f"s-{i}.jsonl").write_bytes(lines * 3)
    want, want_rows = local(str(folder), tmp_path / "local.jsonl")
    cmd = [sys.executable, "-m", "schemaops", "audit", str(folder), "--registry", REGISTRY]
    cmd += ["--ray", ray_cluster.address, "--json", "--records", str(tmp_path / "ray.jsonl")]
    out = tmp_path / "out.json"
    with open(out, "w") as fh:
        proc = ray_cluster.popen(cmd, stdout=fh, stderr=open(tmp_path / "err.txt", "w"))
        deadline, victim = time.monotonic() + 120, None
        while victim is None and proc.poll() is None and time.monotonic() < deadline:
            victim = _task_on_worker_node(ray_cluster)
            time.sleep(0.05)
        try:
            assert victim is not None, "no audit task ran on the worker node"
            ray_cluster.kill_worker_node()  # the node and the task on it die mid-run
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
            ray_cluster.restart_worker_node()
            ray_cluster.wait_nodes(2)
    err = (tmp_path / "err.txt").read_text()
    assert proc.returncode == 0, err[-2000:]
    got = json.loads(out.read_text())
    assert got["shards"]["unreadable"] == []
    assert got["lines"] == want["lines"] == 8 * 15_000
    assert_same_report(want, got, shard_fields=True)
    assert (tmp_path / "ray.jsonl").read_bytes() == want_rows


def test_ray_byte_ranges_of_big_shards_equal_single_process(ray_cluster, shards, tmp_path):
    """Plain shards cut into 100 kB byte ranges (one task each; 64 MiB in production): the
    report, shard line numbers included, and --records equal the single-process run."""
    want, want_rows = local(str(shards), tmp_path / "local.jsonl")
    code = (
        "import json, sys\n"
        "import schemaops.audit.run.ray_audit as ra\n"
        "from schemaops.audit import AuditOptions, run_audit\n"
        "ra.PIECE_BYTES = 100_000\n"
        f"opts = AuditOptions(registry={REGISTRY!r}, records={str(tmp_path / 'ray.jsonl')!r},"
        f" ray={ray_cluster.address!r})\n"
        f"doc = run_audit({str(shards)!r}, opts).to_json()\n"
        "sys.stdout.write(json.dumps(doc))\n"
    )
    r = ray_cluster.python(code, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout)
    assert got["ray"]["tasks"] > got["shards"]["count"] + 20  # the plain shards were cut
    assert_same_report(want, got, shard_fields=True)
    assert got["shards"] == want["shards"]
    assert (tmp_path / "ray.jsonl").read_bytes() == want_rows
