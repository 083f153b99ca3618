"""Poisoned schemas, live: the failure-run rule, the engine's error text, and the hook
(a real subprocess, argv only, bounded in time and rate)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from watch_support import record, registry, watch_once

from schemaops.watch.poison import Detector, HookRunner, engine_error, hook_argv

# The abort messages of SGLang 0.5.23 (python/sglang/srt/constrained/grammar_manager.py)
CACHED = "Failed to compile json grammar: Grammar preprocessing timed out"
TIMED_OUT = "Grammar preprocessing timed out: req.grammar_key=('json', '{}')"
ODD = "a b;$(touch PWNED) -x"

HOOK = (
    "import json, sys, pathlib; p = pathlib.Path(sys.argv[1]);"
    " p.write_text(p.read_text() + json.dumps(sys.argv[2:]) + '\\n' if p.exists()"
    " else json.dumps(sys.argv[2:]) + '\\n')"
)


def _hook_cmd(out: Path) -> str:
    return f"{sys.executable} -c {json.dumps(HOOK)} {out}"


def test_run_of_failures_flags_after_min_and_ok_clears() -> None:
    d = Detector(min_failures=5)
    assert d.add_batch({"s": Counter(ok=50, bad=1)}, {}, 0.0) == []
    assert d.add_batch({"s": Counter(bad=4)}, {"s": [60, 4, 0]}, 1.0) == []
    assert d.add_batch({"s": Counter(bad=1)}, {"s": [64, 1, 0]}, 2.0) == ["s"]
    assert "s" in d.flagged
    assert d.add_batch({"s": Counter(bad=3)}, {"s": [65, 3, 0]}, 3.0) == []  # flagged once
    d.add_batch({"s": Counter(ok=1)}, {}, 4.0)
    assert d.flagged == {} and d.flag_count["s"] == 1


def test_a_few_failures_of_a_flaky_schema_are_not_poison() -> None:
    d = Detector(min_failures=5)
    d.add_batch({"s": Counter(ok=50, bad=50)}, {}, 0.0)  # fails half the time anyway
    assert d.add_batch({"s": Counter(bad=6)}, {"s": [1, 6, 0]}, 1.0) == []


def test_engine_error_read_from_error_fields_only() -> None:
    rec = {"schema": "item", "error": {"message": CACHED, "code": 400}}
    assert engine_error(json.dumps(rec).encode(), "schema") == ("item", CACHED)
    flat = {"schema": "item", "object": "error", "message": TIMED_OUT}
    assert engine_error(json.dumps(flat).encode(), "schema")[1] == TIMED_OUT
    meta = {"schema": "item", "text": "", "meta_info": {"finish_reason": {"message": CACHED}}}
    assert engine_error(json.dumps(meta).encode(), "schema") is not None
    quoted = {"schema": "item", "text": json.dumps({"n": 1, "note": CACHED})}
    assert engine_error(json.dumps(quoted).encode(), "schema") is None  # model text: not it


def test_hook_argv_never_splits_the_name() -> None:
    assert hook_argv("warm --schema", ODD) == ["warm", "--schema", ODD]
    assert hook_argv("x {schema} --now", ODD) == ["x", ODD, "--now"]


def test_engine_error_flags_and_runs_hook_once(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    (reg / f"{ODD}.json").write_text((reg / "item.json").read_text())
    out = tmp_path / "hook.out"
    log = tmp_path / "log.jsonl"
    err = {"schema": ODD, "error": {"message": CACHED}}
    log.write_bytes(
        record(1)
        + b"".join(json.dumps(err).encode() + b"\n" for _ in range(3))
        + json.dumps({"schema": "\x1b[2Jnot-registered", "message": CACHED}).encode()
        + b"\n"
    )
    snap = watch_once([str(log)], reg, on_poisoned=_hook_cmd(out), hook_cooldown=600.0)
    assert set(snap["poisoned"]) == {ODD, "(unknown)"}
    assert snap["engine_errors"] == {ODD: 3, "(unknown)": 1}
    assert out.read_text().splitlines() == [json.dumps([ODD])]  # once, one argument
    assert snap["hooks"] == {ODD: {"ok": 1}}
    assert not (tmp_path / "PWNED").exists() and not Path("PWNED").exists()


def test_failure_run_flags_within_the_batch_and_hook_runs(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    out = tmp_path / "hook.out"
    log = tmp_path / "log.jsonl"
    log.write_bytes(
        b"".join(record(i) for i in range(40)) + b"".join(record(i, ok=False) for i in range(8))
    )
    snap = watch_once([str(log)], reg, on_poisoned=_hook_cmd(out))
    assert list(snap["poisoned"]) == ["item"] and "8 failures" in snap["poisoned"]["item"]["reason"]
    assert out.read_text().splitlines() == [json.dumps(["item"])]


def test_hook_timeout_kills_and_cooldown_bounds_rate(tmp_path: Path) -> None:
    lines: list[str] = []
    slow = f"{sys.executable} -c 'import time; time.sleep(60)'"
    runner = HookRunner(slow, timeout_s=0.5, cooldown_s=600.0, log=lines.append)
    try:
        assert runner.submit("s", time.monotonic())
        assert not runner.submit("s", time.monotonic())  # pending, then in cooldown
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and runner.results.get(("s", "timeout")) != 1:
            time.sleep(0.05)
        assert runner.results[("s", "timeout")] == 1
        assert not runner.submit("s", time.monotonic())
        assert runner.results[("s", "skipped_cooldown")] == 2
        assert any("killed after 0.5 s" in x for x in lines)
    finally:
        runner.stop()


def test_a_poisoned_name_with_controls_is_printed_escaped(tmp_path: Path) -> None:
    from cli_support import run_cli

    reg = registry(tmp_path)
    name = "clear\x1b[2Jme"
    (reg / f"{name}.json").write_text((reg / "item.json").read_text())
    bad = {"schema": name, "text": json.dumps({"n": "x"})}
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(bad) + "\n" for _ in range(6)))
    r = run_cli("watch", str(log), "--registry", str(reg), "--once", "--listen", "none")
    assert r.returncode == 0, r.stderr
    assert "poisoned schema: clear\\x1b[2Jme" in r.stderr and "\x1b" not in r.stderr


def test_a_restart_keeps_the_flag_and_never_reruns_the_hook(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    out, state = tmp_path / "hook.out", tmp_path / "state"
    log = tmp_path / "log.jsonl"
    log.write_bytes(
        b"".join(record(i) for i in range(40)) + b"".join(record(i, ok=False) for i in range(8))
    )
    first = watch_once([str(log)], reg, state, on_poisoned=_hook_cmd(out))
    assert list(first["poisoned"]) == ["item"]
    with open(log, "ab") as fh:
        fh.write(b"".join(record(i, ok=False) for i in range(5)))
    again = watch_once([str(log)], reg, state, on_poisoned=_hook_cmd(out))
    assert list(again["poisoned"]) == ["item"] and again["poisoned_flags"] == {"item": 1}
    assert out.read_text().splitlines() == [json.dumps(["item"])]  # once across the restart
    with open(log, "ab") as fh:
        fh.write(record(99))
    healed = watch_once([str(log)], reg, state)
    assert healed["poisoned"] == {} and healed["outputs"] == 54


# The hook leaves a child behind (same process group), writes both pids, then sleeps
# ``sys.argv[2]`` seconds: a stand-in for a restart script that starts a helper.
SPAWN = (
    "import os, subprocess, sys, time\n"
    "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
    "tmp = sys.argv[1] + '.tmp'\n"
    "open(tmp, 'w').write(f'{os.getpid()} {c.pid}')\n"
    "os.replace(tmp, sys.argv[1])\n"
    "time.sleep(float(sys.argv[2]))\n"
)


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for a parent that never reaps is not running)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _pids(path: Path, proc: Any = None) -> list[int]:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert proc is None or proc.poll() is None, f"watch exited {proc.returncode}"
        assert time.monotonic() < deadline, "the hook never started"
        time.sleep(0.02)
    return [int(x) for x in path.read_text().split()]


def _gone(pids: list[int], within_s: float = 30.0) -> list[int]:
    """The pids still running after ``within_s`` (killed then, so a test leaves none)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    left = [p for p in pids if _alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    return left


def _poisoned_log(tmp: Path) -> Path:
    log = tmp / "log.jsonl"
    log.write_bytes(b"".join(record(i, ok=False) for i in range(6)))
    return log


def _watch(tmp: Path, *args: str) -> subprocess.Popen:
    """A real watch; its output goes to files (a hook's child left running keeps a pipe open:
    reading one to its end would wait for that child)."""
    from cli_support import REPO

    out = open(tmp / "watch.out", "wb")  # noqa: SIM115 - closed by the child's exit
    err = open(tmp / "watch.err", "wb")  # noqa: SIM115
    with out, err:
        return subprocess.Popen(
            [sys.executable, "-m", "schemaops", "watch", *args], cwd=REPO, stdout=out,
            stderr=err,
        )  # fmt: skip


def test_sigterm_ends_a_running_hook_and_its_children(tmp_path: Path) -> None:
    reg, log, pidfile = registry(tmp_path), _poisoned_log(tmp_path), tmp_path / "pids"
    hook = f"{sys.executable} -c {shlex.quote(SPAWN)} {pidfile} 300"
    proc = _watch(
        tmp_path, str(log), "--registry", str(reg), "--listen", "none", "--interval", "0.05s",
        "--on-poisoned", hook, "--hook-timeout", "10m",
    )  # fmt: skip
    try:
        pids = _pids(pidfile, proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert proc.returncode == 0, (tmp_path / "watch.err").read_text()
    assert _gone(pids) == [], "the hook or its child outlived watch"


def test_children_a_hook_leaves_behind_are_ended(tmp_path: Path) -> None:
    reg, log, pidfile = registry(tmp_path), _poisoned_log(tmp_path), tmp_path / "pids"
    hook = f"{sys.executable} -c {shlex.quote(SPAWN)} {pidfile} 0"
    proc = _watch(
        tmp_path, str(log), "--registry", str(reg), "--once", "--listen", "none",
        "--on-poisoned", hook,
    )  # fmt: skip
    proc.wait(timeout=120)
    assert proc.returncode == 0, (tmp_path / "watch.err").read_text()
    pids = _pids(pidfile)
    assert _gone(pids) == [], "the hook's child outlived the hook"


def test_an_on_poisoned_that_cannot_be_split_is_refused_at_start(tmp_path: Path) -> None:
    from cli_support import run_cli

    reg, log = registry(tmp_path), _poisoned_log(tmp_path)
    r = run_cli(
        "watch", str(log), "--registry", str(reg), "--once", "--listen", "none",
        "--on-poisoned", "echo 'unclosed",
    )  # fmt: skip
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "--on-poisoned" in r.stderr and "quotation" in r.stderr
    assert "Traceback" not in r.stderr
