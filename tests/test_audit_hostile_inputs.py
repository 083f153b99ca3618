"""Hostile input files for ``audit`` (issue 22, "Trust, round two"): FIFOs and devices, symlink
loops and aliases, object-store URIs without a network, a Parquet codec the library cannot
read. Each gets a bounded, clean answer: the real CLI in a subprocess with a generous outer
timeout, so a regression (a hang) fails the test instead of hanging the suite."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cli_support import REPO

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
#: Outer bound on one CLI run: far above what any of these takes (about a second), far
#: below "forever"; a hang is then a TimeoutExpired, a failed test.
BOUND_S = 90


def _schema(tmp_path: Path) -> str:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCHEMA))
    return str(path)


def _log(path: Path, n: int = 2) -> Path:
    path.write_text("".join(json.dumps({"text": json.dumps({"a": i})}) + "\n" for i in range(n)))
    return path


def run_cli(
    *args: str, timeout: float = BOUND_S, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m schemaops ARGS`` in its own process group, all of it killed past
    ``timeout`` (a regression that hangs would otherwise leave ``--jobs`` workers behind
    reading ``/dev/zero``); the timeout then fails the test."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "schemaops", *args],
        cwd=REPO,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"schemaops {' '.join(args)} still running after {timeout} s")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _audit(tmp_path: Path, *args: str, timeout: float = BOUND_S):
    return run_cli(
        "audit", *args, "--schema", _schema(tmp_path), "--json", "--no-cache", timeout=timeout
    )


# --- #9: only regular files (and '-') are read -------------------------------------------


def _fifo_folder(tmp_path: Path) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    _log(logs / "a.jsonl")
    os.mkfifo(logs / "b.jsonl")  # no writer: opening it blocks, reading it never ends
    (logs / "z.jsonl").symlink_to("/dev/zero")  # a device: endless zero bytes
    return logs


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_fifo_and_device_in_a_folder_are_unreadable_shards(tmp_path: Path, jobs: str) -> None:
    """Trust #9: fails on main before this (the audit blocks on the FIFO forever)."""
    logs = _fifo_folder(tmp_path)
    r = _audit(tmp_path, str(logs), "--jobs", jobs)
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    assert doc["outputs"] == 2 and doc["ok"] == 2  # a.jsonl audited
    bad = {Path(u["shard"]).name: u["message"] for u in doc["shards"]["unreadable"]}
    assert set(bad) == {"b.jsonl", "z.jsonl"}
    assert all("not a regular file" in m for m in bad.values())
    assert "unreadable shard" in r.stderr and "b.jsonl" in r.stderr


@pytest.mark.parametrize("name", ["b.jsonl", "z.jsonl"])
def test_a_named_fifo_or_device_is_refused(tmp_path: Path, name: str) -> None:
    """Trust #9: one FIFO or device named alone, or beside a good file: exit 2, named."""
    logs = _fifo_folder(tmp_path)
    r = _audit(tmp_path, str(logs / name))
    assert r.returncode == 2 and name in r.stderr and "not a regular file" in r.stderr
    assert "Traceback" not in r.stderr
    r = _audit(tmp_path, str(logs / "a.jsonl"), str(logs / name))
    assert r.returncode == 2, r.stderr
    assert json.loads(r.stdout)["outputs"] == 2


