"""Audit diagnoses (``schemaops/audit/tally/diagnose.py``) on hand-written records.

The shapes here are the ones SGLang and vLLM return (OpenAI chat choices with
``finish_reason``, ``reasoning_content`` and ``tool_calls``; ``/generate`` answers with
``meta_info.finish_reason``) for cases the tiny dev model cannot be made to produce on
demand; tests/integration/test_audit_diagnoses_server.py audits what the real dev server
produced.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from schemaops.audit.tally.diagnose import FIXES, control_char_in_string

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 20}},
    "required": ["name"],
}


def _chat(content, finish="stop", **msg) -> dict:
    return {
        "choices": [{"message": {"content": content, **msg}, "finish_reason": finish}],
    }


RECORDS = [
    # 0 ok
    _chat('{"name": "a"}'),
    # 1 free whitespace until max_tokens
    _chat('{"name": "a"' + " " * 50 + "\n" * 40, "length"),
    # 2 a raw control character inside a string (xgrammar minLength/maxLength)
    _chat('{"name": "a\x01b"}'),
    # 3 truncated by the budget; 4 truncated otherwise (stop string inside the JSON)
    {"text": '{"name": "ab', "meta_info": {"finish_reason": {"type": "length"}}},
    {"text": '{"name": "ab', "meta_info": {"finish_reason": {"type": "stop"}}},
    # 5 the JSON went to reasoning_content
    _chat("", reasoning_content='{"name": "a"}'),
    # 6 finish_reason tool_calls but no call
    _chat("<tool_call>{...}", "tool_calls"),
    # 7 prose next to a call (the call itself is fine)
    _chat(
        "Sure, calling it.",
        "tool_calls",
        tool_calls=[{"function": {"name": "f", "arguments": '{"name": "a"}'}}],
    ),
]
EXPECTED = {
    "whitespace_runaway": 1,
    "control_char_in_string": 1,
    "truncated_at_max_tokens": 2,  # records 1 and 3
    "truncated_other": 1,
    "json_in_reasoning_content": 1,
    "prose_with_tool_calls": 1,
}


def _audit(tmp_path: Path, records: list[dict], *extra: str) -> dict:
    data = tmp_path / "out.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(SCHEMA))
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "schemaops",
            "audit",
            str(data),
            "--schema",
            str(schema),
            "--json",
            "--no-cache",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_each_diagnosis_is_counted_with_its_fix(tmp_path: Path, jobs: str) -> None:
    doc = _audit(tmp_path, RECORDS * 3, "--jobs", jobs)
    counts = {k: v["count"] for k, v in doc["diagnoses"].items()}
    # record 6 is prose in content with finish_reason tool_calls and no call
    assert counts.pop("tool_calls_finish_without_calls") == 3
    assert counts == {k: 3 * v for k, v in EXPECTED.items()}
    for name, d in doc["diagnoses"].items():
        assert d["fix"] == FIXES[name]
    assert doc["ok"] == 3 * 2  # record 0 and record 7's call
    assert doc["outputs"] == 3 * 9


def test_plain_records_keep_todays_document(tmp_path: Path) -> None:
    doc = _audit(tmp_path, [{"text": '{"name": "a"}'}, {"text": '{"name": 1}'}, {"text": "hi"}])
    # "hi" is text no JSON grammar lets through: the one diagnosis a plain record gets
    assert list(doc["diagnoses"]) == ["unconstrained_output"]
    assert doc["categories"] == {
        "ok": 1,
        "json_parse_failure": 1,
        "schema_violation:type": 1,
    }


def test_control_char_scan() -> None:
    assert control_char_in_string('{"a": "x\ny"}')
    assert not control_char_in_string('{\n  "a": "x\\ny"\n}')
    assert control_char_in_string('{"a": "\\"\t"}')  # a tab after an escaped quote


def _walk_control_char(text: str) -> bool:
    """The reference: a walk over the characters, as the scan was first written."""
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            elif ch < " ":
                return True
        elif ch == '"':
            in_string = True
    return False


def test_control_char_scan_equals_the_walk() -> None:
    """Every text of up to 6 characters over the characters that matter (quote, backslash,
    control characters, others), then longer seeded ones: the regex scan answers as the
    walk does."""
    import itertools
    import random

    alphabet = ['"', "\\", "\n", "\t", "\x00", "a", " ", "{", ":", "\u00e9"]
    for n in range(7):
        for chars in itertools.product(alphabet[:7] if n > 5 else alphabet, repeat=n):
            text = "".join(chars)
            assert control_char_in_string(text) is _walk_control_char(text), repr(text)
    rng = random.Random(24)
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(8, 60)))
        assert control_char_in_string(text) is _walk_control_char(text), repr(text)


def _poison_log() -> list[dict]:
    """Two schemas interleaved: ``a`` fine throughout (1 failure in 10), ``b`` fine until
    record 150, then every output fails (a grammar cached as invalid returns no JSON). With
    --jobs 2 and 3 the run of failures crosses chunk boundaries."""
    recs = []
    for i in range(400):
        a_ok = i % 10 != 3
        recs.append({"schema": "a", "text": '{"name": "x"}' if a_ok else "oops"})
        b_ok = i < 150 and i % 10 != 7
        recs.append({"schema": "b", "text": '{"name": "y"}' if b_ok else ""})
    return recs


@pytest.mark.parametrize("jobs", ["1", "2", "3"])
def test_a_schema_failing_from_some_record_on_is_poisoned(tmp_path: Path, jobs: str) -> None:
    reg = tmp_path / "reg"
    reg.mkdir()
    for name in ("a", "b"):
        (reg / f"{name}.json").write_text(json.dumps(SCHEMA))
    data = tmp_path / "log.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _poison_log()))
    r = subprocess.run(
        [sys.executable, "-m", "schemaops", "audit", str(data), "--registry", str(reg)]
        + ["--json", "--no-cache", "--jobs", jobs],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    poisoned = json.loads(r.stdout)["diagnoses"]["poisoned"]
    assert poisoned["count"] == 1 and "flush_cache" in poisoned["fix"]
    # b's failures from record 150 on: line 2*150+2 = 302; its ok outputs before: 150 - 15
    assert poisoned["schemas"] == [
        {"schema": "b", "since_line": 302, "failures": 250, "ok_before": 135}
    ]


def test_terminal_report_names_each_diagnosis_and_its_fix(tmp_path: Path) -> None:
    data, schema = tmp_path / "out.jsonl", tmp_path / "s.json"
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    schema.write_text(json.dumps(SCHEMA))
    r = subprocess.run(
        [sys.executable, "-m", "schemaops", "audit", str(data), "--schema", str(schema)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "300"},
    )
    assert r.returncode == 0, r.stderr
    assert "whitespace_runaway: 1 output(s); fix: SGLang: --constrained-json-disable" in r.stdout
    assert "json_in_reasoning_content: 1 output(s)" in r.stdout


def _records_run(tmp_path: Path, inputs: list[str], *extra: str) -> tuple[dict, list[dict]]:
    schema, out = tmp_path / "s.json", tmp_path / f"rec{len(list(tmp_path.iterdir()))}.jsonl"
    schema.write_text(json.dumps(SCHEMA))
    r = subprocess.run(
        [sys.executable, "-m", "schemaops", "audit", *inputs, "--schema", str(schema)]
        + ["--json", "--no-cache", "--records", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), [json.loads(x) for x in out.read_text().splitlines()]


def test_records_carry_each_outputs_diagnoses(tmp_path: Path) -> None:
    """Trust #7: each --records row lists its output's diagnoses; per diagnosis the rows sum
    to the report's count, in one process, with --jobs 2 and over two shards."""
    recs = RECORDS * 3
    whole = tmp_path / "all.jsonl"
    whole.write_text("".join(json.dumps(r) + "\n" for r in recs))
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in recs[:10]))
    second.write_text("".join(json.dumps(r) + "\n" for r in recs[10:]))
    runs = [
        _records_run(tmp_path, [str(whole)]),
        _records_run(tmp_path, [str(whole)], "--jobs", "2"),
        _records_run(tmp_path, [str(first), str(second)]),
        _records_run(tmp_path, [str(first), str(second)], "--jobs", "2"),
    ]
    for doc, rows in runs:
        counts = {k: v["count"] for k, v in doc["diagnoses"].items()}
        summed: dict[str, int] = {}
        for row in rows:
            assert isinstance(row["diagnoses"], list)
            if row["category"] == "ok":
                assert row["diagnoses"] == []
            for d in row["diagnoses"]:
                summed[d] = summed.get(d, 0) + 1
        assert len(counts) >= 6 and summed == counts
        by_line = {(r["line"], r.get("tool_call")): r["diagnoses"] for r in rows}
        assert by_line[(2, None)] == ["truncated_at_max_tokens", "whitespace_runaway"]
        assert by_line[(3, None)] == ["control_char_in_string"]
        assert by_line[(6, None)] == ["json_in_reasoning_content"]
    # the same rows whatever the split (the shard runs add shard and shard_line)
    plain = [runs[0][1], runs[1][1]]
    sharded = [
        [{k: v for k, v in r.items() if not k.startswith("shard")} for r in rows]
        for rows in (runs[2][1], runs[3][1])
    ]
    assert plain[0] == plain[1] == sharded[0] == sharded[1]


