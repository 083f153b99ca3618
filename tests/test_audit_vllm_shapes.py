"""The audit on vLLM's answers: chat (``content``, ``tool_calls``, ``reasoning``,
``finish_reason``) and completions (``choices[i].text``), each output with its source.

``tests/data/vllm_response_bodies.json`` holds real bodies of the vLLM dev server (its header
says how they were captured). What the tiny random model cannot be made to produce (a parsed
tool call, a reasoning parser's split, a parser that missed the call) is built below on the
same vLLM 0.32 message shape, and says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console

from schemaops.audit.options import AuditOptions
from schemaops.audit.report.terminal import render_terminal
from schemaops.audit.run.pipeline import run_audit

DATA = json.loads((Path(__file__).parent / "data" / "vllm_response_bodies.json").read_text())
BODIES: dict[str, Any] = {k: v["response"] for k, v in DATA["bodies"].items()}


def _audit(tmp_path: Path, records: list[Any], jobs: int = 1) -> tuple[dict, list[dict]]:
    schema = tmp_path / "item.json"
    schema.write_text(json.dumps(DATA["schema"]))
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    rows = tmp_path / "rows.jsonl"
    opts = AuditOptions(schema=str(schema), records=str(rows), cache=False, jobs=jobs)
    doc = run_audit(str(log), opts).to_json()
    return doc, [json.loads(line) for line in rows.read_text().splitlines()]


def _message(content: Any, finish: str = "stop", **fields: Any) -> dict:
    """A vLLM 0.32 chat answer (the captured message's keys), with ``fields`` set."""
    body = json.loads(json.dumps(BODIES["chat_response_format_json_schema"]))
    choice = body["choices"][0]
    choice["message"].update(content=content, **fields)
    choice["finish_reason"] = finish
    return body


def test_every_choice_of_a_real_vllm_answer_is_audited_with_its_source(tmp_path: Path) -> None:
    """A completions request with two prompts and a chat request with n 2 answer with two
    choices each: both are outputs (only choices[0] was read before)."""
    doc, rows = _audit(tmp_path, list(BODIES.values()))
    assert doc["outputs"] == 9 and doc["input_errors"] == 0
    assert [(r["line"], r["source"], r["category"]) for r in rows] == [
        (1, "choices[0].message.content", "ok"),
        (2, "choices[0].message.content", "json_parse_failure"),  # max_tokens 5
        (3, "choices[0].text", "ok"),
        (4, "choices[0].text", "ok"),
        (4, "choices[1].text", "ok"),
        (5, "choices[0].message.content", "ok"),
        (5, "choices[1].message.content", "ok"),
        (6, "choices[0].message.content", "json_parse_failure"),  # hermes markup, cut
        (7, "choices[0].message.content", "json_parse_failure"),  # tool_choice auto: newlines
    ]
    assert doc["sources"] == {
        "choices[0].message.content": {"outputs": 5, "ok": 2},
        "choices[0].text": {"outputs": 2, "ok": 2},
        "choices[1].message.content": {"outputs": 1, "ok": 1},
        "choices[1].text": {"outputs": 1, "ok": 1},
    }
    # Both cut answers stopped at max_tokens (their own choice's finish_reason).
    assert doc["diagnoses"]["truncated_at_max_tokens"]["count"] == 2


def test_a_choice_is_diagnosed_by_its_own_finish_reason(tmp_path: Path) -> None:
    body = json.loads(json.dumps(BODIES["completions_two_prompts"]))
    body["choices"][1].update(text='{"name":"ab', finish_reason="length")
    doc, rows = _audit(tmp_path, [body])
    assert [r["category"] for r in rows] == ["ok", "json_parse_failure"]
    assert list(doc["diagnoses"]) == ["truncated_at_max_tokens"]


def test_vllm_tool_calls_reasoning_and_missed_calls(tmp_path: Path) -> None:
    """Built on the captured message (the tiny model cannot produce these): a named tool
    choice's parsed call (vLLM: content "" and finish_reason stop), two calls, the answer
    left in vLLM 0.32's ``reasoning`` field, and a call the hermes parser did not parse
    (vLLM answers finish_reason stop with the markup in content)."""
    call = {"id": "chatcmpl-tool-1", "type": "function"}
    records = [
        _message(
            "",
            tool_calls=[
                {**call, "function": {"name": "item", "arguments": '{"name":"a","ok":true}'}}
            ],
        ),
        _message(
            None,
            "tool_calls",
            tool_calls=[
                {**call, "function": {"name": "item", "arguments": '{"name":"a","ok":true}'}},
                {**call, "function": {"name": "item", "arguments": '{"name":"b"}'}},
            ],
        ),
        _message(None, reasoning='{"name":"a","ok":true}'),
        _message(
            '<tool_call>\n{"name": "item", "arguments": {"name": "a", "ok": true}}\n</tool_call>'
        ),
    ]
    doc, rows = _audit(tmp_path, records)
    assert [(r["source"], r["category"]) for r in rows] == [
        ("choices[0].message.tool_calls[0].function.arguments", "ok"),
        ("choices[0].message.tool_calls[0].function.arguments", "ok"),
        ("choices[0].message.tool_calls[1].function.arguments", "schema_violation:required"),
        # What the application reads is the empty content: a failure, diagnosed below.
        ("choices[0].message.content", "json_parse_failure"),
        ("choices[0].message.content", "json_parse_failure"),
    ]
    assert doc["sources"]["choices[0].message.tool_calls[0].function.arguments"] == {
        "outputs": 2,
        "ok": 2,
    }
    assert set(doc["diagnoses"]) == {"json_in_reasoning_content", "tool_calls_finish_without_calls"}
    assert doc["diagnoses"]["tool_calls_finish_without_calls"]["count"] == 1


def test_plain_records_keep_their_shape_and_get_source_text(tmp_path: Path) -> None:
    doc, rows = _audit(tmp_path, [{"text": '{"name":"a","ok":true}'}, {"output": "{}"}])
    assert [r["source"] for r in rows] == ["text", "output"]
    assert doc["sources"] == {"output": {"outputs": 1, "ok": 0}, "text": {"outputs": 1, "ok": 1}}
    assert "diagnoses" not in doc


def test_terminal_report_counts_outputs_per_source(tmp_path: Path) -> None:
    doc, _ = _audit(tmp_path, list(BODIES.values()))
    con = Console(record=True, width=200)
    render_terminal(doc, con)
    text = con.export_text()
    assert (
        "Outputs by source: choices[0].message.content 5 (2 ok), choices[0].text 2 (2 ok)" in text
    )


def test_source_counts_merge_across_jobs(tmp_path: Path) -> None:
    """--jobs splits the file; each worker's per-source counts add up to one run's."""
    records = list(BODIES.values()) * 40
    one, _ = _audit(tmp_path, records)
    two, rows = _audit(tmp_path, records, jobs=2)
    assert two["jobs"] == 2 and two["sources"] == one["sources"]
    assert one["sources"]["choices[0].message.content"] == {"outputs": 200, "ok": 80}
    assert len(rows) == 9 * 40 and rows[-1]["source"] == "choices[0].message.content"
