"""``schemaops watch`` on a log written from a real SGLang 0.5.23 dev server's answers.

One server, started for this test with ``SGLANG_GRAMMAR_MAX_POLL_ITERATIONS=40``: SGLang's
grammar manager (``python/sglang/srt/constrained/grammar_manager.py``) gives a compile that
many scheduler polls (~5 ms each) before it aborts the request with "Grammar preprocessing
timed out" and caches the grammar as invalid; every later request with that schema answers
HTTP 400 "Failed to compile json grammar: Grammar preprocessing timed out" until a restart.
A compile-heavy schema (600 patterns: seconds) is thereby poisoned for real, as on a
production server whose compile outran its limit. The test checks, while the log grows:
the poisoned schema is flagged and its hook runs once; /metrics (read by prometheus-client's
parser) gives the audit's p per schema on the same lines; a rotation and a restart lose
and double nothing.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from schemaops.audit import AuditOptions, run_audit
from schemaops.devserver import DevServerError, start_servers
from schemaops.registry.model import canonical_text
from schemaops.warm.heavy import heavy_schema

REPO = Path(__file__).resolve().parents[2]
SCHEMAS: dict[str, Any] = {
    "flag": {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
        "additionalProperties": False,
    },
    "pick": {
        "type": "object",
        "properties": {"c": {"enum": ["a", "b"]}},
        "required": ["c"],
        "additionalProperties": False,
    },
    "heavy_07": heavy_schema(7, 600),  # seconds to compile: past 40 polls whatever the load
}


def _send(
    url: str, name: str, constrained: bool = True, max_new_tokens: int = 24
) -> dict[str, Any]:
    """One /generate; the log record: the answer (or the error body) with the schema name."""
    params: dict[str, Any] = {"max_new_tokens": max_new_tokens, "temperature": 0.0}
    if constrained:
        params["json_schema"] = canonical_text(SCHEMAS[name])
    r = httpx.post(url + "/generate", json={"text": "Hi", "sampling_params": params}, timeout=300)
    try:
        body = r.json()
    except ValueError:
        body = {"error": r.text[:500]}
    if not isinstance(body, dict):
        body = {"answer": body}
    return {"schema": name, "status": r.status_code, **body}


def _append(log: Path, recs: list[dict[str, Any]]) -> None:
    with open(log, "ab") as fh:
        for rec in recs:
            fh.write(json.dumps(rec).encode() + b"\n")


def _traffic(url: str, rounds: int) -> list[dict[str, Any]]:
    """Constrained answers of two light schemas, with an unconstrained one now and then
    (logged under the schema: the failures p counts)."""
    recs = []
    for i in range(rounds):
        recs.append(_send(url, "flag"))
        recs.append(_send(url, "pick", constrained=i % 3 != 0))
    return recs


def _start_watch(log: Path, reg: Path, state: Path, hook_out: Path) -> tuple[Any, str]:
    hook = (
        f"{sys.executable} -c "
        '\'import sys; open(sys.argv[1], "a").write(sys.argv[2] + "\\n")\' '
        f"{hook_out}"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "schemaops", "watch", str(log), "--registry", str(reg),
         "--listen", "127.0.0.1:0", "--interval", "0.2s", "--state-dir", str(state),
         "--window", "5m", "--on-poisoned", hook, "--no-cache"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if "serving http://" in line:
            return proc, line.split("serving ", 1)[1].strip() + "/metrics"
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError("watch printed no address")


def _samples(url: str) -> dict[tuple[str, tuple], float]:
    text = httpx.get(url, timeout=30).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def _wait(url: str, ok: Any, what: str, seconds: float = 120) -> dict:
    deadline = time.monotonic() + seconds
    samples: dict = {}
    while time.monotonic() < deadline:
        samples = _samples(url)
        if ok(samples):
            return samples
        time.sleep(0.2)
    raise AssertionError(f"{what} not seen within {seconds} s: {sorted(samples)[:40]}")


def _stop(proc: Any) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 0


@pytest.fixture(scope="module")
def poisonable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One server for this module: compiles cut off after 40 polls, and its own JSON request
    log written into a folder: (URL, log folder)."""
    logs = tmp_path_factory.mktemp("sglang-requests")
    flags = ["--log-requests", "--log-requests-format", "json", "--log-requests-target", str(logs)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SGLANG_GRAMMAR_MAX_POLL_ITERATIONS", "40")
        try:
            server = start_servers(n=1, extra_args=flags)[0]
        except DevServerError as exc:
            pytest.fail(f"could not start the SGLang dev server:\n{exc}", pytrace=False)
    yield server.url, logs
    server.stop()


def _registry(tmp_path: Path) -> Path:
    reg = tmp_path / "schemas"
    reg.mkdir()
    for name, schema in SCHEMAS.items():
        (reg / f"{name}.json").write_text(json.dumps(schema))
    return reg


def test_watch_on_a_log_of_the_servers_answers(
    poisonable: tuple[str, Path], tmp_path: Path
) -> None:
    url = poisonable[0]
    reg = _registry(tmp_path)
    log, state, hook_out = tmp_path / "requests.jsonl", tmp_path / "state", tmp_path / "hook"
    log.touch()
    proc, metrics = _start_watch(log, reg, state, hook_out)
    try:
        _append(log, _traffic(url, 6))
        poisoned = [_send(url, "heavy_07") for _ in range(3)]  # times out, then cached invalid
        assert [r["status"] for r in poisoned] == [400, 400, 400], poisoned
        assert "Grammar preprocessing timed out" in poisoned[0]["error"]["message"]
        assert poisoned[1]["error"]["message"].startswith("Failed to compile json grammar")
        _append(log, poisoned)
        key = ("schemaops_watch_poisoned", (("schema", "heavy_07"),))
        _wait(metrics, lambda s: s.get(key) == 1, "heavy_07 flagged")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not hook_out.exists():
            time.sleep(0.1)
        _append(log, [_send(url, "heavy_07")])  # still failing: no second hook run
        n_lines = sum(1 for _ in open(log, "rb"))
        lines_key = ("schemaops_watch_lines_total", ())
        _wait(metrics, lambda s: s.get(lines_key) == n_lines, "every line read")
        # rotation while watch runs: the old file renamed, a new one written
        log.rename(tmp_path / "requests.jsonl.1")
        _append(log, _traffic(url, 3))
        rotated = n_lines + sum(1 for _ in open(log, "rb"))
        _wait(metrics, lambda s: s.get(lines_key) == rotated, "the new file's lines")
    finally:
        _stop(proc)
    assert hook_out.read_text().splitlines() == ["heavy_07"]  # once
    _append(log, _traffic(url, 3))  # written while watch is down
    proc, metrics = _start_watch(log, reg, state, hook_out)
    try:
        everything = tmp_path / "all.jsonl"
        everything.write_bytes((tmp_path / "requests.jsonl.1").read_bytes() + log.read_bytes())
        total = sum(1 for _ in open(everything, "rb"))
        s = _wait(metrics, lambda s: s.get(lines_key) == total, "the lines written while down")
        time.sleep(1.0)  # a second look: nothing counted twice
        s = _samples(metrics)
        assert s[lines_key] == total
    finally:
        _stop(proc)
    doc = run_audit(str(everything), AuditOptions(registry=str(reg), cache=False)).to_json()
    assert doc["p"] is not None and 0 < doc["p"] < 1  # ok and failed outputs both present
    for schema, row in doc["by_schema"].items():
        for cat, n in row["categories"].items():
            key = (("category", cat), ("schema", schema))
            assert s[("schemaops_watch_outputs_total", key)] == n, (schema, cat)
        assert s[("schemaops_audit_schema_p", (("input", "watch"), ("schema", schema)))] == row["p"]
    assert s[("schemaops_audit_p", (("input", "watch"),))] == doc["p"]
    assert s[("schemaops_watch_engine_errors_total", (("schema", "heavy_07"),))] == 4
    assert hook_out.read_text().splitlines() == ["heavy_07"]  # the restart did not rerun it


def test_watch_follows_the_servers_own_json_request_log(
    poisonable: tuple[str, Path], tmp_path: Path
) -> None:
    """SGLang writes the log itself (--log-requests-format json): watch follows its folder,
    names each request's json_schema by the registry, flags the schema whose compile timed
    out (the abort recorded in the log) and runs the hook once; its counts equal the audit of
    the same lines as records, and the audit of the log file as it is."""
    from schemaops.audit.read.sglang_log import SchemaNames, adapt

    url, logs = poisonable
    reg = _registry(tmp_path)  # heavy_07 (the other test's) left out: not this test's alarm
    (reg / "heavy_07.json").unlink()
    SCHEMAS["heavy_08"] = heavy_schema(8, 600)  # never sent before: compiles (and times out) now
    (reg / "heavy_08.json").write_text(json.dumps(SCHEMAS["heavy_08"]))
    state, hook_out = tmp_path / "state", tmp_path / "hook"
    proc, metrics = _start_watch(logs, reg, state, hook_out)
    try:
        _traffic(url, 4)
        _send(url, "flag", max_new_tokens=3)  # cut: a failed output of a registry schema
        assert [_send(url, "heavy_08")["status"] for _ in range(2)] == [400, 400]
        key = ("schemaops_watch_poisoned", (("schema", "heavy_08"),))
        _wait(metrics, lambda s: s.get(key) == 1, "heavy_08 flagged from the request log")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not hook_out.exists():
            time.sleep(0.1)
        log_lines = [line for f in sorted(logs.iterdir()) for line in f.read_bytes().splitlines()]
        lines_key = ("schemaops_watch_lines_total", ())
        s = _wait(metrics, lambda s: s.get(lines_key) == len(log_lines), "every log line")
    finally:
        _stop(proc)
    records, dropped = adapt(log_lines, SchemaNames(str(reg)))
    assert dropped > 0 and records  # received events and health checks are no outputs
    as_records = tmp_path / "records.jsonl"
    as_records.write_bytes(b"".join(r + b"\n" for r in records))
    doc = run_audit(str(as_records), AuditOptions(registry=str(reg), cache=False)).to_json()
    assert set(doc["by_schema"]) == {"flag", "pick"}
    for schema, row in doc["by_schema"].items():
        for cat, n in row["categories"].items():
            key2 = (("category", cat), ("schema", schema))
            assert s[("schemaops_watch_outputs_total", key2)] == n, (schema, cat)
    assert s[("schemaops_watch_skipped_lines_total", ())] == dropped
    # audit reads the server's log as it is, to the same counts
    raw_log = tmp_path / "server.log"
    raw_log.write_bytes(b"".join(line + b"\n" for line in log_lines))
    direct = run_audit(str(raw_log), AuditOptions(registry=str(reg), cache=False)).to_json()
    assert {k: v["categories"] for k, v in direct["by_schema"].items()} == {
        k: v["categories"] for k, v in doc["by_schema"].items()
    }
    assert direct["input_errors"] == doc["input_errors"]
    assert direct["log_events_skipped"] == dropped
    assert s[("schemaops_watch_engine_errors_total", (("schema", "heavy_08"),))] == 2
    assert hook_out.read_text().splitlines() == ["heavy_08"]
