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


# A parent that runs one compile past --timeout, serves one schema, then is killed by an outer
# deadline (CI's `timeout`, SIGKILL) in the middle of a minutes-long compile.
_LOG_SCRIPT = """
import json, os, sys, tempfile
from schemaops.compare.instances import build_instances
from schemaops.compare.isolate import Worker

def task(schema):
    return {"schema_text": json.dumps(schema), "name": "t",
            "instances": build_instances(schema, [], [])}

w = Worker("outlines", "qwen2.5", None, mem_mb=None)
first = w.run(task(%(slow)r), timeout_s=1)
second = w.run(task(%(small)r), timeout_s=60)
print(json.dumps([first["status"], second["status"], w.proc.pid,
                  sorted(os.listdir(tempfile.gettempdir()))]), flush=True)
w.run(task(%(slow)r), timeout_s=600)
"""


def test_worker_logs_never_stay_in_tmpdir(tmp_path):
    """Issue 22 #18: the worker's log has no name in $TMPDIR while the worker runs, after a
    compile timeout, and after its parent is SIGKILLed (no close() ever runs): fails on main,
    whose named log (``schemaops-outlines-*.log``) stayed behind."""
    import subprocess
    import sys

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    script = _LOG_SCRIPT % {"slow": SLOW, "small": SMALL}
    proc = subprocess.Popen(
        [sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True
    )
    child = None
    try:
        first, second, child, listed = json.loads(proc.stdout.readline())
        assert (first, second) == ("timeout", "ok")
        assert not [n for n in listed if n.startswith("schemaops-")], listed
    finally:
        proc.kill()  # the outer deadline, mid-compile of the second SLOW
        proc.wait(60)
        if child is not None:
            try:
                os.kill(child, signal.SIGKILL)  # it would exit within 1 s with its parent
            except ProcessLookupError:
                pass
    assert not [n for n in os.listdir(tmp) if n.startswith("schemaops-")], os.listdir(tmp)
