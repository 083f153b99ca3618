"""Servers that die, restart, come in pairs or with DP replicas: real dev servers only.

A test that kills a server starts it fresh and stops it itself, except the dies-for-good
test, which kills the two-workers test's second worker (the factory's shared server) after
that test is done with it; at most two servers (the session server and one of these) are up
at once.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from lifecycle_support import enforces_ok_boolean, stop_leaves_nothing

# the same warm_support helpers as test_warm_server.py: an import list, not repeated code
from warm_support import (
    cli,
    fresh_cold_ms,
    generate_ms,
    heavy,
    heavy_registry,
    rows_by_schema,
    warm_json,
)

from schemaops.devserver import DevServer
from schemaops.registry import load_registry
from schemaops.registry.model import canonical_text
from schemaops.warm import WarmOptions, plan_from_registry, report, warm

pytestmark = pytest.mark.integration

Factory = Callable[..., list[DevServer]]


def _warm_with_chaos(
    srv: DevServer, reg: Path, after: int, chaos: Callable[[], None], **kw: object
) -> dict:
    """Warm ``reg`` on ``srv`` in-process; run ``chaos`` once ``after`` warm requests finished."""
    items = plan_from_registry(load_registry(reg))
    opts = WarmOptions(servers=[srv.url], concurrency=1, **kw)  # type: ignore[arg-type]
    seen = {"n": 0}
    fired = threading.Event()
    threads: list[threading.Thread] = []

    def progress(event: str, n: int) -> None:
        if event == "advance":
            seen["n"] += n
            if seen["n"] >= after and not fired.is_set():
                fired.set()
                threads.append(threading.Thread(target=chaos))
                threads[-1].start()

    runs, wall = warm(items, opts, progress)
    for t in threads:
        t.join()
    assert fired.is_set(), "the chaos never ran: the warm finished too early"
    return report.document(items, runs, opts, wall)


def test_killed_and_restarted_mid_warm(sglang_factory: Factory, tmp_path: Path) -> None:
    """Kill -9 after 4 schemas, relaunch on the same port: every schema ends warm, truthfully."""
    (srv,) = sglang_factory(fresh=True)
    try:
        reg = heavy_registry(tmp_path, 600, 10)

        def crash_and_relaunch() -> None:
            srv.kill()
            srv.launch()  # same port; the warm's --wait-ready logic waits for /health

        doc = _warm_with_chaos(srv, reg, 4, crash_and_relaunch, wait_ready_s=600.0)
        s = doc["servers"][0]
        assert s["restarts_detected"] >= 1 and s["rounds"] >= 2
        assert doc["summary"]["warmed"] == 10 and report.exit_code(doc) == 0
        assert all(r.get("rewarmed") for r in doc["results"])
        # Independent check that nothing claimed is false: the server really holds each one.
        direct = [generate_ms(srv.url, canonical_text(heavy(i)))[1] for i in range(600, 610)]
        cold_now = fresh_cold_ms(srv.url, 650)
        assert statistics.median(direct) < cold_now / 2, (direct, cold_now)
    finally:
        srv.stop()


def test_two_workers_each_warmed(
    sglang_server: DevServer, sglang_factory: Factory, tmp_path: Path
) -> None:
    """Two workers, two caches: warming one (as a router would) leaves the other cold."""
    (b,) = sglang_factory()  # shared, not fresh: the next test kills it after use
    a = sglang_server
    reg = heavy_registry(tmp_path, 800, 4)
    rc, one = warm_json("--server", a.url, "-r", str(reg))
    assert rc == 0
    status, on_b = generate_ms(b.url, canonical_text(heavy(800)))
    status_a, on_a = generate_ms(a.url, canonical_text(heavy(801)))
    assert status == status_a == 200 and on_b > 2 * on_a  # worker b compiled it only now

    rc, both = warm_json("--server", a.url, "--server", b.url, "-r", str(reg))
    assert rc == 0 and both["summary"]["rows"] == 8 and both["summary"]["warmed"] == 8
    rows_b = rows_by_schema(both, b.url)
    # on b, the three schemas not touched above were cold until this run
    assert [rows_b[f"heavy_{i}"]["proof"] for i in (801, 802, 803)] == ["hit"] * 3


def test_killed_not_restarted_reports_nothing_warmed(
    sglang_factory: Factory, tmp_path: Path
) -> None:
    """A server that dies for good: bounded failure, and no schema claimed warmed.

    It kills the second worker of the test above (the factory's shared server, restarted
    for any later test that asks for it): one server start fewer.
    """
    (srv,) = sglang_factory()
    try:
        reg = heavy_registry(tmp_path, 700, 8)
        t0 = time.monotonic()
        doc = _warm_with_chaos(srv, reg, 3, srv.kill, wait_ready_s=5.0)
        assert time.monotonic() - t0 < 120
        assert doc["summary"]["warmed"] == 0 and report.exit_code(doc) == 1
        assert {r["status"] for r in doc["results"]} == {"failed"}
        assert all("unreachable" in r["error"] or "not ready" in r["error"] for r in doc["results"])
    finally:
        srv.stop()


def test_dp2_every_replica_warmed(sglang_factory: Factory, tmp_path: Path) -> None:
    """dp_size 2: one cache per replica, each warmed via routed_dp_rank and proven.

    SGLang on CPU refuses more ranks than NUMA nodes (1 here) unless each rank is given its
    cores (SGLANG_CPU_OMP_THREADS_BIND): the test does not set it, the launcher must. Its
    data_parallel_controller spins a full core while up: the server is stopped, whole group,
    when the test ends.
    """
    (srv,) = sglang_factory(dp_size=2, fresh=True)
    try:
        assert httpx.get(srv.url + "/server_info", timeout=30).json()["dp_size"] == 2
        reg = heavy_registry(tmp_path, 900, 4)
        for rank in (0, 1, 0, 1):  # the first requests of a fresh rank pay one-off costs
            assert generate_ms(srv.url, "{}", rank=rank)[0] == 200
        # a schema compiled on replica 0 only is still cold on replica 1
        first = canonical_text(heavy(950))
        assert generate_ms(srv.url, first, rank=0)[0] == 200
        hit0 = statistics.median(generate_ms(srv.url, first, rank=0)[1] for _ in range(3))
        _, miss1 = generate_ms(srv.url, first, rank=1)
        assert miss1 > 1.5 * hit0, (hit0, miss1)

        rc, doc = warm_json("--server", srv.url, "-r", str(reg))
        assert rc == 0, doc
        assert doc["servers"][0]["dp_size"] == 2 and doc["servers"][0]["dp_routing"] == "rank"
        proofs = []
        for row in doc["results"]:
            assert [r["status"] for r in row["replicas"]] == ["warmed", "warmed"]
            proofs += [r["proof"] for r in row["replicas"]]
        # latency proofs on 2 shared cores are noisy: most, not all, must be clear hits
        assert proofs.count("hit") >= 6, proofs
        direct = [  # independent check: each replica answers warm
            generate_ms(srv.url, canonical_text(heavy(i)), rank=rank)[1]
            for i in range(900, 904)
            for rank in (0, 1)
        ]
        assert statistics.median(direct) < fresh_cold_ms(srv.url, 960, rank=1) / 2, direct
        r = cli(
            "warm", "--server", srv.url, "-r", str(reg), "--dp-routing", "round-robin", "--json"
        )
        assert r.returncode == 0  # the fallback mode also leaves every replica warm
        for rank in (0, 1):  # both replicas enforce the grammar, not just answer
            enforces_ok_boolean(srv.url, max_new_tokens=32, rank=rank)
        stop_leaves_nothing(srv)
    finally:
        srv.stop()
