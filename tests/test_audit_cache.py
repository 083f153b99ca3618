"""The audit's on-disk schema facts cache (issue 15): a warm start skips the checks of files
found clean before, and a changed schema, a changed version or a corrupt entry is never
trusted (the file is checked afresh and the entry rebuilt)."""

from __future__ import annotations

import io
import json
import multiprocessing as mp
import os
from pathlib import Path

import pytest

from schemaops.audit import cache as cache_mod
from schemaops.audit.cache import SchemaFacts, default_cache_dir
from schemaops.audit.lines import audit_lines
from schemaops.audit.options import AuditOptions
from schemaops.audit.resolver import SchemaResolver


def _registry(root: Path) -> Path:
    reg = root / "reg"
    reg.mkdir()
    (reg / "order.json").write_text(
        json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    )
    (reg / "note.json").write_text(json.dumps({"type": "string", "maxLength": 3}))
    return reg


LINES = [
    json.dumps({"id": i, "schema": s, "text": t}).encode()
    for i, (s, t) in enumerate(
        [("order", '{"n": 1}'), ("order", '{"n": "x"}'), ("note", '"abc"'), ("note", '"abcd"')]
    )
]


def _audit(
    reg: Path, cache_dir: Path, lines: list[bytes] = LINES
) -> tuple[list[dict], SchemaFacts]:
    resolver = SchemaResolver(None, reg, cache_dir=cache_dir)
    out = io.BytesIO()
    audit_lines(lines, AuditOptions(registry=str(reg)), resolver, 1, out)
    return [json.loads(x) for x in out.getvalue().splitlines()], resolver._registry.facts


def _entries(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.rglob("*.json"))


def test_cold_then_warm_gives_the_same_records(tmp_path: Path) -> None:
    reg, cdir = _registry(tmp_path), tmp_path / "cache"
    cold, facts = _audit(reg, cdir)
    assert facts.hits == 0 and len(_entries(cdir)) == 2
    warm, facts = _audit(reg, cdir)
    assert facts.hits == 2 and facts.rejected == 0
    assert warm == cold
    assert [r["category"] for r in warm] == [
        "ok",
        "schema_violation:type",
        "ok",
        "schema_violation:maxLength",
    ]


def test_a_warm_start_reads_a_bound_beyond_64_bits_as_an_integer(tmp_path: Path) -> None:
    """A warm start parses the cached-clean file with orjson, which reads an integer beyond
    64 bits as a float: 2**70 + 1 would become 2**70 and 2**70 + 1 would fail ``maximum``."""
    reg, cdir = tmp_path / "reg", tmp_path / "cache"
    reg.mkdir()
    big = 2**70 + 1
    (reg / "big.json").write_text(f'{{"type": "integer", "maximum": {big}}}', encoding="utf-8")
    lines = [json.dumps({"id": 1, "schema": "big", "text": str(big)}).encode()]
    cold, facts = _audit(reg, cdir, lines)
    warm, facts = _audit(reg, cdir, lines)
    assert facts.hits == 1
    assert [r["category"] for r in cold] == [r["category"] for r in warm] == ["ok"]


def test_a_changed_schema_is_checked_afresh(tmp_path: Path) -> None:
    reg, cdir = _registry(tmp_path), tmp_path / "cache"
    _audit(reg, cdir)
    (reg / "note.json").write_text(json.dumps({"type": "string", "maxLength": "3"}))  # invalid
    recs, facts = _audit(reg, cdir)
    assert facts.hits == 1  # order only
    note = [r for r in recs if r["line"] in (3, 4)]
    assert all(r["category"] == "input_error" for r in note)
    assert "'note' has registry problems" in note[0]["message"]
    assert len(_entries(cdir)) == 2  # no entry for a file with problems


def test_a_changed_sidecar_is_checked_afresh(tmp_path: Path) -> None:
    reg, cdir = _registry(tmp_path), tmp_path / "cache"
    (reg / "note.examples.json").write_text(json.dumps({"valid": ["ab"]}))
    _audit(reg, cdir)
    (reg / "note.examples.json").write_text(json.dumps({"valid": ["abcdef"]}))  # now fails
    recs, facts = _audit(reg, cdir)
    assert facts.hits == 1
    # a failing sidecar example is reported by `registry validate`, it does not refuse the
    # schema; but the file is no longer known clean, so it is checked (and not cached)
    assert [r["category"] for r in recs][2:] == ["ok", "schema_violation:maxLength"]
    assert len(_entries(cdir)) == 2


