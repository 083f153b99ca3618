"""``--jobs`` with schema routing (``audit/run/routing.py``, issue 15): each worker audits the
outputs of its own schemas (plus a line range for the hot ones), and the result is the one
process's, field by field, with ``--records`` byte for byte.

The differential input is built to hit every merge rule: JSONSchemaBench schemas with valid
and invalid outputs, one hot schema (split by line range), a schema that fails from some line
on (``poisoned``, homed and hot), lines with several outputs of different schemas (batches and
OpenAI tool calls: their outputs land in different workers), unusable lines, unknown names,
episodes and steps across all of it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from corpus_paths import JSB

from schemaops.audit.options import AuditOptions
from schemaops.audit.run import routing
from schemaops.audit.run.pipeline import run_audit
from schemaops.audit.verdict.resolver import PRECOMPILE_MAX, SchemaResolver


def _schemas(n: int, rng: random.Random) -> dict[str, dict]:
    rows = []
    for f in sorted(JSB.glob("*.jsonl")):
        with f.open(encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if i % 7 == 0:  # a spread over every subset, read cheaply
                    rows.append((f.stem, i, json.loads(line)["json_schema"]))
    out = {}
    for subset, i, text in rng.sample(rows, n):
        try:
            out[f"{subset}.{i}"] = json.loads(text)
        except ValueError:
            continue
    return out


def _texts(schema: dict, rng: random.Random) -> list[str]:
    base = ['{"a": 1}', "[]", '"x"', "{", "```json\n{}\n```", "{}", "null", '{"id": "abc"}']
    return rng.sample(base, 4)


def _workload(tmp: Path) -> tuple[Path, Path]:
    if not JSB.is_dir():
        pytest.fail(f"corpus not found: {JSB}")
    rng = random.Random(1517)
    reg = tmp / "reg"
    reg.mkdir()
    schemas = _schemas(150, rng)
    schemas["hot"] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    schemas["turns_bad"] = {"type": "object", "required": ["ok"]}
    for name, schema in schemas.items():
        (reg / f"{name}.json").write_text(json.dumps(schema), encoding="utf-8")
    (reg / "broken.json").write_text('{"type": 12}', encoding="utf-8")
    names = sorted(schemas)
    lines: list[str] = []

    def rec(schema: str, text: str, **kw: object) -> dict:
        return {"id": f"r{len(lines)}", "schema": schema, "text": text, **kw}

    for name in names:
        for t in _texts(schemas[name], rng):
            lines.append(json.dumps(rec(name, t)))
    for _ in range(len(lines) // 2):  # the hot schema: ~1/3 of the lines
        text = rng.choice(['{"n": 1}', '{"n": "x"}', "{", '{"n": "a\tb"}'])
        # the same texts with and without a finish reason: their diagnoses differ
        # (truncated_at_max_tokens vs truncated_other), so a memo keyed by text alone fails
        kw = rng.choice(
            [{}, {}, {"finish_reason": "length"}, {"meta_info": {"finish_reason": "stop"}}]
        )
        lines.append(json.dumps(rec("hot", text, **kw)))
    for _ in range(40):  # several outputs per line, of schemas homed on different workers
        a, b, c = rng.sample(names, 3)
        lines.append(json.dumps([rec(a, "{}"), rec(b, '{"n": "x"}'), rec(c, "[")]))
        calls = [
            {"function": {"name": n, "arguments": rng.choice(["{}", "[", '{"z": 1}'])}}
            for n in (a, b, "no_such_tool")
        ]
        lines.append(json.dumps({"id": "tc", "choices": [{"message": {"tool_calls": calls}}]}))
    lines += ["not json", "", "[1, 2]", json.dumps(rec("no_such_schema", "{}"))]
    # a record naming a tool set the registry lacks: an input error found after the line was
    # given to its schema's worker, which may not be the worker of its line range
    lines += [json.dumps(rec(rng.choice(names), "{}", toolset="nope")) for _ in range(12)]
    # a schema field that is not a name (unhashable: a lookup by it must not raise)
    lines += [json.dumps(rec(["hot"], '{"n": 1}')), json.dumps(rec({"x": 1}, "{}"))]  # type: ignore[arg-type]
    lines += [json.dumps(rec("broken", "{}"))]
    rng.shuffle(lines)
    for i in range(len(lines)):  # episodes of 5 steps across the whole file
        if lines[i].startswith("{") and '"id"' in lines[i]:
            d = json.loads(lines[i])
            d.update(episode_id=f"e{i // 5}", step=i % 5)
            lines[i] = json.dumps(d)
    for name in ("turns_bad", "hot"):  # ok at first, failing from the last fifth on
        n = len(lines)
        for j in range(6):
            ok = '{"ok": 1}' if name == "turns_bad" else '{"n": 2}'
            lines.insert(n // 10 + j, json.dumps(rec(name, ok)))
            lines.append(json.dumps(rec(name, "{}" if name == "turns_bad" else '{"n": []}')))
    data = tmp / "outputs.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return data, reg


def _report(
    data: Path, reg: Path, jobs: int, records: Path | None, all_errors: bool = True
) -> tuple[dict, bytes]:
    """The report without its timing fields, and the ``--records`` rows (``records`` None:
    none written, so the workers' lean loop runs: ``lines.audit_lines``)."""
    opts = AuditOptions(
        registry=str(reg), jobs=jobs, records=str(records) if records else None, cache=False
    )
    opts.all_errors = all_errors  # on: every value is parsed (the memo is off then)
    doc = run_audit(str(data), opts).to_json()
    for key in ("elapsed_s", "jobs"):
        doc.pop(key)
    return doc, records.read_bytes() if records else b""


@pytest.mark.corpus("jsonschemabench")
@pytest.mark.parametrize("jobs", [2, 3])
def test_routed_jobs_equal_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    data, reg = _workload(tmp_path)
    one, one_rows = _report(data, reg, 1, tmp_path / "one.jsonl")
    calls = []
    real = routing.run_routed
    monkeypatch.setattr(routing, "run_routed", lambda *a: calls.append(a) or real(*a))
    monkeypatch.setenv("SCHEMAOPS_AUDIT_ROUTE", "schema")

    def no_count(*a: object) -> None:
        raise AssertionError("issue 36: no serial newline count before the workers")

    monkeypatch.setattr(routing.parallel, "slices", no_count, raising=False)
    many, many_rows = _report(data, reg, jobs, tmp_path / "many.jsonl")
    assert len(calls) == 1  # the routed path ran
    hot = routing.hot_schemas(str(data), AuditOptions(registry=str(reg)), calls[0][3], jobs)
    assert "hot" in hot and "turns_bad" not in hot  # both merge rules for runs are exercised
    assert json.dumps(many) == json.dumps(one)  # every field, in the same order
    assert many_rows == one_rows
    assert one["diagnoses"]["poisoned"]["count"] >= 1
    assert not list(tmp_path.glob("many.jsonl.part*"))  # parts merged and removed
    cats = {r["category"].split(":")[0] for r in map(json.loads, one_rows.splitlines())}
    assert {"ok", "schema_violation", "json_parse_failure", "input_error"} <= cats


@pytest.mark.corpus("jsonschemabench")
@pytest.mark.parametrize(("jobs", "all_errors"), [(2, False), (3, True)])
def test_routed_jobs_without_records_equal_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int, all_errors: bool
) -> None:
    """Without ``--records`` (no rows to key and merge) the routed report is still the one
    process's, field by field (the hot schema's outputs by line range, the homed ones by
    worker, none counted twice or lost), with the verdict memo on and off; the one process
    counts its plain ok outputs in the lean loop, the routed workers in the general path."""
    data, reg = _workload(tmp_path)
    one, _ = _report(data, reg, 1, None, all_errors)
    monkeypatch.setenv("SCHEMAOPS_AUDIT_ROUTE", "schema")
    many, _ = _report(data, reg, jobs, None, all_errors)
    assert json.dumps(many) == json.dumps(one)  # every field, in the same order
    assert one["categories"]["ok"] > 100 and one["diagnoses"]["poisoned"]["count"] >= 1


