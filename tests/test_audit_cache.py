"""The audit's on-disk schema facts cache (issue 15): a warm start skips the checks of files
found clean before, and a changed schema, a changed version or a corrupt entry is never
trusted (the file is checked afresh and the entry rebuilt)."""

from __future__ import annotations

import io
import json
import multiprocessing as mp
import os
import time
from pathlib import Path

import pytest

from schemaops import cachekeys
from schemaops.audit.options import AuditOptions
from schemaops.audit.run.lines import audit_lines
from schemaops.audit.verdict import cache as cache_mod
from schemaops.audit.verdict.cache import SchemaFacts, default_cache_dir
from schemaops.audit.verdict.resolver import SchemaResolver


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
    resolver.flush_cache()  # what run_audit does when the run ends
    return [json.loads(x) for x in out.getvalue().splitlines()], resolver._registry.facts


def _entries(cache_dir: Path) -> dict[str, dict]:
    """The trusted facts entries of this version on disk (a fresh reader); index entries
    left out (whether a run writes them depends on the files' age: ``RACY_NS``)."""
    return {k: f for k, f in SchemaFacts(cache_dir).entries().items() if "scan" not in f}


def _packs(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.rglob("*" + cache_mod.PACK_SUFFIX))


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


@pytest.fixture
def fresh_fingerprints():
    """Fingerprints are computed once per process: a test that changes what they read starts
    and ends with the memo cleared."""
    versions = cachekeys.dist_version  # a test may patch it
    cachekeys.fingerprint.cache_clear()
    versions.cache_clear()
    yield
    cachekeys.fingerprint.cache_clear()
    versions.cache_clear()


#: a cold or warm audit of one registry in a child process, importing schemaops from the folder
#: on its PYTHONPATH (a copy of the package): (facts hits, index hits, categories, file)
_CHILD = """
import io, json, sys
import schemaops
from schemaops.audit.verdict import cache
cache.RACY_NS = 0  # the registry files were written just now
from schemaops.audit.run.lines import audit_lines
from schemaops.audit.options import AuditOptions
from schemaops.audit.verdict.resolver import SchemaResolver
reg, cdir = sys.argv[1], sys.argv[2]
lines = [json.dumps(x).encode() for x in json.loads(sys.argv[3])]
resolver = SchemaResolver(None, reg, cache_dir=cdir)
out = io.BytesIO()
audit_lines(lines, AuditOptions(registry=reg), resolver, 1, out)
resolver.flush_cache()
f = resolver._registry.facts
cats = [json.loads(x)["category"] for x in out.getvalue().splitlines()]
print(json.dumps([f.hits, f.scan_hits, cats, schemaops.__file__]))
"""


def test_an_edited_deriving_module_invalidates_the_cache(tmp_path: Path) -> None:
    """Issue 22 #3: a ``git pull`` that changes the metaschema check, the format rules, the
    checker hints or the index scan must not keep serving old facts (the key was
    ``schemaops.__version__``, "0.1.0" since the first commit). A copy of the package is
    edited module by module: each edit of a module that derives the facts makes the next
    run cold (facts and index entries); an edit elsewhere keeps it warm."""
    import shutil
    import subprocess
    import sys

    import schemaops

    copy = tmp_path / "src" / "schemaops"
    shutil.copytree(
        Path(schemaops.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    reg, cdir = _registry(tmp_path), tmp_path / "cache"
    lines = json.dumps([json.loads(x) for x in LINES])
    env = {**os.environ, "PYTHONPATH": str(copy.parent), "PYTHONDONTWRITEBYTECODE": "1"}

    def run() -> tuple[int, int, list[str]]:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(reg), str(cdir), lines],
            capture_output=True,
            env=env,
            cwd=tmp_path,  # not the checkout, whose package would come first
            timeout=120,
        )
        assert done.returncode == 0, done.stderr.decode()
        hits, scan_hits, cats, where = json.loads(done.stdout)
        assert Path(where).resolve().is_relative_to(copy)  # the copy, not the worktree
        assert cats == ["ok", "schema_violation:type", "ok", "schema_violation:maxLength"]
        return hits, scan_hits, cats

    assert run()[:2] == (0, 0)  # cold
    assert run()[:2] == (2, 2)  # warm
    with (copy / "warm" / "report.py").open("a") as fh:  # derives nothing in the cache
        fh.write("\n# an unrelated edit\n")
    assert run()[:2] == (2, 2)
    for module in (
        "formats.py",
        "registry/metars.py",
        "audit/verdict/schemakeys.py",
        "registry/lazy.py",
    ):
        with (copy / module).open("a") as fh:
            fh.write("\n# a changed rule\n")
        assert run()[:2] == (0, 0), module
        assert run()[:2] == (2, 2), module  # rebuilt under the new fingerprint


