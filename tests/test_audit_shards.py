"""``audit`` over many shards (JSONL, JSONL.gz, Parquet; files, folders, globs, file:// URIs):
the report equals the single-process audit of the concatenated input, field by field, with
the shipped registry and example log split so that episodes cross shard boundaries. No
mocks: real files, real pyarrow, the real CLI."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schemaops.audit import AuditOptions, run_audit
from schemaops.audit.run.multi import shift_records
from schemaops.cli import app
from schemaops.errors import InputError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "audits" / "example-outputs.jsonl"
REGISTRY = str(REPO / "schemas")
# Cuts at lines 1203 and 3777 fall inside episodes (ep-00060, ep-00188): checked below.
CUTS = (0, 1203, 2500, 3777, 5000)
#: Fields that describe the run, not the audit: the rest must be equal field by field.
RUN_FIELDS = {"input", "elapsed_s", "jobs", "shards", "ray"}


def strip_shard(x):
    """The document without ``shard``/``shard_line`` (a single file has no shards)."""
    if isinstance(x, dict):
        return {k: strip_shard(v) for k, v in x.items() if k not in ("shard", "shard_line")}
    if isinstance(x, list):
        return [strip_shard(v) for v in x]
    return x


def assert_same_report(a: dict, b: dict, shard_fields: bool = False) -> None:
    """Every field of the --json document equal (the run's own fields aside)."""
    keys = (set(a) | set(b)) - RUN_FIELDS
    for k in sorted(keys):
        va, vb = a.get(k), b.get(k)
        if not shard_fields:
            va, vb = strip_shard(va), strip_shard(vb)
        assert va == vb, f"field {k!r} differs: {str(va)[:300]} != {str(vb)[:300]}"


def make_shards(folder: Path) -> list[Path]:
    """The example log in four shards: plain JSONL, gzip, Parquet, plain JSONL."""
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    recs = [json.loads(x) for x in lines]
    assert recs[CUTS[1] - 1]["episode_id"] == recs[CUTS[1]]["episode_id"]
    assert recs[CUTS[3] - 1]["episode_id"] == recs[CUTS[3]]["episode_id"]
    folder.mkdir(parents=True, exist_ok=True)
    a, b, c, d = (
        folder / "part-0.jsonl",
        folder / "part-1.jsonl.gz",
        folder / "part-2.parquet",
        folder / "part-3.jsonl",
    )
    a.write_bytes(b"".join(lines[CUTS[0] : CUTS[1]]))
    with gzip.open(b, "wb") as fh:
        fh.write(b"".join(lines[CUTS[1] : CUTS[2]]))
    pq.write_table(pa.Table.from_pylist(recs[CUTS[2] : CUTS[3]]), c)
    d.write_bytes(b"".join(lines[CUTS[3] : CUTS[4]]))
    (folder / "_SUCCESS").write_text("")  # a Spark marker: not a shard
    return [a, b, c, d]


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return make_shards(tmp_path_factory.mktemp("shards") / "logs")


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, list[dict]]:
    """The single-process audit of the concatenated input: report and --records rows."""
    out = tmp_path_factory.mktemp("single") / "records.jsonl"
    res = run_audit(str(EXAMPLE), AuditOptions(registry=REGISTRY, records=str(out)))
    return res.to_json(), [json.loads(x) for x in out.read_text().splitlines()]


def audit(inputs, tmp_path: Path, **kw) -> tuple[dict, list[dict], bytes]:
    out = tmp_path / "records.jsonl"
    res = run_audit(inputs, AuditOptions(registry=REGISTRY, records=str(out), **kw))
    raw = out.read_bytes()
    return res.to_json(), [json.loads(x) for x in raw.splitlines()], raw