def test_home_worker_is_the_same_in_every_process() -> None:
    """Workers must agree on a schema's home: Python's ``hash`` is salted per process."""
    names = ["a", "Github_easy.o1", "ünïcode", "x" * 300]
    code = f"from schemaops.audit.run.routing import home; print([home(n, 7) for n in {names!r}])"
    seen = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        seen.add(r.stdout)
    assert len(seen) == 1 and seen.pop().strip() == str([routing.home(n, 7) for n in names])


def test_routing_is_chosen_for_a_large_registry_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SCHEMAOPS_AUDIT_ROUTE", raising=False)
    small, large = tmp_path / "small", tmp_path / "large"
    for reg, n in ((small, 3), (large, PRECOMPILE_MAX + 1)):
        reg.mkdir()
        for i in range(n):
            (reg / f"s{i}.json").write_text('{"type": "object"}', encoding="utf-8")
    assert not SchemaResolver(None, small, lazy=True, cache=False).routes_by_schema()
    assert SchemaResolver(None, large, lazy=True, cache=False).routes_by_schema()
    fixed = SchemaResolver("s1", large, lazy=True, cache=False)
    assert not fixed.routes_by_schema()  # one schema for every record: byte ranges
    monkeypatch.setenv("SCHEMAOPS_AUDIT_ROUTE", "range")
    assert not SchemaResolver(None, large, lazy=True, cache=False).routes_by_schema()