def test_a_library_version_change_invalidates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_fingerprints
) -> None:
    """An upgraded jsonschema (or a format package installed) gives new keys; an entry under
    the right key written by other versions is refused too."""
    reg, cdir = _registry(tmp_path), tmp_path / "cache"
    _audit(reg, cdir)
    _, facts = _audit(reg, cdir)
    assert facts.hits == 2
    real = cachekeys.dist_version
    monkeypatch.setattr(
        cachekeys, "dist_version", lambda d: "999.0" if d == "jsonschema" else real(d)
    )
    cachekeys.fingerprint.cache_clear()
    recs, facts = _audit(reg, cdir)
    assert facts.hits == 0 and facts.misses == 2
    assert len(_packs(cdir)) == 2 and len(_entries(cdir)) == 2  # new keys, own pack
    monkeypatch.setattr(
        cachekeys, "dist_version", lambda d: "?" if d == "webcolors" else real(d)
    )  # an optional format package uninstalled: its formats are no longer asserted
    cachekeys.fingerprint.cache_clear()
    _, facts = _audit(reg, cdir)
    assert facts.hits == 0
    old = SchemaFacts(cdir, versions="schemaops=0.0.1")
    key = SchemaFacts(cdir).key(b"{}", tmp_path / "x.json", True, 1.0)
    old.put(key, {"clean": True})
    old.flush()
    assert key in old.entries()
    new = SchemaFacts(cdir)
    assert new.get(key) is None and new.misses == 1