def test_folder_of_jsonl_gz_parquet_equals_concatenation(shards, single, tmp_path):
    doc, rows, _ = audit(str(shards[0].parent), tmp_path)
    assert_same_report(single[0], doc)
    assert doc["episodes"]["episodes"] == single[0]["episodes"]["episodes"] > 0
    assert doc["shards"] == {"count": 4, "audited": 4, "unreadable_count": 0, "unreadable": []}
    assert strip_shard(rows) == single[1]
    # every row names its shard and its line (Parquet: row) there
    starts = dict(zip([str(s) for s in shards], CUTS, strict=False))
    for r in rows:
        assert r["line"] == starts[r["shard"]] + r["shard_line"]
    assert {r["shard"] for r in rows} == set(starts)


def test_paths_glob_and_file_uri_equal_folder(shards, tmp_path):
    folder, _, _ = audit(str(shards[0].parent), tmp_path)
    uri = f"file://{shards[0].parent}/part-*"
    args = [str(shards[0]), str(shards[1]), f"file://{shards[2]}", str(shards[0].parent / "*3*")]
    folder_uri = f"file://{shards[0].parent}"
    for inputs in (args, uri, folder_uri, f"file://{shards[0].parent.parent}/**/part-*"):
        doc, _, _ = audit(inputs, tmp_path)
        assert_same_report(folder, doc, shard_fields=False)
        assert doc["shards"]["count"] == 4


def test_jobs_over_shards_equals_one_process(shards, tmp_path):
    one, _, raw_one = audit(str(shards[0].parent), tmp_path)
    two, _, raw_two = audit(str(shards[0].parent), tmp_path, jobs=2)
    assert two["jobs"] == 2
    assert_same_report(one, two, shard_fields=True)
    assert raw_two == raw_one