def test_slice_ranges_cover_every_slice_once() -> None:
    spans = [(0, 100), (100, 200), (200, 300), (300, 400)]
    for jobs in (1, 2, 3, 4, 6):
        ranges = routing.slice_ranges(spans, jobs)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(spans) and len(ranges) == jobs
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))


@pytest.mark.parametrize("streamed", [False, True])
def test_numbered_slices_open_the_range_at_the_right_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed: bool
) -> None:
    """Issue 36: the worker numbers the lines itself (no count by the parent): worker 1's
    range of slices [1, 3) is lines 3 to 7 here, and every other line is out of it. A slice
    read whole is counted by its length, one streamed (a huge line made it large: here every
    slice of more than 2 bytes) line by line: the same numbers."""
    if streamed:
        monkeypatch.setattr(routing.parallel, "MAX_SLICE", 1)
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\nb\nc\nd\ne\nf\ng\nh\n")
    spans = [(0, 4), (4, 8), (8, 14), (14, 16)]  # lines 1-2, 3-4, 5-7, 8
    route = routing.Route(1, 2, 1, 3, frozenset())
    seen = []
    with open(path, "rb") as fh:
        for n, line in enumerate(routing.numbered_slices(fh, spans, route), 1):
            # (a streamed slice's lines keep their newline: JSON reads it as whitespace)
            seen.append((n, line.rstrip(b"\n"), route.lo <= n < route.hi))
    assert [x[1] for x in seen] == [b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h"]
    assert [n for n, _, inside in seen if inside] == [3, 4, 5, 6, 7]
    assert (route.lo, route.hi) == (3, 8)  # the numbers themselves, as a later line reads them


@pytest.mark.corpus("jsonschemabench")
@pytest.mark.parametrize("memo_chars", [None, 40])
def test_verdict_memo_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memo_chars: int | None
) -> None:
    """Repeated (schema, text) pairs are classified once: the report and every ``--records``
    row are those of an audit without the memo, also when the memo keeps starting over."""
    from schemaops.audit.verdict import resolver as resolver_mod

    data, reg = _workload(tmp_path)
    monkeypatch.setenv("SCHEMAOPS_AUDIT_MEMO", "0")
    off, off_rows = _report(data, reg, 1, tmp_path / "off.jsonl", all_errors=False)
    monkeypatch.delenv("SCHEMAOPS_AUDIT_MEMO")
    if memo_chars is not None:
        monkeypatch.setattr(resolver_mod, "MEMO_CHARS", memo_chars)
    seen = []
    real = resolver_mod.SchemaResolver.remember
    monkeypatch.setattr(
        resolver_mod.SchemaResolver,
        "remember",
        lambda self, *a: seen.append(len(self.verdicts)) or real(self, *a),
    )
    on, on_rows = _report(data, reg, 1, tmp_path / "on.jsonl", all_errors=False)
    # ``schemas`` says which check each schema used: with fewer checks run, a schema may not
    # reach FAST_AFTER outputs, so it is left out; every verdict and count is compared
    on_schemas, off_schemas = on.pop("schemas"), off.pop("schemas")
    assert on_schemas.keys() == off_schemas.keys()
    assert json.dumps(on) == json.dumps(off)
    assert on_rows == off_rows
    assert {"truncated_at_max_tokens", "truncated_other"} <= set(on["diagnoses"])
    if memo_chars is None:
        assert 0 < len(seen) < on["outputs"] * 0.8  # repeats were answered from the memo
    else:
        assert max(seen) <= memo_chars  # it started over instead of growing