def test_the_fingerprint_covers_what_the_deriving_modules_import() -> None:
    """Every schemaops module imported by a module the audit fingerprint hashes is hashed
    too (a rule moved into a new helper module must not fall out of the key)."""
    import ast

    root = cachekeys.PACKAGE_ROOT
    files = {p for spec in cachekeys.AUDIT_SOURCES for p in cachekeys.source_files(spec, root)}
    for path in sorted(files):
        for node in ast.walk(ast.parse(path.read_bytes())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if not name.startswith("schemaops.") or name in ("schemaops.audit",):
                    continue  # the audit package's __init__ re-exports only
                rel = name.removeprefix("schemaops.").replace(".", "/")
                module = root / f"{rel}.py"
                if not module.is_file():
                    module = root / rel / "__init__.py"
                if module.is_file():
                    assert module in files, f"{path.name} imports {name}, not fingerprinted"


def test_the_fingerprint_is_computed_once_per_process(fresh_fingerprints) -> None:
    first = cachekeys.audit_fingerprint()
    assert cachekeys.fingerprint.cache_info().misses == 1
    for _ in range(3):
        SchemaFacts("/nonexistent")
    assert cachekeys.audit_fingerprint() == first
    assert cachekeys.fingerprint.cache_info().misses == 1


def _cli_audit(tmp_path: Path, reg: Path, cdir: Path, lines: list[bytes], *extra: str) -> dict:
    """``schemaops audit --json`` in a child process, bounded: a hang fails the test (the
    child is killed) instead of hanging the suite."""
    import subprocess
    import sys

    data = tmp_path / "in.jsonl"
    data.write_bytes(b"\n".join(lines) + b"\n")
    cmd = [sys.executable, "-m", "schemaops", "audit", str(data), "--registry", str(reg)]
    cmd += ["--cache-dir", str(cdir), "--json", "--records", str(tmp_path / "rec.jsonl"), *extra]
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail("the audit did not finish in 90 s")
    assert done.returncode in (0, 1), done.stderr.decode()
    recs = [json.loads(x) for x in (tmp_path / "rec.jsonl").read_bytes().splitlines()]
    return {"report": json.loads(done.stdout), "records": recs}


def test_a_fifo_in_the_cache_folder_does_not_hang_the_audit(tmp_path: Path) -> None:
    """Issue 22 #17: a FIFO named ``*.pack`` in the cache folder blocked ``open`` forever.
    Packs are opened without blocking and read only when ``fstat`` says a regular file."""
    reg, cdir = _registry(tmp_path), tmp_path / "cache"
    folder = SchemaFacts(cdir).dir
    folder.mkdir(parents=True, mode=0o700)
    os.mkfifo(folder / ("0" * 20 + "-1-fifo" + cache_mod.PACK_SUFFIX), 0o600)
    got = _cli_audit(tmp_path, reg, cdir, LINES)
    cats = [r["category"] for r in got["records"]]
    assert cats == ["ok", "schema_violation:type", "ok", "schema_violation:maxLength"]
    again = _cli_audit(tmp_path, reg, cdir, LINES)  # the FIFO is still there; packs read
    assert [r["category"] for r in again["records"]] == cats
    facts = SchemaFacts(cdir)
    clean = [f for f in facts.entries().values() if f.get("clean") is True]
    assert len(clean) == 2 and facts.rejected == 1  # the FIFO, refused


#: catastrophic backtracking: ``^(a+)+$`` on a run of ``a`` and a final ``!`` takes 2**n steps
HOSTILE = "a" * 40 + "!"


def test_an_edited_entry_cannot_switch_off_the_regex_watchdog(tmp_path: Path) -> None:
    """Issue 22 #17: the cached checker hint ``regex`` decides whether a schema's records run
    under the watchdog; an entry edited to say ``false`` let ``^(a+)+$`` run past
    ``--timeout 1`` for good. The decision is re-derived from the schema bytes: the hostile
    output is still cut off and counted as a timeout failure."""
    reg, cdir = _registry(tmp_path), tmp_path / "cache"
    (reg / "pat.json").write_text(json.dumps({"type": "string", "pattern": "^(a+)+$"}))
    benign = [json.dumps({"id": 1, "schema": "pat", "text": '"aaa"'}).encode()]
    assert _cli_audit(tmp_path, reg, cdir, benign)["records"][0]["category"] == "ok"
    edited = 0
    for pack in _packs(cdir):
        before = pack.read_bytes()
        _retext(pack, lambda x: x.replace(b'"regex":true', b'"regex":false'))
        edited += pack.read_bytes() != before
    assert edited  # the entry held the hint, now switched off
    hostile = [json.dumps({"id": 2, "schema": "pat", "text": json.dumps(HOSTILE)}).encode()]
    got = _cli_audit(tmp_path, reg, cdir, hostile, "--timeout", "1")
    rec = got["records"][0]
    assert rec["category"] == "schema_violation:pattern"
    assert "1s" in rec["message"] and "could not be verified" in rec["message"]


def _swap_keys(pack: Path, which) -> int:
    """Swap the keys of the first two entries ``which`` picks (by their facts): each entry now
    sits under the other file's key. Returns how many were swapped."""
    head, *rest = pack.read_bytes().split(b"\n")
    docs = [json.loads(x) for x in rest if x]
    picked = [d for d in docs if which(d["facts"])][:2]
    if len(picked) == 2:
        picked[0]["key"], picked[1]["key"] = picked[1]["key"], picked[0]["key"]
    pack.write_bytes(b"\n".join([head, *[json.dumps(d).encode() for d in docs]]) + b"\n")
    return len(picked) if len(picked) == 2 else 0


def test_swapped_entries_never_apply_one_files_facts_to_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22 #17: entries were checked for shape only, so two entries swapped between
    files (index entries naming each schema, facts with their checker hints) made records
    validate against the other file. Each entry now names what it describes (the schema
    bytes' sha256; the indexed path) and is refused under any other key."""
    monkeypatch.setattr(cache_mod, "RACY_NS", 0)
    reg, cdir = tmp_path / "reg", tmp_path / "cache"
    reg.mkdir()
    (reg / "a.json").write_text(
        json.dumps({"x-schemaops-name": "alpha", "type": "string", "pattern": "^x+$"})
    )
    (reg / "b.json").write_text(json.dumps({"x-schemaops-name": "beta", "type": "integer"}))
    lines = [
        json.dumps({"id": i, "schema": s, "text": t}).encode()
        for i, (s, t) in enumerate(
            [("alpha", '"xx"'), ("alpha", "5"), ("beta", "5"), ("beta", '"xx"')]
        )
    ]
    cold, _ = _audit(reg, cdir, lines)
    cats = [r["category"] for r in cold]
    assert cats == ["ok", "schema_violation:type", "ok", "schema_violation:type"]
    swapped = 0
    for pack in _packs(cdir):
        swapped += _swap_keys(pack, lambda f: "scan" in f)
        swapped += _swap_keys(pack, lambda f: f.get("clean") is True)
    assert swapped == 4
    warm, facts = _audit(reg, cdir, lines)
    assert [r["category"] for r in warm] == cats
    assert [r.get("pointer") for r in warm] == [r.get("pointer") for r in cold]
    assert facts.hits == 0 and facts.scan_hits == 0 and facts.rejected >= 4
    resolver = SchemaResolver(None, reg, cache_dir=cdir)
    assert resolver.get("alpha").guarded  # its own hint again: a pattern, watched
    _, facts = _audit(reg, cdir, lines)
    assert facts.hits == 2 and facts.scan_hits == 2  # re-derived and kept


def _retext(p: Path, edit) -> None:
    head, *rest = p.read_bytes().split(b"\n")
    p.write_bytes(b"\n".join([head, *[edit(x) if x else x for x in rest]]))


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(p.read_bytes()[: p.read_bytes().index(b"\n") + 20]),  # cut short
        lambda p: p.write_bytes(b"\xff\xfe garbage"),  # not JSON
        lambda p: p.write_bytes(
            p.read_bytes().replace(b'"format":%d' % cache_mod.FORMAT, b'"format":1', 1)
        ),
        lambda p: _retext(p, lambda x: b'["clean"]'),  # entries of the wrong shape
        lambda p: _retext(p, lambda x: x.replace(b'"clean":true', b'"clean":1')),
        lambda p: _retext(p, lambda x: x.replace(b'"key":"', b'"key":"00', 1)),  # bad key
        lambda p: os.chmod(p, 0o666),  # writable by others: not trusted
    ],
    ids=[
        "truncated",
        "binary",
        "other-format",
        "wrong-shape",
        "not-clean",
        "wrong-key",
        "world-writable",
    ],
)
def test_a_corrupt_entry_is_rebuilt_never_trusted(tmp_path: Path, damage) -> None:
    reg, cdir = _registry(tmp_path), tmp_path / "cache"
    _audit(reg, cdir)
    # every pack is damaged: both files must be checked afresh and their entries rebuilt
    for pack in _packs(cdir):
        damage(pack)
    recs, facts = _audit(reg, cdir)
    assert facts.hits == 0 and facts.rejected >= 1
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
    assert len(_entries(tmp_path / "xdg" / "schemaops" / "audit")) == 2
    other = tmp_path / "elsewhere"
    run_audit(str(data), AuditOptions(registry=str(reg), cache_dir=str(other), jobs=2))
    assert len(_entries(other)) == 2


