"""Request-log parsing and warm planning: exact bytes kept, keys derived as SGLang does."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from schemaops.registry import load_registry
from schemaops.registry.drift import registry_index
from schemaops.requestlog import scan, sglang_tool_key
from schemaops.warm.fromlog import plan_from_log
from schemaops.warm.plan import build_request, plan_from_registry, tool_definition


def _log(tmp_path: Path, bodies: list, name: str = "r.jsonl") -> Path:
    p = tmp_path / name
    p.write_text(
        "".join((b if isinstance(b, str) else json.dumps(b)) + "\n" for b in bodies),
        encoding="utf-8",
    )
    return p


ODD = '{"type" : "object",\t"properties":{"s":{"type":"string","pattern":"^\\\\/x$"}}}'


def test_native_bodies_keep_the_exact_string(tmp_path: Path) -> None:
    body = {"text": "x", "sampling_params": {"json_schema": ODD, "max_new_tokens": 5}}
    batch = {"text": ["a", "b"], "sampling_params": [{"regex": "[ab]+"}, {"ebnf": 'root ::= "x"'}]}
    sc = scan(
        _log(tmp_path, [body, batch, {"sampling_params": {"json_schema": {"type": "object"}}}, ""])
    )
    assert sc.records == 3
    assert [(f.key_type, f.key) for f in sc.found] == [
        ("json", ODD),
        ("regex", "[ab]+"),
        ("ebnf", 'root ::= "x"'),
    ]
    assert sc.found[0].fragment == {"json_schema": ODD}
    assert sc.input_errors[0]["line"] == 3 and "not a string" in sc.input_errors[0]["reason"]
    path, req, _ = build_request(plan_from_log(_log(tmp_path, [body], "one.jsonl"))[0][0])
    assert path == "/generate"
    # the bytes on the wire decode to exactly the logged string
    assert json.loads(json.dumps(req))["sampling_params"]["json_schema"] == ODD
    assert req["sampling_params"]["max_new_tokens"] == 1


def test_openai_bodies_and_wrappers(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "string"}}}
    rf = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema, "strict": True}}
    chat = {"model": "m", "messages": [], "response_format": rf}
    sc = scan(
        _log(tmp_path, [chat, {"request": chat}, {"response_format": {"type": "json_object"}}])
    )
    assert [f.key for f in sc.found] == [json.dumps(schema)] * 2 + ['{"type": "object"}']
    assert sc.found[0].fragment == {"response_format": rf}
    assert list(sc.found[0].fragment["response_format"]["json_schema"]["schema"]["properties"]) == [
        "b",
        "a",
    ]


def test_gzip_and_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "r.jsonl.gz"
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"sampling_params": {"json_schema": "{}"}}) + "\n")
    assert scan(p).found[0].key == "{}"
    from schemaops.errors import InputError

    with pytest.raises(InputError):
        scan(tmp_path / "nope.jsonl")


def test_plan_from_log_dedupes_keys_and_separates_variants(
    tmp_path: Path, registry_dir: Path
) -> None:
    reg = load_registry(registry_dir)
    s = reg.get("get_order")
    gen = lambda t: {"sampling_params": {"json_schema": t}}  # noqa: E731
    chat = {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "g", "schema": s.bundled()},
        }
    }
    log = _log(
        tmp_path,
        [gen(s.wire("native"))] * 3 + [gen(s.wire("openai")), chat, gen('{"type":"string"}')],
    )
    items, sc = plan_from_log(log, registry_index(reg))
    assert len(sc.found) == 6
    # native compact (3x); json.dumps text sent to /generate and by the OpenAI path: one key (2x)
    assert sorted(it.seen for it in items) == [1, 2, 3]
    named = {it.seen: it for it in items}
    assert named[3].matches == "get_order" and named[3].name.startswith("get_order@")
    assert named[2].key == s.wire("openai") and named[2].matches == "get_order"
    assert named[1].matches is None


def test_tool_key_follows_sglang_get_json_schema_constraint() -> None:
    p = {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "$defs": {"d": {"type": "integer"}},
    }
    tools = [tool_definition("a", p), tool_definition("b", {"type": "object"})]
    named = json.loads(sglang_tool_key(tools, {"type": "function", "function": {"name": "a"}}))
    assert named == {
        "type": "array",
        "minItems": 1,
        "items": {
            "properties": {"name": {"type": "string", "enum": ["a"]}, "parameters": p},
            "required": ["name", "parameters"],
        },
    }
    req = json.loads(sglang_tool_key(tools, "required", parallel_tool_calls=False))
    assert (
        req["maxItems"] == 1
        and len(req["items"]["anyOf"]) == 2
        and req["$defs"] == {"d": {"type": "integer"}}
    )
    assert sglang_tool_key(tools, "auto") is None
    assert sglang_tool_key(tools, {"type": "function", "function": {"name": "zz"}}) is None


def test_plan_from_registry_uses_the_wire_strings(registry_dir: Path) -> None:
    reg = load_registry(registry_dir)
    native = plan_from_registry(reg, "native")
    assert [it.key for it in native] == [s.wire("native") for s in reg]
    openai = plan_from_registry(reg, "openai")
    for it, s in zip(openai, reg, strict=True):
        path, body, headers = build_request(it, model="m", dp_rank=1)
        assert path == "/v1/chat/completions" and headers == {"X-Data-Parallel-Rank": "1"}
        assert body["max_tokens"] == 1
        # SGLang's convert_json_schema_to_str: json.dumps of the parsed schema == wire("openai")
        assert json.dumps(
            json.loads(json.dumps(body))["response_format"]["json_schema"]["schema"]
        ) == s.wire("openai")
    _, body, _ = build_request(native[0], dp_rank=1)
    assert body["routed_dp_rank"] == 1


def test_plan_tools_named_and_required(registry_dir: Path) -> None:
    reg = load_registry(registry_dir)
    named = plan_from_registry(reg, "openai", "named", parallel_tool_calls=False)
    assert len(named) == len(reg)
    frag = named[0].fragment
    assert len(frag["tools"]) == len(reg) and frag["parallel_tool_calls"] is False
    assert frag["tool_choice"] == {"type": "function", "function": {"name": named[0].name}}
    req = plan_from_registry(reg, "openai", "required")
    assert len(req) == 1 and req[0].fragment["tool_choice"] == "required"
    with pytest.raises(ValueError):
        plan_from_registry(reg, "native", "named")


def _hostile_log(tmp_path: Path) -> tuple[Path, dict[int, str]]:
    """A log whose every bad line is a known kind; returns the path and line -> reason part."""
    good = json.dumps({"sampling_params": {"json_schema": '{"type":"object"}'}})
    deep_schema = '{"a":' * 3000 + "1" + "}" * 3000
    tool = {"type": "function", "function": {"name": "a", "parameters": "str"}}
    rows: list[tuple[bytes, str | None]] = [
        (good.encode(), None),
        (b'{"sampling_params": {"json_schema": "\xff\xfe"}}', "not UTF-8"),
        (b"[" * 5000 + b"]" * 5000, "nested deeper"),
        (json.dumps({"sampling_params": {"json_schema": deep_schema}}).encode(), "nested deeper"),
        (json.dumps({"sampling_params": "abc"}).encode(), "sampling_params"),
        (json.dumps({"sampling_params": [{"regex": "a"}, "x"]}).encode(), "sampling_params"),
        (json.dumps({"response_format": "x"}).encode(), "response_format"),
        (
            json.dumps({"response_format": {"type": "json_schema", "json_schema": "s"}}).encode(),
            "json_schema",
        ),
        (json.dumps({"tools": ["a"], "tool_choice": "required"}).encode(), "tools"),
        (json.dumps({"tools": [{"function": "x"}], "tool_choice": "required"}).encode(), "tool"),
        (json.dumps({"tools": [tool], "tool_choice": "required"}).encode(), "parameters"),
        (
            json.dumps(
                {"tools": [dict(tool, function={"name": "a"})], "tool_choice": {"function": "a"}}
            ).encode(),
            "tool_choice",
        ),
        (json.dumps({"sampling_params": {"json_schema": "not json {"}}).encode(), "not JSON"),
        (json.dumps({"body": "not json"}).encode(), "JSON"),
        (json.dumps({"messages": []}).encode(), None),
        (good.encode(), None),
    ]
    p = tmp_path / "hostile.jsonl"
    p.write_bytes(b"\n".join(r for r, _ in rows) + b"\n")
    return p, {n: why for n, (_, why) in enumerate(rows, 1) if why}


def test_hostile_lines_are_counted_errors_with_their_line(tmp_path: Path) -> None:
    log, bad = _hostile_log(tmp_path)
    sc = scan(log)
    assert sc.records == 16
    errors = {e["line"]: e["reason"] for e in sc.input_errors}
    assert sorted(errors) == sorted(bad)
    for line, part in bad.items():
        assert part in errors[line], (line, errors[line])
    assert [f.line for f in sc.found] == [1, 16] and sc.unconstrained == 1
    # nothing lost: every record is a grammar line, an unconstrained line or an error
    assert len({f.line for f in sc.found}) + sc.unconstrained + len(errors) == sc.records


def test_a_line_longer_than_the_cap_is_an_error_not_a_memory_spike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from schemaops import requestlog

    monkeypatch.setattr(requestlog, "MAX_LINE_BYTES", 1000)
    p = tmp_path / "long.jsonl"
    long_line = json.dumps({"text": "x" * (requestlog.MAX_LINE_BYTES + 10)})
    good = json.dumps({"sampling_params": {"regex": "a"}})
    p.write_text(good + "\n" + long_line + "\n" + good + "\n", encoding="utf-8")
    sc = scan(p)
    assert sc.records == 3 and [f.line for f in sc.found] == [1, 3]
    assert sc.input_errors[0]["line"] == 2 and "longer than" in sc.input_errors[0]["reason"]


def test_unreadable_logs_exit_2_without_a_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    bad_gz = tmp_path / "bad.jsonl.gz"
    bad_gz.write_bytes(b"this is not gzip at all\n")
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage\n\x80\x81\n")
    for log in (bad_gz, binary, tmp_path):
        for args in (
            ["registry", "drift", str(log), "--json"],
            ["warm", "--server", "http://127.0.0.1:9", "--retries", "0", "--from-log", str(log)],
        ):
            r = subprocess.run(
                [sys.executable, "-m", "schemaops", *args],
                cwd=repo,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert r.returncode == 2, (args, r.stdout, r.stderr)
            assert "Traceback" not in r.stderr and "error" in r.stderr, (args, r.stderr)


def test_a_fifo_or_device_log_is_refused_not_waited_on(tmp_path: Path) -> None:
    """``--from-log`` and ``registry drift`` read only regular files: a FIFO with no writer
    (which blocks the open forever) or ``/dev/zero`` behind a ``.jsonl`` name (which never
    ends) is exit 2 naming it. Hung past the subprocess limit before this (the audit's shards
    already refused them; the request-log reader did not)."""
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    fifo = tmp_path / "requests.jsonl"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    for log in (fifo, zero):
        for args in (
            ["registry", "drift", str(log), "--json"],
            ["warm", "--server", "http://127.0.0.1:9", "--retries", "0", "--from-log", str(log)],
        ):
            r = subprocess.run(
                [sys.executable, "-m", "schemaops", *args],
                cwd=repo,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert r.returncode == 2, (args, r.stdout, r.stderr)
            assert "not a regular file" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_hostile_log_through_both_commands(tmp_path: Path) -> None:
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    log, bad = _hostile_log(tmp_path)
    r = subprocess.run(
        [sys.executable, "-m", "schemaops", "registry", "drift", str(log), "--json"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    assert doc["records"] == 16 and sorted(e["line"] for e in doc["input_errors"]) == sorted(bad)
    r = subprocess.run(
        [sys.executable, "-m", "schemaops", "warm", "--server", "http://127.0.0.1:9"]
        + ["--retries", "0", "--from-log", str(log), "--registry", str(repo / "schemas")],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # the server is not there (exit 1), but the log was read: 13 unusable lines, no traceback
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"{len(bad)} unusable line(s)" in r.stderr


def test_requestlog_never_imports_drift() -> None:
    """drift builds on the request-log reader; the reader importing drift back (even lazily)
    was a circle."""
    import ast

    from schemaops import requestlog

    tree = ast.parse(Path(requestlog.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert "schemaops.registry.drift" not in imported