def test_stdin_named_explicitly_is_still_read(tmp_path: Path) -> None:
    r = run_cli(
        "audit",
        "-",
        "--schema",
        _schema(tmp_path),
        "--json",
        "--no-cache",
        stdin='{"text": "{\\"a\\": 1}"}\n',
        timeout=BOUND_S,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ok"] == 1


# --- #5: one file is one shard, whatever its paths ----------------------------------------


def _loop_tree(tmp_path: Path) -> Path:
    """``logs/a.jsonl`` (2 lines), ``logs/d/b.jsonl`` (3 lines), ``logs/d/up -> ..`` (a loop)
    and ``logs/e -> d`` (an alias folder); the glob once audited a.jsonl 41 times."""
    logs = tmp_path / "logs"
    (logs / "d").mkdir(parents=True)
    _log(logs / "a.jsonl", 2)
    _log(logs / "d" / "b.jsonl", 3)
    (logs / "d" / "up").symlink_to("..")
    (logs / "e").symlink_to("d")
    return logs


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_glob_through_a_symlink_loop_reads_each_file_once(tmp_path: Path, jobs: str) -> None:
    """Trust #5: fails on main before this (82 outputs from a 2-line file, exit 0)."""
    logs = _loop_tree(tmp_path)
    r = _audit(tmp_path, str(logs / "**" / "*.jsonl"), "--jobs", jobs)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["outputs"] == 5 and doc["lines"] == 5
    assert doc["shards"]["count"] == 2


def test_a_file_named_twice_or_by_an_alias_counts_once(tmp_path: Path) -> None:
    """Trust #5: the same (device, inode) under two paths is one shard; the skip is said."""
    logs = _loop_tree(tmp_path)
    a, b = logs / "a.jsonl", logs / "d" / "b.jsonl"
    alias = tmp_path / "alias.jsonl"
    alias.symlink_to(a)
    r = _audit(tmp_path, str(a), str(a), str(alias), str(logs / "e" / "b.jsonl"), str(b))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["outputs"] == 5
    assert doc["shards"]["count"] == 2 and doc["shards"]["duplicates_skipped_count"] == 3
    assert doc["shards"]["duplicates_skipped"] == [
        {"shard": str(a), "same_as": str(a)},
        {"shard": str(alias), "same_as": str(a)},
        {"shard": str(b), "same_as": str(logs / "e" / "b.jsonl")},
    ]
    assert r.stderr.count("warning: duplicate path skipped") == 3
    # a folder and a glob over the same files: each file once
    r = _audit(tmp_path, str(logs), str(logs / "**" / "*.jsonl"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outputs"] == 5


# --- #10: every object-store call has a deadline -----------------------------------------

#: --open-timeout in these tests, and the bound they must finish within: the old code took
#: ~100 s on the silent endpoint below and never finished on gs:// without network.
DEADLINE_S = "3"
URI_BOUND_S = 60


@pytest.fixture
def silent_endpoint():
    """A loopback TCP port that accepts connections and never answers: an S3 endpoint that
    hangs (a fault no real store gives on demand; raw sockets, no HTTP double needed)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join(5)
    for c in held:
        c.close()
    srv.close()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_store_that_never_answers_is_exit_2_within_the_deadline(
    tmp_path: Path, silent_endpoint: int, jobs: str
) -> None:
    """Trust #10: fails on main before this (~100 s, past the bound). Beside a readable file
    too: a URI is looked up when the inputs are expanded, before any audit, so it is an
    input error with no report, as a missing path is."""
    uri = (
        f"s3://bucket/x.jsonl?endpoint_override=127.0.0.1:{silent_endpoint}"
        "&scheme=http&region=us-east-1"
    )
    good = _log(tmp_path / "a.jsonl")
    for args in ([uri], [str(good), uri]):
        r = _audit(
            tmp_path, *args, "--open-timeout", DEADLINE_S, "--jobs", jobs, timeout=URI_BOUND_S
        )
        assert r.returncode == 2, r.stderr
        assert f"cannot read {uri}: no answer from the store within 3 s" in r.stderr
        assert "Traceback" not in r.stderr
        doc = json.loads(r.stdout)  # --json: the error is the one document
        assert doc["ok"] is False and doc["exit_code"] == 2 and uri in doc["error"]


@pytest.mark.parametrize(
    "uri",
    [
        # anonymous: no credentials lookup (no metadata server); a .invalid host (RFC 2606)
        # never resolves: the only traffic is a refused DNS lookup, on any machine
        "gs://anonymous@bucket/x.jsonl?scheme=http&endpoint_override=schemaops-test.invalid",
        "s3://bucket/x.jsonl?endpoint_override=schemaops-test.invalid&region=us-east-1",
    ],
)
def test_an_object_store_out_of_reach_is_exit_2(tmp_path: Path, uri: str) -> None:
    """Trust #10: a store that cannot be reached is a clean exit 2 naming the URI. (The
    reported ``gs://bucket/x.jsonl`` without network, which never ended on main and ends in
    ~3 s with ``--open-timeout 3`` now, is not run here: on a machine with a network it
    would reach Google.)"""
    from schemaops.http.urls import redact

    r = _audit(tmp_path, uri, "--open-timeout", DEADLINE_S, timeout=URI_BOUND_S)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"error: cannot read {redact(uri)}: ")
    assert "Traceback" not in r.stderr


def test_credentials_in_a_shard_uri_are_never_printed(tmp_path: Path) -> None:
    """``s3://KEY:SECRET@bucket/...`` is a way to pass credentials to pyarrow: the shard is
    opened with them, but every message and report names it as ``s3://***@bucket/...``
    (the URI was printed whole before this)."""
    secret = "wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY"
    uri = (
        f"s3://AKIAEXAMPLE:{secret}@bucket/x.jsonl"
        "?endpoint_override=schemaops-test.invalid&region=us-east-1"
    )
    r = _audit(tmp_path, uri, "--open-timeout", DEADLINE_S, timeout=URI_BOUND_S)
    assert r.returncode == 2, r.stderr
    assert secret not in r.stderr + r.stdout and "AKIAEXAMPLE" not in r.stderr + r.stdout
    assert "s3://***@bucket/x.jsonl" in r.stderr, r.stderr


def test_open_timeout_must_be_positive(tmp_path: Path) -> None:
    r = _audit(tmp_path, str(_log(tmp_path / "a.jsonl")), "--open-timeout", "0")
    assert r.returncode == 2 and "--open-timeout must be above 0" in r.stderr


# --- #11: a Parquet shard the library cannot read never takes the run down ---------------


class _ThriftCompact:
    """Just enough of Thrift's compact protocol to find where a Parquet footer
    (``FileMetaData``) stores each column chunk's codec: ``row_groups`` (field 4) ->
    ``columns`` (field 1) -> ``meta_data`` (field 3) -> ``codec`` (field 4, an i32).
    Layout: https://github.com/apache/parquet-format/blob/master/src/main/thrift/parquet.thrift
    and https://github.com/apache/thrift/blob/master/doc/specs/thrift-compact-protocol.md"""

    ROLES = {"file": {4: "rowgroup"}, "rowgroup": {1: "chunk"}, "chunk": {3: "colmeta"}}

    def __init__(self, buf: bytes) -> None:
        self.buf, self.pos, self.codecs = buf, 0, []

    def varint(self) -> int:
        out = shift = 0
        while True:
            b = self.buf[self.pos]
            self.pos += 1
            out |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return out

    def skip(self, t: int, role: str | None = None) -> None:
        if t in (1, 2):  # a boolean field: its value is in the type
            return
        if t == 3:
            self.pos += 1
        elif t in (4, 5, 6):
            self.varint()
        elif t == 7:
            self.pos += 8
        elif t == 8:
            n = self.varint()  # read first: ``self.pos += self.varint()`` adds to the old pos
            self.pos += n
        elif t in (9, 10):
            head = self.buf[self.pos]
            self.pos += 1
            n, elem = head >> 4, head & 0x0F
            n = self.varint() if n == 15 else n
            for _ in range(n):
                if elem in (1, 2):
                    self.pos += 1
                else:
                    self.skip(elem, role)
        elif t == 11:
            n = self.varint()
            if n:
                kv = self.buf[self.pos]
                self.pos += 1
                for _ in range(n):
                    self.skip(kv >> 4)
                    self.skip(kv & 0x0F)
        elif t == 12:
            self.struct(role)
        else:
            raise ValueError(f"unknown thrift type {t}")

    def struct(self, role: str | None) -> None:
        last = 0
        while True:
            head = self.buf[self.pos]
            self.pos += 1
            if head == 0:
                return
            delta, t = head >> 4, head & 0x0F
            if delta:
                last += delta
            else:
                raw = self.varint()
                last = (raw >> 1) ^ -(raw & 1)
            if role == "colmeta" and last == 4 and t == 5:
                self.codecs.append(self.pos)
            self.skip(t, self.ROLES.get(role or "", {}).get(last))


LZO = 3  # parquet.thrift CompressionCodec: UNCOMPRESSED 0, SNAPPY 1, GZIP 2, LZO 3, ...


def lzo_parquet(path: Path, rows: int = 20_000, row_group: int = 1000) -> Path:
    """A real Parquet file, written by pyarrow uncompressed, then marked LZO in its footer.

    pyarrow cannot write LZO (nor read it), so the codec byte of every column chunk is
    patched: UNCOMPRESSED is the one-byte varint 0x00, LZO (3) zigzags to 0x06, so the
    footer keeps its size and the file stays valid Parquet that says LZO. Nine columns in
    20 row groups: the shape that aborted the old reader in 4 of 16 runs."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    cols = {"text": [json.dumps({"a": i}) for i in range(rows)]}
    cols.update({f"c{c}": list(range(rows)) for c in range(8)})
    plain = path.with_suffix(".plain.parquet")
    pq.write_table(pa.table(cols), plain, compression="none", row_group_size=row_group)
    data = bytearray(plain.read_bytes())
    plain.unlink()
    (size,) = struct.unpack("<i", data[-8:-4])
    start = len(data) - 8 - size
    walker = _ThriftCompact(bytes(data[start:-8]))
    walker.struct("file")
    assert len(walker.codecs) == 9 * (rows // row_group)
    for pos in walker.codecs:
        assert data[start + pos] == 0x00  # UNCOMPRESSED
        data[start + pos] = LZO << 1
    path.write_bytes(bytes(data))
    meta = pq.ParquetFile(path).metadata
    assert meta.row_group(0).column(0).compression == "LZO"
    return path


def test_an_lzo_parquet_shard_is_refused_before_reading(tmp_path: Path) -> None:
    """Trust #11: fails on main before this (pyarrow's read error, then SIGABRT / exit 134
    in some runs; never the refusal). Run several times: an abort is a race."""
    from schemaops.audit.read.shards import unreadable_codecs

    pq = pytest.importorskip("pyarrow.parquet")
    lzo = lzo_parquet(tmp_path / "logs.parquet")
    assert unreadable_codecs(pq.ParquetFile(lzo).metadata) == ["LZO"]
    good = _log(tmp_path / "a.jsonl")
    for i in range(6):
        jobs = "2" if i % 3 == 2 else "1"
        r = _audit(tmp_path, str(lzo), str(good), "--jobs", jobs)
        assert r.returncode == 2, (r.returncode, r.stderr[-500:])
        assert f"cannot read {lzo}: compressed with LZO" in r.stderr
        assert json.loads(r.stdout)["outputs"] == 2
    r = _audit(tmp_path, str(lzo))  # alone: no shard could be read
    assert r.returncode == 2 and "compressed with LZO" in r.stderr
    assert "compressed with LZO" in json.loads(r.stdout)["error"]  # no report: the error's


def test_corrupt_parquet_pages_are_an_unreadable_shard_not_an_abort(tmp_path: Path) -> None:
    """Trust #11, the same abort from a page that fails to decompress (snappy data with
    flipped bytes): read single-threaded, the error is raised, never an abort (the old
    reader aborted 2 runs in 12 here; each run is a chance for the race, hence several)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = 20_000
    cols = {"text": [json.dumps({"a": i}) for i in range(rows)]}
    cols.update({f"c{c}": [i * 0.5 + c for i in range(rows)] for c in range(8)})
    path = tmp_path / "corrupt.parquet"
    pq.write_table(pa.table(cols), path, compression="snappy", row_group_size=1000)
    data = bytearray(path.read_bytes())
    for k in range(200):  # deterministic damage inside the first half (pages, not footer)
        data[100 + (k * 7919) % (len(data) // 2 - 100)] ^= 0xFF
    path.write_bytes(bytes(data))
    good = _log(tmp_path / "a.jsonl")
    for _ in range(6):
        r = _audit(tmp_path, str(path), str(good))
        assert r.returncode == 2, (r.returncode, r.stderr[-500:])
        assert "unreadable shard" in r.stderr and str(path) in r.stderr
        assert json.loads(r.stdout)["outputs"] == 2


@pytest.mark.parametrize("command", ["audit", "watch"])
def test_a_tool_name_with_terminal_escapes_is_shown_escaped(tmp_path: Path, command: str) -> None:
    """A tool set offered in a logged request names its function with escapes that set the
    window title and clear the screen; every call to it fails, so the poisoned-schema
    diagnosis names it: the terminal report wrote the name raw (a mutation run over tool sets,
    2026-12-05). It is written with visible escapes, in ``audit`` and ``watch --once``."""
    reg = tmp_path / "reg"
    reg.mkdir()
    (reg / "x.json").write_text('{"type": "object"}')
    name = "\x1b]0;owned\x07\x1b[2J\x1b[31mX"
    params = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    call = {"id": "c", "type": "function", "function": {"name": name, "arguments": "{}"}}
    rec = {
        "request": {
            "model": "m",
            "tools": [{"type": "function", "function": {"name": name, "parameters": params}}],
            "tool_choice": "required",
        },
        "response": {"choices": [{"message": {"tool_calls": [call]}}]},
    }
    log = tmp_path / "calls.jsonl"
    log.write_text((json.dumps(rec) + "\n") * 10)
    extra = ["--once"] if command == "watch" else []
    res = subprocess.run(
        [sys.executable, "-m", "schemaops", command, str(log), "--registry", str(reg), *extra],
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        cwd=REPO,
    )
    assert res.returncode == 0, res.stderr
    out = res.stdout + res.stderr
    assert "every output fails from" in out  # the diagnosis that names it is shown
    assert "\\x1b]0;owned\\x07" in out
    assert "\x1b" not in out and "\x07" not in out