def test_prose_fences_and_broken_syntax_say_constrained_decoding_is_off(tmp_path: Path) -> None:
    """Issue 34 #7: prose before the JSON, code fences, text after it, Python literals and
    broken syntax are what a grammar makes impossible; the diagnosis says so and names the
    request field and the server flags, as the example audit shows (55 such outputs there).
    A truncated output is not one of them (a grammar does not stop max_tokens), nor are
    outputs a message-level diagnosis explains (a tool-call parser miss)."""
    texts = [
        'Sure! Here it is:\n{"name": "a"}',
        '```json\n{"name": "a"}\n```',
        '{"name": "a"} Hope this helps.',
        '{"name": True}',
        "{name: 'a'}",
        '{"name": "ab',
    ]
    # the ok output last: no run of failures to the end (``poisoned``)
    doc = _audit(tmp_path, [{"text": t} for t in texts] + [RECORDS[6], RECORDS[0]])
    d = doc["diagnoses"]
    assert d["unconstrained_output"]["count"] == 5
    fix = d["unconstrained_output"]["fix"]
    assert fix == FIXES["unconstrained_output"]
    assert fix.startswith("constrained decoding is off on this path")
    for flag in ("response_format", "--grammar-backend xgrammar", "--structured-outputs-config"):
        assert flag in fix, flag
    assert "schemaops probe" in fix  # a command that exists, which shows the path's state
    assert set(d) == {"unconstrained_output", "truncated_other", "tool_calls_finish_without_calls"}


def test_example_audit_names_constrained_decoding(tmp_path: Path) -> None:
    """The shipped example (the README's first audit): its prose and fenced outputs get the
    advice in the terminal report."""
    r = subprocess.run(
        [sys.executable, "-m", "schemaops", "audit", "audits/example-outputs.jsonl"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "300"},
    )
    assert r.returncode == 0, r.stderr
    assert "unconstrained_output: 55 output(s); fix: constrained decoding is off" in r.stdout
