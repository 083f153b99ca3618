"""Lazy registry loading in the audit (issue 15): only the schemas records name are read and
checked, and no verdict changes.

The differential tests audit the same lines with the lazy resolver and with the eager one
(the whole registry inspected first, as before) and compare every ``--records`` row.
"""

from __future__ import annotations

import importlib.util
import io
import json
import random
import shutil
from pathlib import Path

import pytest
from corpus_paths import JSB

from schemaops.audit.options import AuditOptions
from schemaops.audit.run.lines import audit_lines
from schemaops.audit.verdict.resolver import SchemaResolver
from schemaops.registry.lazy import LazyRegistry

REPO = Path(__file__).resolve().parents[1]


def _bench():
    """The workload builder of ``bench/audit_many_schemas.py`` (one generator for both)."""
    spec = importlib.util.spec_from_file_location(
        "audit_many_schemas", REPO / "bench" / "audit_many_schemas.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _records(
    lines: list[bytes], registry: Path, lazy: bool, cache_dir: Path | None = None
) -> tuple[list[dict], SchemaResolver]:
    """Records of auditing ``lines``; the facts cache is on only with ``cache_dir``."""
    opts = AuditOptions(registry=str(registry))
    resolver = SchemaResolver(None, registry, lazy=lazy, cache_dir=cache_dir, cache=bool(cache_dir))
    out = io.BytesIO()
    audit_lines(lines, opts, resolver, 1, out)
    resolver.flush_cache()  # what run_audit does when the run ends
    return [json.loads(x) for x in out.getvalue().splitlines()], resolver


def _line(i: int, schema: str, text: str) -> bytes:
    return json.dumps({"id": f"r{i}", "schema": schema, "text": text}).encode()


def _write(reg: Path, name: str, schema: object) -> None:
    (reg / f"{name}.json").write_text(json.dumps(schema), encoding="utf-8")