def test_a_version_change_invalidates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reg, cdir = _registry(tmp_path), tmp_path / "cache"
    _audit(reg, cdir)
    import schemaops

    monkeypatch.setattr(schemaops, "__version__", "999.0.0")
    recs, facts = _audit(reg, cdir)
    assert facts.hits == 0 and len(_entries(cdir)) == 4  # new keys beside the old ones
    # an entry under the right key but written by another version is refused too
    old = SchemaFacts(cdir, versions="schemaops=0.0.1")
    new = SchemaFacts(cdir)
    key = new.key(b"{}", tmp_path / "x.json", True, 1.0)
    old.put(key, {"clean": True})
    assert new.get(key) is None and new.rejected == 1


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(p.read_bytes()[:10]),  # truncated
        lambda p: p.write_bytes(b"\xff\xfe garbage"),  # not JSON
        lambda p: p.write_text(json.dumps({"key": "other", "facts": {"clean": True}})),
        lambda p: p.write_text(json.dumps(["clean"])),
        lambda p: os.chmod(p, 0o666),  # writable by others: not trusted
    ],
    ids=["truncated", "binary", "wrong-key", "wrong-shape", "world-writable"],
)
def test_a_corrupt_entry_is_rebuilt_never_trusted(tmp_path: Path, damage) -> None:
    reg, cdir = _registry(tmp_path), tmp_path / "cache"
    _audit(reg, cdir)
    # every entry is damaged: both files must be checked afresh and their entries rebuilt
    for entry in _entries(cdir):
        damage(entry)
    recs, facts = _audit(reg, cdir)
    assert facts.hits == 0 and facts.rejected == 2
    assert [r["category"] for r in recs] == [
        "ok",
        "schema_violation:type",
        "ok",
        "schema_violation:maxLength",
    ]
    _, facts = _audit(reg, cdir)
    assert facts.hits == 2  # rebuilt


def test_no_cache_and_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "schemaops" / "audit"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the spec: absolute paths only
    assert default_cache_dir() == Path.home() / ".cache" / "schemaops" / "audit"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    from schemaops.audit import run_audit

    reg = _registry(tmp_path)
    data = tmp_path / "in.jsonl"
    data.write_bytes(b"\n".join(LINES) + b"\n")
    run_audit(str(data), AuditOptions(registry=str(reg), cache=False))
    assert not (tmp_path / "xdg").exists()
    run_audit(str(data), AuditOptions(registry=str(reg)))
    assert len(_entries(tmp_path / "xdg")) == 2
    other = tmp_path / "elsewhere"
    run_audit(str(data), AuditOptions(registry=str(reg), cache_dir=str(other), jobs=2))
    assert len(_entries(other)) == 2


def test_an_unwritable_cache_never_fails_the_audit(tmp_path: Path) -> None:
    reg = _registry(tmp_path)
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    recs, facts = _audit(reg, blocker / "cache")
    assert len(recs) == 4 and facts.write_errors == 2


def _hammer(args: tuple) -> int:
    root, key, n = args
    facts = SchemaFacts(root)
    bad = 0
    for i in range(n):
        facts.put(key, {"clean": True, "i": i})
        if facts.get(key) is None:
            bad += 1
    return bad + facts.rejected


def test_concurrent_writers_never_leave_a_partial_entry(tmp_path: Path) -> None:
    """Four processes write and read the same entry: every read sees a whole entry."""
    key = "ab" + "0" * 62
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    with ctx.Pool(4) as pool:
        bad = pool.map(_hammer, [(tmp_path, key, 150)] * 4)
    assert bad == [0, 0, 0, 0]
    assert [p.name for p in (tmp_path / "ab").iterdir()] == [f"{key}.json"]  # no temp files


def test_versions_name_the_libraries_that_decide_a_verdict() -> None:
    v = cache_mod._versions()
    assert "schemaops=" in v and "jsonschema=" in v and "referencing=" in v


def test_cli_cache_dir_and_no_cache(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from schemaops.cli import app

    reg = _registry(tmp_path)
    data = tmp_path / "in.jsonl"
    data.write_bytes(b"\n".join(LINES) + b"\n")
    base = ["audit", str(data), "--registry", str(reg), "--json"]
    off = CliRunner().invoke(app, [*base, "--no-cache", "--cache-dir", str(tmp_path / "off")])
    assert off.exit_code == 0, off.output
    assert not (tmp_path / "off").exists()
    on = CliRunner().invoke(app, [*base, "--cache-dir", str(tmp_path / "on")])
    assert on.exit_code == 0, on.output
    assert len(_entries(tmp_path / "on")) == 2
    assert json.loads(on.stdout)["categories"] == json.loads(off.stdout)["categories"]


def test_long_digit_scan_equals_the_regex_it_replaced() -> None:
    """``_long_digits`` (translate + ``in``) answers what ``re`` with ``[0-9]{19}`` did."""
    import random
    import re

    from schemaops.registry.lazy import _long_digits

    rng = random.Random(7)
    cases = [b"", b"1" * 18, b"1" * 19, b"-" + b"9" * 19, b"1" * 18 + b".1", b"0" * 19]
    for _ in range(2000):
        cases.append(bytes(rng.choice(b'0123456789.,-e"a ') for _ in range(rng.randint(0, 60))))
        cases.append(b"x" * rng.randint(0, 5) + b"7" * rng.randint(15, 22) + b"]")
    regex = re.compile(rb"[0-9]{19}")
    assert all(_long_digits(c) == (regex.search(c) is not None) for c in cases)
    assert sum(_long_digits(c) for c in cases) > 100  # both answers occur
