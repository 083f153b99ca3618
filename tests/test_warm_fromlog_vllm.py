"""``warm --from-log`` and ``registry drift`` read vLLM request bodies: ``structured_outputs``
with the schema as an object (key ``json.dumps`` of it) or as a string (key: its bytes)."""

from __future__ import annotations

import json
from pathlib import Path

from schemaops.registry import load_registry
from schemaops.registry.drift import registry_index
from schemaops.requestlog import scan
from schemaops.warm.fromlog import plan_from_log

REPO = Path(__file__).resolve().parents[1]


def _log(tmp_path: Path, bodies: list[dict]) -> Path:
    path = tmp_path / "requests.jsonl"
    path.write_text("\n".join(json.dumps(b) for b in bodies) + "\n")
    return path


def _chat(**fields: object) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": "x"}], **fields}


def test_structured_outputs_object_and_string_are_two_keys(tmp_path: Path) -> None:
    reg = load_registry(REPO / "schemas")
    schema = next(iter(reg)).bundled()
    compact = json.dumps(schema, separators=(",", ":"))
    log = _log(
        tmp_path,
        [
            _chat(structured_outputs={"json": schema}),
            _chat(structured_outputs={"json": schema}),
            _chat(structured_outputs={"json": compact}),
            _chat(structured_outputs={"regex": "[a-z]+"}),
            _chat(guided_json=schema),  # vLLM >= 0.12 ignores it: unconstrained, not warmed
        ],
    )
    items, sc = plan_from_log(log, registry_index(reg))
    assert sc.unconstrained == 1 and not sc.input_errors
    by_key = {it.key: it for it in items}
    assert set(by_key) == {json.dumps(schema), compact, "[a-z]+"}
    obj = by_key[json.dumps(schema)]
    assert obj.seen == 2 and obj.fragment == {"structured_outputs": {"json": schema}}
    assert obj.matches == by_key[compact].matches == next(iter(reg)).name  # same schema
    assert by_key[compact].fragment == {"structured_outputs": {"json": compact}}  # bytes kept


def test_bad_structured_outputs_are_input_errors(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        [_chat(structured_outputs={"json": "{not json"}), _chat(structured_outputs={"json": 3})],
    )
    sc = scan(log)
    assert [e["line"] for e in sc.input_errors] == [1, 2]
    assert "not JSON" in sc.input_errors[0]["reason"]


def test_drift_counts_vllm_object_and_string_as_two_entries(tmp_path: Path) -> None:
    from schemaops.registry.drift import run_drift

    schema = next(iter(load_registry(REPO / "schemas"))).bundled()
    log = _log(
        tmp_path,
        [
            _chat(structured_outputs={"json": schema}),
            _chat(structured_outputs={"json": json.dumps(schema, separators=(",", ":"))}),
        ],
    )
    doc = run_drift(log, REPO / "schemas")
    assert doc["drifting"] == 1 and doc["cache_entries"] == 2 and doc["extra_compiles"] == 1
