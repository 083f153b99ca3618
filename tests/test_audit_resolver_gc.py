"""Compiled checkers of a large registry leave the cyclic collector's reach (issue 15).

Each checker holds hundreds of long-lived container objects; with thousands of schemas every
full collection walked them all again (half of a 9,500-schema audit's CPU). The resolver
freezes them once a registry has more than a handful of schemas; verdicts do not change.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from schemaops.audit.verdict.resolver import (
    FREEZE_AFTER,
    YOUNG_THRESHOLD,
    SchemaResolver,
    collector_restored,
)


@pytest.fixture
def _unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # give the rest of the test session its collector back


def _registry(tmp_path: Path, n: int) -> Path:
    reg = tmp_path / "reg"
    reg.mkdir()
    for i in range(n):
        schema = {"type": "object", "properties": {"n": {"const": i}}, "required": ["n"]}
        (reg / f"s{i:03d}.json").write_text(json.dumps(schema))
    return reg


def test_many_compiled_checkers_are_frozen(tmp_path: Path, _unfrozen: None) -> None:
    reg = _registry(tmp_path, FREEZE_AFTER + 8)
    resolver = SchemaResolver(None, reg, cache=False)
    gc.unfreeze()
    for i in range(FREEZE_AFTER - 1):
        resolver.get(f"s{i:03d}")
    assert gc.get_freeze_count() == 0  # a small registry: the collector as usual
    for i in range(FREEZE_AFTER - 1, FREEZE_AFTER + 8):
        checker = resolver.get(f"s{i:03d}")
        assert gc.get_freeze_count() > 0
        assert checker.check({"n": i}).category == "ok"
        assert checker.check({"n": -1}).category == "schema_violation:const"


def _audit_all(tmp_path: Path, reg: Path, n: int) -> None:
    from schemaops.audit import AuditOptions, run_audit

    log = tmp_path / "out.jsonl"
    log.write_text(
        "".join(
            json.dumps({"schema": f"s{i:03d}", "text": json.dumps({"n": i})}) + "\n"
            for i in range(n)
        )
    )
    result = run_audit(str(log), AuditOptions(registry=reg, cache=False)).to_json()
    assert result["ok"] == n


def test_run_audit_gives_the_collector_back(tmp_path: Path, _unfrozen: None) -> None:
    """A Python caller's collector is as it was once ``run_audit`` returns: the audit froze
    its checkers while it ran (a registry over ``FREEZE_AFTER``), and unfroze them at the end."""
    gc.unfreeze()
    n = FREEZE_AFTER + 8
    before = gc.get_threshold()
    _audit_all(tmp_path, _registry(tmp_path, n), n)
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before  # the loop's raised threshold is set back


def test_run_audit_leaves_a_callers_own_freeze_alone(tmp_path: Path, _unfrozen: None) -> None:
    """A process that froze its own objects before the audit keeps exactly that freeze: the
    audit neither adds to it nor undoes it."""
    gc.unfreeze()
    keep = [[i] for i in range(1000)]
    gc.freeze()
    before = gc.get_freeze_count()
    n = FREEZE_AFTER + 8
    _audit_all(tmp_path, _registry(tmp_path, n), n)
    assert gc.get_freeze_count() == before
    assert keep


def test_the_audit_loop_runs_with_a_raised_young_threshold(tmp_path: Path) -> None:
    """Inside ``collector_restored`` the young generation is collected every
    ``YOUNG_THRESHOLD`` allocations, not CPython's 700 (a caller's higher one is kept); an
    error inside hands the threshold back too."""
    before = gc.get_threshold()
    with collector_restored():
        assert gc.get_threshold()[0] == max(before[0], YOUNG_THRESHOLD)
    assert gc.get_threshold() == before
    try:
        with collector_restored():
            raise KeyError("x")
    except KeyError:
        pass
    assert gc.get_threshold() == before