def test_an_unwritable_cache_never_fails_the_audit(tmp_path: Path) -> None:
    reg = _registry(tmp_path)
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    recs, facts = _audit(reg, blocker / "cache")
    assert len(recs) == 4 and facts.write_errors == 1  # the run's one pack


def _hammer(args: tuple) -> int:
    """Write ``n`` packs of a few new entries each (folding as they pile up), reading the
    folder between writes: every entry read must be whole (as its writer put it)."""
    root, who, n = args
    torn = 0
    for i in range(n):
        facts = SchemaFacts(root)
        for j in range(3):
            facts.put(f"{who:02d}{i:04d}{j:02d}".ljust(64, "f"), {"clean": True, "i": i})
        facts.flush()
        torn += facts.write_errors
        for key, got in SchemaFacts(root).entries().items():
            torn += got != {"clean": True, "i": int(key[2:6])}
    return torn


def test_concurrent_writers_never_lose_or_tear_an_entry(tmp_path: Path) -> None:
    """Four processes write packs into one folder at once, folding each other's packs: no
    entry is torn or lost, no temporary file is left, and the folder stays folded.

    Spawned, not forked: under pytest-xdist this process has threads (execnet's receiver), and
    a child forked while one of them held a lock hung this test for pytest-timeout's 900 s in
    a CI run (2026-12-05), the cache code never reached. The writers get 300 s in all."""
    ctx = mp.get_context("spawn")
    with ctx.Pool(4) as pool:
        jobs = pool.map_async(_hammer, [(tmp_path, who, 40) for who in range(4)])
        torn = jobs.get(timeout=300)
    assert torn == [0, 0, 0, 0]
    facts = SchemaFacts(tmp_path)
    want = {
        f"{w:02d}{i:04d}{j:02d}".ljust(64, "f")
        for w in range(4)
        for i in range(40)
        for j in range(3)
    }
    assert set(facts.entries()) == want and facts.rejected == 0  # none lost
    left = list(facts.dir.iterdir())
    assert all(p.suffix == cache_mod.PACK_SUFFIX for p in left)  # no temporary files
    assert len(left) <= cache_mod.MAX_PACKS + 4  # folds kept up (one per writer in flight)