def test_unreadable_shards_named_and_rest_audited(shards, tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    for s in shards:
        (folder / s.name).write_bytes(s.read_bytes())
    gz = shards[1].read_bytes()
    (folder / "part-1.jsonl.gz").write_bytes(gz[: len(gz) // 2])  # a truncated gzip
    (folder / "part-4.parquet").write_bytes(b"PAR1 not really parquet")
    (folder / "part-5.jsonl").symlink_to(tmp_path / "gone.jsonl")  # cannot be opened
    result = CliRunner().invoke(
        app, ["audit", str(folder), "--registry", REGISTRY, "--json"], catch_exceptions=False
    )
    assert result.exit_code == 2, result.output
    doc = json.loads(result.stdout)
    bad = {u["shard"]: u["message"] for u in doc["shards"]["unreadable"]}
    assert set(bad) == {
        str(folder / n) for n in ("part-1.jsonl.gz", "part-4.parquet", "part-5.jsonl")
    }
    assert "unreadable after line" in bad[str(folder / "part-1.jsonl.gz")]
    assert doc["shards"]["audited"] == 3
    # the rest is audited: exactly the lines of the three good shards
    assert doc["lines"] == 5000 - (CUTS[2] - CUTS[1])
    for name in bad:
        assert "unreadable shard: " in result.stderr and name in result.stderr
    wide = {"COLUMNS": "1000"}  # rich wraps long paths at the terminal width
    text = CliRunner().invoke(app, ["audit", str(folder), "--registry", REGISTRY], env=wide)
    assert text.exit_code == 2 and "Shards: 3 of 6 audited" in text.stdout
    assert text.stdout.count("unreadable shard") == 3
    # input errors and examples name their shard and its line in the terminal report
    assert f"({folder / 'part-0.jsonl'}:" in text.stdout


def test_no_readable_shard_is_an_input_error(tmp_path):
    (tmp_path / "a.parquet").write_bytes(b"nope")
    result = CliRunner().invoke(app, ["audit", str(tmp_path), "--registry", REGISTRY])
    assert result.exit_code == 2
    assert "no shard could be read" in result.stderr and "a.parquet" in result.stderr


def test_parquet_row_is_a_record_and_errors_name_shard_and_row(tmp_path):
    ok = '{"order_id": "ORD-20481357"}'
    table = pa.Table.from_pylist(
        [
            {"text": ok, "schema": "get_order", "output": None, "episode_id": "e1"},
            {"text": None, "schema": "get_order", "output": None, "episode_id": "e1"},
            {"text": None, "schema": None, "output": "{}", "episode_id": "e2"},
        ]
    )
    pq.write_table(table, tmp_path / "p.parquet")
    (tmp_path / "q.jsonl").write_text(json.dumps({"text": "{", "schema": "get_order"}) + "\n")
    doc = run_audit(
        [str(tmp_path / "q.jsonl"), str(tmp_path / "p.parquet")], AuditOptions(registry=REGISTRY)
    ).to_json()
    assert doc["lines"] == 4 and doc["outputs"] == 3 and doc["input_errors"] == 1
    (err,) = doc["input_error_lines"]
    assert (
        err["line"] == 3 and err["shard"] == str(tmp_path / "p.parquet") and err["shard_line"] == 2
    )
    assert "no text found" in err["message"]  # the null column is not a field
    assert doc["sources"] == {"output": {"outputs": 1, "ok": 1}, "text": {"outputs": 2, "ok": 1}}


def test_single_parquet_file_and_stdin_still_work(shards):
    doc = run_audit(str(shards[2]), AuditOptions(registry=REGISTRY)).to_json()
    assert doc["lines"] == CUTS[3] - CUTS[2] and doc["shards"]["count"] == 1
    text = EXAMPLE.read_text()
    result = CliRunner().invoke(app, ["audit", "-", "--registry", REGISTRY, "--json"], input=text)
    assert result.exit_code == 0 and json.loads(result.stdout)["lines"] == 5000


def test_shift_records_keeps_rows_byte_for_byte():
    rows = b'{"line":3,"shard":"a","shard_line":3,"id":1}\n{"line": 4, "id": "\\ud800"}\n'
    assert shift_records(rows, 10) == (
        b'{"line":13,"shard":"a","shard_line":3,"id":1}\n{"line": 14, "id": "\\ud800"}\n'
    )


def test_missing_input_is_exit_2(tmp_path):
    result = CliRunner().invoke(app, ["audit", str(tmp_path / "a.jsonl"), str(tmp_path / "x*")])
    assert result.exit_code == 2 and "no such file" in result.stderr
    assert os.path.exists(tmp_path)


@pytest.mark.parametrize("limit", [8, 1 << 20])
def test_byte_ranges_give_every_line_exactly_once(tmp_path, limit):
    """However a plain shard is cut into byte ranges (``--ray`` does it for big shards),
    the ranges' lines are the shard's lines, once each: blank lines, a line longer than
    the cap (read past, as in one pass), no newline at the end."""
    from schemaops.audit.read.shards import Shard, range_lines, shard_lines
    from schemaops.jsonl import OverlongLine

    data = b'{"a":1}\n\n{"text":"' + b"x" * 40 + b'"}\n{"b":2}\n\n\n{"c":3}\n{"d":4}'
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    shard = Shard("s.jsonl", str(path))

    def rows(lines):
        return [("LONG" if type(x) is OverlongLine else x) for x in lines]

    with shard_lines(shard, limit) as lines:
        whole = rows(lines)
    for size in (1, 2, 3, 5, 7, 11, 16, 40, len(data) - 1, len(data)):
        got = []
        for start in range(0, len(data), size):
            with range_lines(shard, start, min(start + size, len(data)), limit) as lines:
                got.extend(rows(lines))
        assert got == whole, size


def test_ray_refuses_stdin_before_connecting():
    with pytest.raises(InputError, match="cannot read stdin"):
        run_audit("-", AuditOptions(registry=REGISTRY, ray="auto"))


def test_uri_glob_stays_within_a_segment():
    from schemaops.audit.read.shardlist import glob_match

    assert glob_match("s3://b/logs/a.jsonl", "s3://b/logs/*.jsonl")
    assert not glob_match("s3://b/logs/2026/a.jsonl", "s3://b/logs/*.jsonl")
    assert glob_match("s3://b/logs/2026/01/a.jsonl", "s3://b/logs/**/*.jsonl")
    assert glob_match("s3://b/logs/a.jsonl", "s3://b/logs/**/*.jsonl")