@pytest.mark.corpus("jsonschemabench")
def test_lazy_equals_eager_on_a_jsonschemabench_sample(tmp_path: Path) -> None:
    """120 corpus schemas (clean ones and ones the loader refuses), generated valid and
    mutated invalid outputs, plus unknown names: identical records lazily and eagerly."""
    if not JSB.is_dir():
        pytest.fail(f"corpus not found: {JSB}")
    bench = _bench()
    rows = []
    for f in sorted(JSB.glob("*.jsonl")):
        with f.open(encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                rows.append((f.stem, d["unique_id"], d["json_schema"]))
    rng = random.Random(1515)
    reg = tmp_path / "reg"
    reg.mkdir()
    names = []
    for subset, uid, text in rng.sample(rows, 120):
        name = bench._name(subset, uid)
        (reg / f"{name}.json").write_text(text, encoding="utf-8")
        names.append(name)
    import jsonschema

    lines = []
    for name in names:
        try:
            schema = json.loads((reg / f"{name}.json").read_text(encoding="utf-8"))
            v = jsonschema.validators.validator_for(schema)(schema)
            valid = bench.valid_instances(schema, v, 2)
            texts = [json.dumps(x) for x in valid] + bench.invalid_texts(schema, v, valid, rng)
        except Exception:  # a schema jsonschema cannot even build: records still name it
            texts = ["{}", "[1", '"x"']
        lines += [_line(len(lines), name, t) for t in texts]
    lines += [_line(len(lines), "no_such_schema", "{}"), _line(len(lines) + 1, names[0], "{")]
    rng.shuffle(lines)
    lazy, resolver = _records(lines, reg, lazy=True)
    eager, _ = _records(lines, reg, lazy=False)
    assert lazy == eager
    cold, _ = _records(lines, reg, lazy=True, cache_dir=tmp_path / "cache")
    warm, warm_resolver = _records(lines, reg, lazy=True, cache_dir=tmp_path / "cache")
    assert warm_resolver._registry.facts.hits > 50  # the warm run skipped their checks
    assert cold == warm == eager
    cats = {r["category"].split(":")[0] for r in lazy}
    assert {"ok", "schema_violation", "input_error"} <= cats  # the sample covers each
    assert len(resolver._registry._loaded) == len(set(names))


def _small_registry(reg: Path) -> None:
    reg.mkdir()
    _write(
        reg,
        "common",
        {"x-schemaops-library": True, "$defs": {"money": {"type": "number", "minimum": 0}}},
    )
    _write(
        reg,
        "order",
        {
            "type": "object",
            "properties": {"total": {"$ref": "common.json#/$defs/money"}},
            "required": ["total"],
        },
    )
    _write(reg, "renamed_file", {"x-schemaops-name": "refund", "type": "object"})
    _write(reg, "a_first", {"$id": "https://example.com/same.json", "type": "string"})
    _write(reg, "b_second", {"$id": "https://example.com/same.json", "type": "integer"})
    _write(reg, "bad_meta", {"type": 12})
    _write(reg, "remote", {"$ref": "https://example.com/elsewhere.json"})
    _write(
        reg,
        "cycle",
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    )
    _write(reg, "plain", {"type": "object", "properties": {"n": {"type": "integer"}}})


def test_lazy_equals_eager_on_cross_file_refs_names_ids_and_problems(tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    _small_registry(reg)
    texts = ['{"total": 5}', '{"total": -1}', "{}", '"s"', "3", '{"n": 1}', '{"n": "x"}']
    names = [
        "order",
        "refund",
        "renamed_file",
        "a_first",
        "b_second",
        "bad_meta",
        "remote",
        "cycle",
        "plain",
        "common",
        "nope",
    ]
    lines = [_line(i, n, t) for i, (n, t) in enumerate((n, t) for n in names for t in texts)]
    lazy, _ = _records(lines, reg, lazy=True)
    eager, _ = _records(lines, reg, lazy=False)
    assert lazy == eager
    by = {(r["schema"] if "schema" in r else None, r["line"]): r for r in lazy}
    assert any(r["category"] == "schema_violation:minimum" for r in by.values())  # via common
    errors = [r["message"] for r in lazy if r["category"] == "input_error"]
    assert any("'b_second' has registry problems" in m and "$id" in m for m in errors)
    assert any("'bad_meta' has registry problems" in m for m in errors)
    assert any("'remote' has registry problems" in m and "remote" in m for m in errors)
    assert any("'cycle' has registry problems" in m for m in errors)
    assert any("unknown schema 'common'" in m for m in errors)  # a library is not servable
    assert any("unknown schema 'renamed_file'" in m for m in errors)  # its name is 'refund'


def test_a_problem_schema_fails_only_its_records_and_nothing_else_is_read(tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    _small_registry(reg)
    (reg / "broken.json").write_text("{not json", encoding="utf-8")
    (reg / "unknown_draft.json").write_text('{"$schema": "urn:nope"}', encoding="utf-8")
    # a sidecar whose example fails: inspected eagerly it is a problem; never read here
    (reg / "plain.examples.json").write_text('{"valid": [{"n": "x"}]}', encoding="utf-8")
    lines = [
        _line(1, "plain", '{"n": 1}'),
        _line(2, "bad_meta", "{}"),
        _line(3, "plain", '{"n": 2}'),
        _line(4, "broken", "{}"),
        _line(5, "unknown_draft", "{}"),
    ]
    recs, resolver = _records(lines, reg, lazy=True)
    assert [r["category"] for r in recs] == [
        "ok",
        "input_error",
        "ok",
        "input_error",
        "input_error",
    ]
    assert "schema 'bad_meta' has registry problems" in recs[1]["message"]
    assert "12 is not valid" in recs[1]["message"] or "type" in recs[1]["message"]
    assert "has registry problems" in recs[3]["message"] and "not JSON" in recs[3]["message"]
    assert "unknown draft" in recs[4]["message"]
    assert set(resolver._registry._loaded) == {"plain", "bad_meta", "broken", "unknown_draft"}


def test_unknown_name_message_is_bounded(tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    reg.mkdir()
    for i in range(300):
        _write(reg, f"s{i:03d}", {"type": "integer"})
    recs, _ = _records([_line(1, "nope", "1")], reg, lazy=True)
    msg = recs[0]["message"]
    assert msg.startswith("unknown schema 'nope'") and msg.endswith("and 280 more")
    assert len(LazyRegistry(reg)) == 300


def test_run_audit_with_a_fixed_registry_schema_is_lazy(tmp_path: Path) -> None:
    """``--schema NAME`` reads that one schema, not the registry's broken neighbours."""
    from schemaops.audit import run_audit

    reg = tmp_path / "reg"
    _small_registry(reg)
    data = tmp_path / "in.jsonl"
    data.write_bytes(b'{"text": "{\\"n\\": 1}"}\n')
    result = run_audit(str(data), AuditOptions(schema="plain", registry=str(reg), cache=False))
    assert result.tally.ok == 1


@pytest.mark.slow  # builds the workload (~9,500 schemas) and audits it three times: ~1 min
@pytest.mark.corpus("jsonschemabench")
def test_lazy_equals_eager_on_the_full_workload(tmp_path: Path) -> None:
    """Every schema of the bench workload (~9,500), its first five outputs each (the
    workload has 10-25 a schema; ~47,000 lines): identical records. Lazy and eager differ in
    which schemas they load and when, not in how many lines a schema has, so five a schema
    cover what the whole workload's 226,000 did (in process 70 s against 105: the time is
    each schema's first use, which five lines a schema still pay in full)."""
    bench = _bench()
    workdir = bench.default_workdir(False)
    bench.build_workload(workdir, JSB, False, 200_000, 15)
    reg = workdir / "registry"
    seen: dict[str, int] = {}
    lines = []
    with open(workdir / "outputs.jsonl", "rb") as fh:
        for line in fh:
            name = json.loads(line)["schema"]
            seen[name] = seen.get(name, 0) + 1
            if seen[name] <= 5:
                lines.append(line.rstrip(b"\n"))
    assert len(seen) > 9_000 and len(lines) == 5 * len(seen)
    lazy, _ = _records(lines, reg, lazy=True, cache_dir=tmp_path / "cache")
    eager, _ = _records(lines, reg, lazy=False)
    assert len(lazy) == len(lines)
    assert lazy == eager
    warm, _ = _records(lines, reg, lazy=True, cache_dir=tmp_path / "cache")
    assert warm == eager
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_fast_check_is_reported_for_the_schemas_that_ran(tmp_path: Path) -> None:
    """jsonschema-rs answers from a schema's first output (its compile costs about 0.1 ms, no
    code generation to amortise); a schema it cannot answer for says so; verdicts are the same
    either way, and ``--jobs`` reports what the workers used without compiling anything in
    the parent."""
    from schemaops.audit import run_audit
    from schemaops.audit.verdict.validate import SchemaChecker

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    checker = SchemaChecker("s", schema)
    assert not checker.fast_path  # nothing compiled before the first output
    assert checker.check({"n": 1}).category == "ok" and checker.fast_path
    assert checker.check({"n": "x"}).category == "schema_violation:type"
    # a backreference: not Rust's syntax (``\\S`` alone is judged behind the ASCII gate)
    lenient = {**schema, "properties": {"n": {"type": "string", "pattern": "^(\\S)\\1*$"}}}
    other = SchemaChecker("p", lenient)
    assert other.check({"n": "a"}).category == "ok" and not other.fast_path
    assert other.check({"n": "a b"}).category == "schema_violation:pattern"
    reg = tmp_path / "reg"
    reg.mkdir()
    _write(reg, "many", schema)
    _write(reg, "few", lenient)
    data = tmp_path / "in.jsonl"
    # distinct texts: a repeated one is answered from the verdict memo, not checked again
    rows = [_line(i, "many", f'{{"n": {i}}}') for i in range(400)] + [
        _line(9, "few", '{"n": "22"}')
    ]
    data.write_bytes(b"\n".join(rows) + b"\n")
    for jobs in (1, 2):
        result = run_audit(str(data), AuditOptions(registry=str(reg), jobs=jobs, cache=False))
        assert result.schemas == {"few": {"fast_path": False}, "many": {"fast_path": True}}
        assert result.tally.ok == 401


def test_symlinks_and_subfolders_are_indexed_as_the_eager_load_does(tmp_path: Path) -> None:
    """The index's shortcut (a plain top-level file needs no path walk) keeps the boundary:
    a symlink out of the folder is refused, one inside and a file in a subfolder are served,
    a ``$ref`` between them resolves, and records equal the eager load's."""
    reg = tmp_path / "reg"
    _small_registry(reg)
    outside = tmp_path / "secret.json"
    outside.write_text(json.dumps({"type": "integer"}))
    (reg / "leak.json").symlink_to(outside)
    (reg / "alias.json").symlink_to(reg / "plain.json")
    (reg / "sub").mkdir()
    _write(reg / "sub", "nested", {"$ref": "../order.json"})
    lines = [
        _line(1, "leak", "1"),
        _line(2, "alias", '{"n": 1}'),
        _line(3, "nested", '{"total": -5}'),
        _line(4, "nested", '{"total": 5}'),
    ]
    lazy, _ = _records(lines, reg, lazy=True)
    eager, _ = _records(lines, reg, lazy=False)
    assert [r["category"] for r in lazy[1:]] == ["ok", "schema_violation:minimum", "ok"]
    assert lazy[1:] == eager[1:]
    # eager: "unknown schema 'leak'"; lazy names the problem
    assert "has registry problems" in lazy[0]["message"] and "outside" in lazy[0]["message"]


def test_a_name_a_library_holds_first_is_refused_as_the_eager_load_refuses_it(
    tmp_path: Path,
) -> None:
    """A library file earlier in path order holds the name, so the schema file of that name
    is a ``duplicate_name`` for the eager load and the name is the library's, unknown to
    records; the lazy index gave libraries no name and served the schema. Now both answer
    alike."""
    reg = tmp_path / "reg"
    (reg / "lib").mkdir(parents=True)
    (reg / "lib" / "shared.json").write_text(
        json.dumps({"x-schemaops-library": True, "$defs": {"n": {"type": "integer"}}})
    )
    (reg / "shared.json").write_text(json.dumps({"type": "object"}))
    (reg / "ok.json").write_text(json.dumps({"type": "object"}))
    lines = [_line(i, n, "{}") for i, n in enumerate(["shared", "ok"])]
    lazy, _ = _records(lines, reg, lazy=True)
    eager, _ = _records(lines, reg, lazy=False)
    assert lazy == eager
    assert [r["category"] for r in lazy] == ["input_error", "ok"]
    assert "unknown schema 'shared'" in lazy[0]["message"]