def test_a_fold_keeps_the_entries_and_drops_damaged_packs(tmp_path: Path) -> None:
    facts = SchemaFacts(tmp_path)
    facts.dir.mkdir(mode=0o700)
    (facts.dir / ("0" * 20 + "-damaged" + cache_mod.PACK_SUFFIX)).write_bytes(b"\x00\x01")
    keys = [f"{i:064x}" for i in range(cache_mod.MAX_PACKS + 2)]
    for k in keys:
        w = SchemaFacts(tmp_path)
        w.put(k, {"clean": True})
        w.flush()
    assert len(_packs(tmp_path)) <= 3  # folded once the count passed MAX_PACKS, then 2 more
    assert not (facts.dir / ("0" * 20 + "-damaged" + cache_mod.PACK_SUFFIX)).exists()
    assert set(SchemaFacts(tmp_path).entries()) == set(keys)


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
    assert len(_entries(tmp_path / "on")) == 2 and len(_packs(tmp_path / "on")) == 1
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


def _index(reg: Path, cdir: Path) -> tuple[dict, SchemaFacts]:
    """(name -> (file, library, root id uri), the facts) of a fresh index over ``reg``."""
    from schemaops.registry.lazy import LazyRegistry

    lazy = LazyRegistry(reg, facts=SchemaFacts(cdir))
    got = {n: (f.path.name, f.library, f.id_uri) for n, f in lazy._index().items()}
    got["<by uri>"] = sorted(lazy._by_uri)
    lazy.facts.flush()
    return got, lazy.facts


