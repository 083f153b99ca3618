"""Isolation: every compile runs in a worker process with a deadline and a memory cap, and
whatever a backend does (hang, blow up memory, die by a signal) comes back as a status.

Real libraries, real Qwen2.5 tokenizer, real slow/huge compiles: outlines-core's Index over
``{"type": "string", "maxLength": 100}`` runs for minutes and grows without bound (measured:
still running after 60 s at ~480 MB), so it is the natural timeout and OOM case.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest

from schemaops.compare import STATUSES, measure, measure_many
from schemaops.compare.instances import build_instances
from schemaops.compare.isolate import Worker

SLOW = {"type": "string", "maxLength": 100}
SMALL = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
KEYS = {
    "schema",
    "backend",
    "status",
    "compile_ms",
    "mask_us",
    "advance_us",
    "enforcement",
    "error",
}


def task(schema, valid=(), invalid=(), name="t"):
    return {
        "schema_text": json.dumps(schema),
        "name": name,
        "instances": build_instances(schema, list(valid), list(invalid)),
    }


@pytest.fixture(scope="module")
def outlines_worker():
    w = Worker("outlines", "qwen2.5", None, mem_mb=None)
    yield w
    w.close()


def test_measure_result_shape_and_worker_reuse():
    r1 = measure(
        json.dumps(SMALL),
        "llguidance",
        "qwen2.5",
        valid=[{"id": 1}],
        invalid=[{"id": "x"}, {}],
        timeout_s=30,
        name="small",
    )
    assert set(r1) >= KEYS and r1["status"] == "ok" and r1["error"] is None
    assert r1["schema"] == "small" and r1["backend"] == "llguidance"
    assert r1["compile_ms"] > 0 and r1["mask_us"]["p50"] > 0 and r1["advance_us"]["p99"] > 0
    enf = r1["enforcement"]
    assert (enf["verdict"], enf["accepts_invalid"], enf["rejects_valid"]) == ("enforced", 0, 0)
    assert sorted(enf["keywords"]) == ["required", "type"]
    r2 = measure('{"type":"array","uniqueItems":true}', "llguidance", invalid=[[1, 1]])
    assert r2["status"] == "unsupported" and r2["enforcement"]["verdict"] == "unsupported"
    assert r2["enforcement"]["keywords"] == {
        "uniqueItems": {"enforced": 0, "ignored": 0, "rejected": 1}
    }
    from schemaops.compare.pool import _SHARED

    (w,) = [w for k, w in _SHARED.items() if k[0] == "llguidance"]
    assert w.starts == 1  # one worker served both schemas


def test_crash_timeout_then_recovery(outlines_worker):
    w = outlines_worker
    assert w.run(task(SMALL), timeout_s=60)["status"] == "ok"  # started and warm
    # a native crash mid-compile: the worker dies by a signal, schemaops carries on
    killer = threading.Thread(target=_kill_soon, args=(w.proc.pid, signal.SIGSEGV))
    killer.start()
    res = w.run(task(SLOW), timeout_s=120)
    killer.join()
    assert res["status"] == "crash" and "SIGSEGV" in res["error"], res["error"]
    assert res["enforcement"]["verdict"] == "failed"  # a crash is not "unsupported"
    # a compile past the deadline: killed, reported, and the worker is replaced
    t0 = time.monotonic()
    res = w.run(task(SLOW), timeout_s=2)
    assert res["status"] == "timeout" and "exceeded 2 s" in res["error"]
    assert res["compile_ms"] is None and time.monotonic() - t0 < 60
    res = w.run(task(SMALL, valid=[{"id": 7}]), timeout_s=60)
    assert res["status"] == "ok" and res["enforcement"]["verdict"] == "enforced"
    assert w.starts == 3  # first, after the crash, after the timeout


def _kill_soon(pid: int, sig: int) -> None:
    time.sleep(2.0)  # the compile of SLOW has started and runs for minutes
    os.kill(pid, sig)


def test_memory_cap_is_oom():
    w = Worker("outlines", "qwen2.5", None, mem_mb=10)
    try:
        res = w.run(task(SLOW), timeout_s=120)
    finally:
        w.close()
    assert res["status"] == "oom", res
    assert "memory allocation" in res["error"]


def test_measure_many_order_progress_and_statuses():
    seen = []
    items = [
        {"name": "small", "schema": SMALL, "valid": [{"id": 1}], "invalid": [{"id": 1.5}]},
        {
            "name": "uniq",
            "schema": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
            "valid": [[1, 2]],
            "invalid": [[2, 2]],
        },
        {"unique_id": "jsb-1", "json_schema": '{"type":"string","pattern":"(?<=a)b"}'},
    ]
    results = measure_many(
        items,
        ["llguidance", "xgrammar"],
        "qwen2.5",
        jobs=2,
        timeout_s=60,
        progress=lambda done, total, r: seen.append((done, total)),
    )
    got = [(r["schema"], r["backend"], r["status"], r["enforcement"]["verdict"]) for r in results]
    assert got == [
        ("small", "llguidance", "ok", "enforced"),
        ("small", "xgrammar", "ok", "enforced"),
        ("uniq", "llguidance", "unsupported", "unsupported"),
        ("uniq", "xgrammar", "ok", "accepts_invalid"),
        ("jsb-1", "llguidance", "unsupported", "unsupported"),
        ("jsb-1", "xgrammar", "unsupported", "unsupported"),
    ]
    assert sorted(seen) == [(i, 6) for i in range(1, 7)]
    assert all(r["status"] in STATUSES for r in results)
