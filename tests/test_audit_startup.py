"""What a one-line audit imports (issue 36, start-up): with the facts cache warm and an output
jsonschema-rs accepts, neither ``jsonschema`` (whose format checkers import their optional
packages) nor ``referencing``/``jsonschema_specifications`` nor ``importlib.metadata`` is
imported; a checker imports and sets them up at its first failure, outside the watchdog. The
reports are the same either way (the explanation differentials hold the verdicts:
``test_audit_rs_explain.py``, ``test_audit_differential.py``). Seconds are measured in
``bench/audit_scale.py``, not here."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
from corpus_paths import REPO

from schemaops.audit.verdict.validate import SchemaChecker
from schemaops.watchdog import armed

HEAVY = ("jsonschema", "referencing", "jsonschema_specifications", "importlib.metadata")
#: runs the console entry point and says, at exit, which of ``HEAVY`` the process imported
RUNNER = (
    "import atexit, sys\n"
    f"HEAVY = {HEAVY!r}\n"
    "atexit.register(lambda: sys.stderr.write("
    "'LOADED ' + ','.join(m for m in HEAVY if m in sys.modules) + '\\n'))\n"
    "from schemaops.cli import main\n"
    "main()\n"
)
OK_ARGS = {"subscription_id": "sub_1NqKx2LkdIwHu7", "effective": "end_of_term", "reason": "other"}
BAD_ARGS = {**OK_ARGS, "effective": "tomorrow"}  # an enum violation


def _audit(path: Path, cache: Path) -> tuple[dict, list[str]]:
    cmd = [sys.executable, "-c", RUNNER, "audit", str(path), "--registry", "schemas"]
    cmd += ["--cache-dir", str(cache), "--json"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    loaded = [ln for ln in done.stderr.splitlines() if ln.startswith("LOADED ")]
    assert len(loaded) == 1, done.stderr
    return json.loads(done.stdout), [m for m in loaded[0][7:].split(",") if m]


def _line(args: dict) -> str:
    record = {"schema": "cancel_subscription", "text": json.dumps(args)}
    return json.dumps(record) + "\n"


def _same_report(a: dict, b: dict) -> None:
    keep = ("total", "ok", "categories", "schema_violations", "parse_failures", "p")
    assert {k: a[k] for k in keep} == {k: b[k] for k in keep}


def test_a_warm_one_line_audit_imports_no_jsonschema(tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text(_line(OK_ARGS), encoding="utf-8")
    cache = tmp_path / "cache"
    cold, _ = _audit(one, cache)  # fills the facts cache (the registry's checks need jsonschema)
    warm, loaded = _audit(one, cache)
    assert warm["ok"] == 1
    _same_report(cold, warm)
    assert loaded == [], f"a warm one-line audit imported {loaded}"


def test_a_failure_imports_jsonschema_and_is_explained_as_before(tmp_path: Path) -> None:
    two = tmp_path / "two.jsonl"
    two.write_text(_line(OK_ARGS) + _line(BAD_ARGS), encoding="utf-8")
    cache = tmp_path / "cache"
    cold, _ = _audit(two, cache)
    warm, loaded = _audit(two, cache)
    _same_report(cold, warm)
    assert warm["categories"] == {"ok": 1, "schema_violation:enum": 1}
    assert "jsonschema" in loaded  # the explanation is jsonschema's wording


def test_a_checker_is_set_up_outside_the_watchdog(monkeypatch: Any) -> None:
    """The first failure's set-up (jsonschema's import, the closure tree, the validators that
    word the error) runs outside the watchdog: here it is made to take longer than the
    watchdog's timeout, which would count the output as a ``pattern`` timeout if it ran under
    it (the schema has a ``pattern``, so its checks are watched)."""
    schema = orjson.loads((REPO / "schemas" / "cancel_subscription.json").read_bytes())
    real = SchemaChecker.prepare

    def slow_prepare(self: SchemaChecker) -> None:
        real(self)
        time.sleep(0.4)  # interrupted by the watchdog's tick if a unit is under watch

    monkeypatch.setattr(SchemaChecker, "prepare", slow_prepare)
    checker = SchemaChecker("cancel_subscription", schema, timeout=0.05)
    assert checker.guarded
    with armed(0.05):
        assert checker.check(OK_ARGS).category == "ok"  # no set-up: jsonschema-rs says yes
        got = checker.check(BAD_ARGS)
    assert checker.timeouts == 0
    assert got.category == "schema_violation:enum" and got.path == "/effective"