def _marked_registry(root: Path) -> Path:
    reg = _registry(root)
    (reg / "renamed.json").write_text(json.dumps({"x-schemaops-name": "other", "type": "string"}))
    (reg / "lib.json").write_text(json.dumps({"x-schemaops-library": True, "$defs": {}}))
    (reg / "withid.json").write_text(json.dumps({"$id": "https://example.com/w", "type": "null"}))
    return reg


def test_the_index_read_from_the_cache_equals_a_fresh_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files unchanged since the last index are not read again, and give the same index:
    names (an ``x-schemaops-name`` override), library flags and root ``$id``s."""
    monkeypatch.setattr(cache_mod, "RACY_NS", 0)  # files written just now count as settled
    reg, cdir = _marked_registry(tmp_path), tmp_path / "cache"
    cold, facts = _index(reg, cdir)
    assert facts.scan_hits == 0 and facts.scan_misses == 5
    assert cold["other"] == ("renamed.json", False, None)
    assert cold["withid"][2] == "https://example.com/w"
    warm, facts = _index(reg, cdir)
    assert facts.scan_hits == 5 and warm == cold


def test_a_file_changed_after_indexing_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any write changes the stat fields the entry is keyed by (ctime at least): a new name
    override, a dropped library flag and a new ``$id`` are all seen."""
    monkeypatch.setattr(cache_mod, "RACY_NS", 0)
    reg, cdir = _marked_registry(tmp_path), tmp_path / "cache"
    _index(reg, cdir)
    st = os.stat(reg / "renamed.json")
    (reg / "renamed.json").write_text(json.dumps({"x-schemaops-name": "third", "type": "string"}))
    os.utime(reg / "renamed.json", ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime put back
    (reg / "lib.json").write_text(json.dumps({"$defs": {}}))
    (reg / "withid.json").write_text(json.dumps({"$id": "https://example.com/v", "type": "null"}))
    got, facts = _index(reg, cdir)
    assert facts.scan_hits == 2 and facts.scan_misses == 3  # order and note only
    assert "third" in got and "other" not in got
    assert got["lib"] == ("lib.json", False, None)
    assert got["withid"][2] == "https://example.com/v"


def test_a_file_written_just_before_its_scan_is_not_remembered(tmp_path: Path) -> None:
    """Git's racily-clean rule: a second write in the same clock tick could leave every stat
    field equal, so a file changed within ``RACY_NS`` of the scan is read again next time."""
    reg, cdir = _marked_registry(tmp_path), tmp_path / "cache"
    _, facts = _index(reg, cdir)
    assert facts.scan_misses == 5
    _, facts = _index(reg, cdir)
    assert facts.scan_hits == 0 and facts.scan_misses == 5
    old = time.time() - 60  # files last written a minute ago are remembered
    for f in reg.iterdir():
        os.utime(f, (old, old))
    # ctime moved with utime, to now: still racy; a scan at least RACY_NS later remembers it
    now = time.time_ns() + cache_mod.RACY_NS + 1
    from schemaops.registry.lazy import LazyRegistry

    lazy = LazyRegistry(reg, facts=SchemaFacts(cdir))
    for f in sorted(reg.iterdir()):
        lazy._scan(f, reg.resolve(), reg.resolve().as_uri(), now)
    lazy.facts.flush()
    _, facts = _index(reg, cdir)
    assert facts.scan_hits == 5


def test_a_damaged_index_entry_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_mod, "RACY_NS", 0)
    reg, cdir = _marked_registry(tmp_path), tmp_path / "cache"
    cold, _ = _index(reg, cdir)
    for pack in _packs(cdir):  # a library flag that is not a boolean: the entry is refused
        _retext(pack, lambda x: x.replace(b'"scan":[null,false,null]', b'"scan":[null,"x",null]'))
    warm, facts = _index(reg, cdir)
    assert facts.rejected >= 1 and facts.scan_misses >= 1 and warm == cold


