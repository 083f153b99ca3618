"""SGLang's own JSON request log (``--log-requests-format json``) read by watch: lines in
the shape the 0.5.23 dev server writes (checked against its file in
tests/integration/test_watch_server.py), turned into records the audit classifies."""

from __future__ import annotations

import json
from pathlib import Path

from watch_support import ITEM, registry, watch_once

from schemaops.audit.read.sglang_log import CUT, SchemaNames, adapt

STAMP = b"[2026-12-01 19:33:59] "


def _event(event: str, schema: str | None, out: object = None, rid: str = "r1") -> bytes:
    params: dict = {"max_new_tokens": 16, "temperature": 0.0}
    if schema is not None:
        params["json_schema"] = schema
    doc: dict = {"timestamp": "2026-12-01T19:33:59.550188", "event": event, "rid": rid}
    doc["obj"] = {"rid": rid, "text": "Hi", "sampling_params": params}
    if out is not None:
        doc["out"] = out
    return STAMP + json.dumps(doc).encode()


def _out(text: str, finish: dict | None = None) -> dict:
    return {"text": text, "meta_info": {"finish_reason": finish or {"type": "stop"}}}


def test_finished_events_become_records_named_by_the_registry(tmp_path: Path) -> None:
    names = SchemaNames(str(registry(tmp_path)))
    spaced = json.dumps(ITEM, indent=2)  # another serialisation of the same schema
    lines = [
        _event("request.received", spaced),
        _event("request.finished", spaced, _out('{"n": 1}')),
        _event("request.finished", None, _out("hello")),  # unconstrained: no output to check
        _event("request.finished", '{"type": "string"}', _out('"x"')),
        b'{"schema": "item", "text": "{\\"n\\": 2}"}',  # a plain record: left as it is
    ]
    recs, dropped = adapt(lines, names)
    assert dropped == 2
    docs = [json.loads(r) for r in recs]
    assert docs[0] == {"schema": "item", "id": "r1", "text": '{"n": 1}',
                       "meta_info": {"finish_reason": {"type": "stop"}}}  # fmt: skip
    assert docs[1]["schema"].startswith("unregistered:")
    assert docs[2]["schema"] == "item"


def test_abort_is_the_engine_error_and_a_cut_output_is_an_input_error(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    schema = json.dumps(ITEM)
    abort = {"type": "abort", "message": "Failed to compile json grammar: Grammar preprocessing "
             "timed out", "status_code": 400}  # fmt: skip
    cut = "x" * (CUT // 2) + "..." + "y" * (CUT // 2)
    log = tmp_path / "vm_0.log"
    log.write_bytes(
        b"\n".join(
            [
                _event("request.finished", schema, _out('{"n": 1}')),
                _event("request.finished", schema, _out("\ub338", abort), "r2"),
                _event("request.finished", schema, _out(cut, {"type": "length"}), "r3"),
                _event("request.finished", schema, _out('{"n": "x"}'), "r4"),
            ]
        )
        + b"\n"
    )
    snap = watch_once([str(tmp_path)], reg)
    assert snap["by_schema"] == {"item": {"ok": 1, "schema_violation:type": 1}}
    assert snap["input_errors"] == 2 and snap["engine_errors"] == {"item": 1}
    assert list(snap["poisoned"]) == ["item"]


def test_a_schema_cut_by_the_log_is_named_by_its_two_ends(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    big = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(200)}}
    (reg / "big.json").write_text(json.dumps(big))
    text = json.dumps(big, separators=(",", ":"))
    assert len(text) > CUT
    logged = text[: CUT // 2] + "..." + text[-(CUT // 2) :]
    assert SchemaNames(str(reg)).name(logged) == "big"
    assert SchemaNames(str(reg), fixed="item").name(logged) == "item"  # --schema names all


def _log_file(tmp_path: Path, n: int) -> tuple[Path, Path]:
    """A request log of ``n`` requests (received + finished events), every fifth output
    violating the schema, one unconstrained request, and the registry it names."""
    reg = registry(tmp_path)
    schema = json.dumps(ITEM)
    lines = []
    for i in range(n):
        rid = f"r{i}"
        text = json.dumps({"n": "x"}) if i % 5 == 0 else json.dumps({"n": i})
        lines += [
            _event("request.received", schema, rid=rid),
            _event("request.finished", schema, _out(text), rid),
        ]
    lines.append(_event("request.finished", None, _out("hello"), "plain"))
    log = tmp_path / "host_0.log"
    log.write_bytes(b"\n".join(lines) + b"\n")
    return log, reg


def test_audit_reads_the_request_log_as_watch_does(tmp_path: Path) -> None:
    """``audit`` reads the same log: each finished event is an output named by the registry,
    the other events are counted as skipped (never outputs, never input errors), and one
    process and two workers over byte ranges agree."""
    from schemaops.audit import AuditOptions, run_audit
    from schemaops.audit.report.result import to_json

    log, reg = _log_file(tmp_path, 400)
    docs = []
    for jobs in (1, 2):
        result = run_audit(str(log), AuditOptions(registry=str(reg), jobs=jobs))
        docs.append(to_json(result))
    for doc in docs:
        assert doc["lines"] == 801
        assert doc["outputs"] == 400 and doc["ok"] == 320 and doc["input_errors"] == 0
        assert doc["categories"] == {"ok": 320, "schema_violation:type": 80}
        assert doc["log_events_skipped"] == 401  # 400 received events, 1 unconstrained
        assert doc["examples"]["schema_violation:type"][0]["line"] == 2  # the log's own line
    assert docs[0]["by_schema"] == docs[1]["by_schema"]
    from schemaops.audit.report.markdown import render_markdown

    assert "401 event(s) with no structured output" in render_markdown(docs[0])


def test_audit_names_a_broken_registry_once(tmp_path: Path) -> None:
    """A registry file that cannot be read: the schemas that load are still named, and why
    the others cannot be is said once, not once per line."""
    from schemaops.audit import AuditOptions, run_audit
    from schemaops.audit.report.result import to_json

    log, reg = _log_file(tmp_path, 3)
    (reg / "broken.json").write_text("{not json")
    doc = to_json(run_audit(str(log), AuditOptions(registry=str(reg))))
    assert doc["outputs"] == 3 and doc["categories"] == {"ok": 2, "schema_violation:type": 1}
    messages = [e["message"] for e in doc["input_error_lines"]]
    assert len(messages) == 1 and "broken.json" in messages[0], messages