@pytest.mark.corpus("jsonschemabench")
@pytest.mark.parametrize("route", ["schema", "range"])
def test_a_worker_killed_mid_run_is_exit_2_with_no_parts_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    """A worker killed (the OOM killer's SIGKILL, sent here by the worker to itself: the
    kill is real, its timing made certain) is an explained exit 2, never a traceback or exit
    1 (a failed gate), and the ``--records`` parts are removed."""
    from schemaops.audit.run import parallel
    from schemaops.errors import SchemaopsError

    data, reg = _workload(tmp_path)
    monkeypatch.setenv("SCHEMAOPS_AUDIT_ROUTE", route)
    monkeypatch.setattr(routing if route == "schema" else parallel, "_work", _die)
    records = tmp_path / "rows.jsonl"
    opts = AuditOptions(registry=str(reg), jobs=2, records=str(records), cache=False)
    with pytest.raises(SchemaopsError) as err:
        run_audit(str(data), opts)
    assert err.value.exit_code == 2 and "worker process died" in str(err.value)
    assert not list(tmp_path.glob("rows.jsonl.part*"))


def _die(args: tuple) -> None:
    """A worker task that is killed as the OOM killer kills (module level: pickled by name)."""
    os.kill(os.getpid(), signal.SIGKILL)


def test_hot_schemas_are_sampled_over_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A schema that dominates only the second half of a log is still found hot (sampled in
    windows spread over the file), and a rare one is not."""
    reg = tmp_path / "reg"
    reg.mkdir()
    for name in ("early", "late", "rare"):
        (reg / f"{name}.json").write_text('{"type": "object"}', encoding="utf-8")
    rows = [{"schema": "early", "text": "{}"}] * 2000 + [{"schema": "late", "text": "{}"}] * 2000
    rows.insert(10, {"schema": "rare", "text": "{}"})
    data = tmp_path / "log.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.setattr(routing, "SAMPLE_BYTES", 8192)  # the file is ~120 KB: windows
    resolver = SchemaResolver(None, reg, cache=False)
    hot = routing.hot_schemas(str(data), AuditOptions(registry=str(reg)), resolver, 2)
    assert hot == {"early", "late"}
    monkeypatch.setattr(routing, "SAMPLE_BYTES", 1 << 20)  # the whole file in one read
    assert routing.hot_schemas(str(data), AuditOptions(registry=str(reg)), resolver, 2) == hot


@pytest.mark.corpus("jsonschemabench")
def test_routed_jobs_equal_one_process_on_the_platform_workload(tmp_path: Path) -> None:
    """The benchmark's quick workload (600 JSONSchemaBench schemas with generated valid and
    mutated invalid outputs, 22,800 lines, built in ~10 s into ``tmp_path``): ``--jobs 2``
    routed by schema (the registry is over 256 schemas: no override) gives one process's
    report and ``--records``."""
    import importlib.util

    from corpus_paths import REPO

    spec = importlib.util.spec_from_file_location(
        "audit_many_schemas", REPO / "bench" / "audit_many_schemas.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # type: ignore[union-attr]
    work = tmp_path / "work"
    bench.build_workload(work, JSB, True, 20_000, 15)
    data, reg = work / "outputs.jsonl", work / "registry"
    assert SchemaResolver(None, reg, cache=False).routes_by_schema()
    one, one_rows = _report(data, reg, 1, tmp_path / "one.jsonl", all_errors=False)
    two, two_rows = _report(data, reg, 2, tmp_path / "two.jsonl", all_errors=False)
    one_schemas, two_schemas = one.pop("schemas"), two.pop("schemas")
    assert one_schemas.keys() == two_schemas.keys()  # which check each used may differ
    assert json.dumps(two) == json.dumps(one)
    assert two_rows == one_rows
    assert one["lines"] >= 20_000 and one["categories"]["ok"] > 1000


def test_balanced_homes_split_the_bytes_evenly_and_the_same_everywhere() -> None:
    """Largest first to the least loaded worker: the loads differ by at most the largest
    schema (plus its fixed cost); hot schemas get no home; ties are broken by name, so two
    processes (dict orders apart) place every schema alike."""
    import random

    from schemaops.audit.run.routing import FIXED_COST_BYTES, balanced_homes

    rng = random.Random(3)
    sizes = {f"s{i}": rng.choice([200, 900, 5000, 40_000]) for i in range(500)}
    hot = frozenset({"s1", "s2"})
    homes = balanced_homes(sizes, 3, hot)
    assert set(homes) == set(sizes) - hot
    load = [0, 0, 0]
    for name, k in homes.items():
        load[k] += sizes[name] + FIXED_COST_BYTES
    assert max(load) - min(load) <= 40_000 + FIXED_COST_BYTES
    shuffled = dict(sorted(sizes.items(), key=lambda kv: rng.random()))
    assert balanced_homes(shuffled, 3, hot) == homes


@pytest.mark.corpus("jsonschemabench")
def test_routed_jobs_with_the_facts_cache_cold_then_warm_equal_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache as --jobs uses it: the parent writes the index's entries before it forks,
    each worker its own facts when it ends; a second run reads them all and still gives the
    one process's report and records (with the memo on: the cache's usual company)."""
    from schemaops.audit.verdict import cache as cache_mod
    from schemaops.audit.verdict.cache import SchemaFacts

    monkeypatch.setattr(cache_mod, "RACY_NS", 0)  # the test's files count as settled
    data, reg = _workload(tmp_path)
    one, one_rows = _report(data, reg, 1, tmp_path / "one.jsonl", all_errors=False)
    monkeypatch.setenv("SCHEMAOPS_AUDIT_ROUTE", "schema")
    cdir = tmp_path / "cache"
    packs: dict[str, set] = {}
    for run in ("cold", "warm"):
        opts = AuditOptions(
            registry=str(reg), jobs=2, records=str(tmp_path / f"{run}.jsonl"), cache_dir=str(cdir)
        )
        doc = run_audit(str(data), opts).to_json()
        for key in ("elapsed_s", "jobs"):
            doc.pop(key)
        assert json.dumps(doc) == json.dumps(one), run
        assert (tmp_path / f"{run}.jsonl").read_bytes() == one_rows, run
        packs[run] = {p.name for p in cdir.rglob("*" + cache_mod.PACK_SUFFIX)}
    # cold: one pack from the parent (the index) and one per worker; warm: nothing new
    assert len(packs["cold"]) == 3 and packs["warm"] == packs["cold"]
    entries = SchemaFacts(cdir).entries()
    scans = [e for e in entries.values() if "scan" in e]
    cleans = [e for e in entries.values() if e.get("clean") is True]
    assert len(scans) == len(list(reg.glob("*.json")))  # the parent's index entries
    assert len(cleans) >= 5  # the workers' facts (the schemas without problems)


@pytest.mark.corpus("jsonschemabench")
@pytest.mark.parametrize("route", ["schema", "range"])
def test_jobs_from_a_threaded_caller_use_a_clean_server_and_equal_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, route: str
) -> None:
    """A library caller whose program runs other threads must not have workers forked from
    it (a child forked while another thread holds a lock waits forever: a test forking from a
    threaded process hung 900 s in CI). While a second thread lives, the workers come from
    ``forkserver`` and build their own checks; the report is still the one process's."""
    import threading

    from schemaops.audit.run import parallel

    data, reg = _workload(tmp_path)
    one, one_rows = _report(data, reg, 1, tmp_path / "one.jsonl")
    assert parallel.start_method() == "fork"  # this test's process: one thread
    methods: list[str] = []
    real = parallel.start_method
    monkeypatch.setattr(parallel, "start_method", lambda: methods.append(real()) or methods[-1])
    monkeypatch.setenv("SCHEMAOPS_AUDIT_ROUTE", route)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        many, many_rows = _report(data, reg, 2, tmp_path / "many.jsonl")
    finally:
        stop.set()
        other.join()
    assert methods == ["forkserver"]
    assert json.dumps(many) == json.dumps(one)  # every field, in the same order
    assert many_rows == one_rows