def test_past_the_entry_cap_a_fold_keeps_what_the_run_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every run reads every entry: past ``MAX_ENTRIES`` the next writer folds the packs and
    keeps only the entries its own run looked up or wrote (the rest are rebuilt if needed)."""
    monkeypatch.setattr(cache_mod, "MAX_ENTRIES", 50)
    old = SchemaFacts(tmp_path)
    for i in range(60):
        old.put(f"{i:064x}", {"clean": True})
    old.flush()
    run = SchemaFacts(tmp_path)
    used = [f"{i:064x}" for i in range(5)]
    assert all(run.get(k) is not None for k in used)
    run.put("f" * 64, {"clean": True})
    run.flush()
    assert set(SchemaFacts(tmp_path).entries()) == {*used, "f" * 64}
    assert len(_packs(tmp_path)) == 1


def test_a_fold_past_the_cap_keeps_the_packs_of_the_runs_other_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A --jobs worker that folds past the cap keeps, besides its own entries, every pack
    written since the run began (the parent's index entries, the other workers' facts)."""
    monkeypatch.setattr(cache_mod, "MAX_ENTRIES", 50)
    old = SchemaFacts(tmp_path)
    for i in range(60):
        old.put(f"{i:064x}", {"clean": True})
    old.flush()
    worker = SchemaFacts(tmp_path)  # opened at the run's start (forked workers share it)
    sibling = SchemaFacts(tmp_path)
    sibling.put("e" * 64, {"clean": True})
    sibling.flush()  # another worker of the same run finishes first
    assert worker.get(f"{1:064x}") is not None
    worker.put("f" * 64, {"clean": True})
    worker.flush()
    assert set(SchemaFacts(tmp_path).entries()) == {f"{1:064x}", "e" * 64, "f" * 64}


def test_checker_hints_are_cached_with_the_facts_and_a_damaged_one_is_recomputed(
    tmp_path: Path,
) -> None:
    """What a schema's keys decide about its checker (``schema_hints``: ids, closure tree,
    regex watchdog) is kept in the clean file's entry; a warm run uses it as it is, and a
    hint of the wrong shape is computed afresh, with the same records either way."""
    from schemaops.audit.verdict.schemakeys import schema_hints, well_formed

    reg, cdir = _registry(tmp_path), tmp_path / "cache"
    (reg / "pat.json").write_text(json.dumps({"type": "string", "pattern": "^a+$"}))
    lines = [*LINES, json.dumps({"id": 9, "schema": "pat", "text": '"b"'}).encode()]
    cold, _ = _audit(reg, cdir, lines)
    hints = {k: e["checker"] for k, e in _entries(cdir).items() if "checker" in e}
    assert len(hints) == 3 and all(well_formed(h) for h in hints.values())
    assert sorted(h["regex"] for h in hints.values()) == [False, False, True]
    resolver = SchemaResolver(None, reg, cache_dir=cdir)
    for name in ("order", "note", "pat"):
        checker = resolver.get(name)
        schema = json.loads((reg / f"{name}.json").read_text())
        assert checker.hints == schema_hints(schema, checker.label)
    warm, facts = _audit(reg, cdir, lines)
    assert warm == cold and facts.hits == 3
    for pack in _packs(cdir):  # damage every cached hint: a string where a bool belongs
        _retext(pack, lambda x: x.replace(b'"regex":true', b'"regex":"yes"'))
    again, _ = _audit(reg, cdir, lines)
    assert again == cold
    assert [r["category"] for r in again][-1] == "schema_violation:pattern"
    assert all(well_formed(e["checker"]) for e in _entries(cdir).values() if "checker" in e)


def test_registry_files_past_the_size_bound_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from schemaops.registry import jsontext

    monkeypatch.setattr(jsontext, "MAX_FILE_BYTES", 100)
    small, big = tmp_path / "a.json", tmp_path / "b.json"
    small.write_bytes(b"1" * 100)
    big.write_bytes(b"1" * 101)
    assert jsontext.read_bytes(small) == b"1" * 100
    with pytest.raises(OSError, match="larger than"):
        jsontext.read_bytes(big)


def test_the_facts_cache_is_the_store_the_registry_asks_for(tmp_path: Path) -> None:
    """``registry/lazy.py`` depends only on ``registry.facts.FactsStore``; the audit's cache is
    its implementation: every method is there with the protocol's parameters."""
    import inspect

    from schemaops.audit.verdict.cache import SchemaFacts
    from schemaops.registry.facts import FactsStore

    store = SchemaFacts(tmp_path)
    assert isinstance(store, FactsStore)
    for name in ("key", "get", "put", "scan_key", "scan_get", "scan_put"):
        want = list(inspect.signature(getattr(FactsStore, name)).parameters)
        got = list(inspect.signature(getattr(SchemaFacts, name)).parameters)
        assert got == want, name


def test_the_jsonschema_rs_scan_is_cached_with_the_facts_and_a_damaged_one_is_rescanned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``compile_rs`` reads from a schema before compiling it (``scan_facts``: which
    patterns jsonschema-rs may run, the ASCII gate, the formats named) is kept in the clean
    file's entry; a warm run compiles from it, and an entry of the wrong shape is scanned
    afresh, with the same records either way. The ASCII-gated schema (``\\W``) is the one
    whose verdicts the scan changes."""
    from schemaops.audit.verdict import rscheck
    from schemaops.audit.verdict.rsscan import scan_facts, scan_facts_ok

    reg, cdir = _registry(tmp_path), tmp_path / "cache"
    (reg / "pat.json").write_text(json.dumps({"type": "string", "pattern": "^\\W$"}))
    (reg / "when.json").write_text(json.dumps({"type": "string", "format": "date-time"}))
    lines = [*LINES]
    for i, (name, text) in enumerate(
        [("pat", '"!"'), ("pat", '"a"'), ("pat", '"\\u00e9"'), ("when", '"2024-02-30T00:00:00Z"')]
    ):
        lines.append(json.dumps({"id": 20 + i, "schema": name, "text": text}).encode())
    cold, _ = _audit(reg, cdir, lines)
    scans = {k: e["rs"] for k, e in _entries(cdir).items() if "rs" in e}
    assert len(scans) == 4 and all(scan_facts_ok(s) for s in scans.values())
    resolver = SchemaResolver(None, reg, cache_dir=cdir)
    for name in ("order", "note", "pat", "when"):
        checker = resolver.get(name)
        assert checker.scanned == scan_facts(json.loads((reg / f"{name}.json").read_text()))
    assert resolver.get("pat").scanned["ascii_only"] is True
    assert resolver.get("when").scanned["formats"] == ["date-time"]
    with monkeypatch.context() as m:  # the warm run compiles from the cache: no scan
        m.setattr(rscheck, "scan_facts", lambda schema: pytest.fail(f"scanned {schema}"))
        warm, facts = _audit(reg, cdir, lines)
    assert warm == cold and facts.hits == 4
    for pack in _packs(cdir):  # damage every cached scan: a string where a bool belongs
        _retext(pack, lambda x: x.replace(b'"ascii_only":true', b'"ascii_only":"yes"'))
    again, _ = _audit(reg, cdir, lines)
    assert again == cold
    assert [r["category"] for r in again][-4:] == [
        "ok",
        "schema_violation:pattern",
        "schema_violation:pattern",
        "schema_violation:format",
    ]
    assert all(scan_facts_ok(e["rs"]) for e in _entries(cdir).values() if "rs" in e)
