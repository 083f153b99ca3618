"""Random records, of every shape a log can hold by mistake, audited every way the audit
can run: one process, the lean loop against the general path (``--records``), byte-range
workers and schema-routed workers. Every way must give the same report, and none may raise.

Each case here was a bug once, found by this generator: a schema field that is a list (the
lean loop looked it up: a traceback), a valid text beside an unknown tool set (the lean loop
counted it ok, the general path an input error), that input error in a routed worker other
than the line's range worker (counted by none), an all-failed episode set (``--html`` drew an
error bar of negative length). Seeded: the same records every run."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from schemaops.audit import AuditOptions, run_audit

REPO = Path(__file__).resolve().parents[1]
REGISTRY = REPO / "schemas"
NAMES = ["create_ticket", "get_order", "kb_search", "issue_refund", "nope", "tool_call"]
TEXTS = [
    '{"customer_id": "3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f", "subject": "s", "body": "b"}',
    '{"order_id": "ORD-12345678"}',
    '{"order_id": "o1"}',
    '{"query": "refund"}',
    '{"tool": "get_order", "args": {"order_id": "ORD-12345678"}}',
    "{",
    '"x"',
    "null",
    "[]",
    '{"a": 1, "a": 2}',
    'Here: {"query": "q"}',
    '```json\n{"query": "q"}\n```',
    '{"query": "' + "é" * 300 + '"}',
    "1e999",
    '{"order_id": 18446744073709551616}',
    "",
]


def _weird(rng: random.Random, depth: int = 0) -> Any:
    c = rng.randrange(10)
    if c == 0:
        return None
    if c == 1:
        return rng.choice([True, False])
    if c == 2:
        return rng.randrange(-(10**20), 10**20)
    if c == 3:
        return rng.random() * 1e300
    if c == 4:
        return rng.choice(["", " ", "é", "\u202e", "<b>x</b>", "a\x00b", "🙂"])
    if c == 5 and depth < 3:
        return [_weird(rng, depth + 1) for _ in range(rng.randrange(3))]
    if c == 6 and depth < 3:
        keys = ["a", "", "text", "schema", "id"]
        return {rng.choice(keys): _weird(rng, depth + 1) for _ in range(rng.randrange(3))}
    if c == 7:
        return rng.choice(NAMES)
    return rng.choice(TEXTS)


def _record(rng: random.Random) -> str:
    if rng.random() < 0.05:
        return rng.choice(["", "not json", "[]", "[1,2]", "null", '"s"', '{"text": ', "{}"])
    rec: dict[str, Any] = {}
    if rng.random() < 0.9:
        rec["text"] = rng.choice(TEXTS) if rng.random() < 0.8 else _weird(rng)
    if rng.random() < 0.9:
        rec["schema"] = rng.choice(NAMES) if rng.random() < 0.8 else _weird(rng)
    for key, share in (("id", 0.3), ("finish_reason", 0.1), ("episode_id", 0.3), ("step", 0.3)):
        if rng.random() < share:
            rec[key] = _weird(rng) if key != "episode_id" else rng.choice(["e1", "e2", _weird(rng)])
    if rng.random() < 0.2:
        rec["meta_info"] = rng.choice(
            [{"finish_reason": {"type": "length"}, "completion_tokens": 5}, _weird(rng)]
        )
    if rng.random() < 0.1:
        rec["toolset"] = rng.choice(["support_agent", "nope", _weird(rng)])
    if rng.random() < 0.1:
        call = {"function": {"name": rng.choice(NAMES), "arguments": rng.choice(TEXTS)}}
        rec["choices"] = rng.choice([_weird(rng), [{"message": {"tool_calls": [call]}}]])
    line = json.dumps(rec, ensure_ascii=rng.random() < 0.5)
    return f"[{line}, {line}]" if rng.random() < 0.05 else line


def _report(path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int, route: str, **kw: Any) -> dict:
    monkeypatch.setenv("SCHEMAOPS_AUDIT_ROUTE", route)
    opts = AuditOptions(registry=str(REGISTRY), jobs=jobs, cache=False, **kw)
    doc = run_audit(str(path), opts).to_json()
    for key in ("elapsed_s", "jobs"):
        doc.pop(key)
    return doc


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_way_of_running_gives_one_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(_record(rng) for _ in range(400)) + "\n", encoding="utf-8")
    kw = {"episode_field": "episode_id", "step_field": "step"} if seed % 2 else {}
    one = _report(path, monkeypatch, 1, "", **kw)
    assert one["input_errors"] > 0 and one["ok"] > 0  # the mix holds both
    general = _report(path, monkeypatch, 1, "", records=str(tmp_path / "rows.jsonl"), **kw)
    assert general == one
    for jobs, route in ((2, "range"), (2, "schema"), (3, "schema")):
        assert _report(path, monkeypatch, jobs, route, **kw) == one, (jobs, route)


#: real bodies of each kind the audit reads, mutated at random by ``_mutated``
BODIES: list[Any] = [
    {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": [
            {"type": "message", "content": [{"type": "output_text", "text": TEXTS[1]}]},
            {"type": "function_call", "name": "get_order", "arguments": TEXTS[2]},
        ],
        "usage": {"output_tokens": 12},
    },
    {
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "message", "content": [{"type": "refusal", "refusal": "no"}]}],
    },
    {
        "custom_id": "req-1",
        "response": {
            "status_code": 200,
            "body": {"choices": [{"message": {"content": TEXTS[3]}, "finish_reason": "stop"}]},
        },
    },
    {"custom_id": "req-2", "response": None, "error": {"message": "boom"}},
    {
        "type": "message",
        "content": [
            {"type": "text", "text": TEXTS[3]},
            {"type": "tool_use", "name": "get_order", "input": {"order_id": "ORD-12345678"}},
        ],
        "stop_reason": "max_tokens",
        "usage": {"output_tokens": 5},
    },
    {
        "candidates": [
            {
                "content": {"parts": [{"text": TEXTS[3]}, {"functionCall": {"name": "kb_search"}}]},
                "finishReason": "MAX_TOKENS",
            }
        ],
        "usageMetadata": {"candidatesTokenCount": 9},
    },
    {"candidates": [{"finishReason": "SAFETY"}], "promptFeedback": {"blockReason": "SAFETY"}},
    {
        "text": TEXTS[1],
        "schema": "get_order",
        "meta_info": {"finish_reason": {"type": "length"}, "completion_tokens": 7},
    },
    [{"text": "{}", "schema": "kb_search"}, {"text": TEXTS[3], "schema": "kb_search"}],
    {
        "choices": [
            {
                "message": {
                    "content": None,
                    "tool_calls": [{"function": {"name": "kb_search", "arguments": TEXTS[3]}}],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "episode_id": "e1",
        "step": 1,
    },
]


def _mutated(rng: random.Random) -> str:
    """One body, changed in one to three places: a value replaced by a random one or by
    another body, a key removed or added, a list item repeated."""
    rec = copy.deepcopy(rng.choice(BODIES))
    for _ in range(rng.randrange(1, 4)):
        spots: list[tuple[Any, Any]] = []
        stack = [rec]
        while stack:
            node = stack.pop()
            keys = list(node) if isinstance(node, dict) else range(len(node))
            for k in keys:
                spots.append((node, k))
                if isinstance(node[k], (dict, list)):
                    stack.append(node[k])
        if not spots:
            break
        node, k = rng.choice(spots)
        r = rng.random()
        if r < 0.35:
            node[k] = _weird(rng)
        elif r < 0.5 and isinstance(node, dict):
            del node[k]
        elif r < 0.6 and isinstance(node, list):
            node.append(copy.deepcopy(node[k]))
        elif r < 0.8 and isinstance(node, dict):
            keys = ["schema", "toolset", "finish_reason", "step", "text", "type", "output"]
            node[rng.choice(keys)] = _weird(rng)
        else:
            node[k] = copy.deepcopy(rng.choice(BODIES))
    return json.dumps(rec, ensure_ascii=rng.random() < 0.5)


@pytest.mark.parametrize("seed,kw", [(7, {}), (8, {"tools": "support_agent"})])
def test_mutated_bodies_give_one_report_every_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, kw: dict
) -> None:
    rng = random.Random(seed)
    path = tmp_path / "bodies.jsonl"
    path.write_text("\n".join(_mutated(rng) for _ in range(400)) + "\n", encoding="utf-8")
    one = _report(path, monkeypatch, 1, "", **kw)
    assert one["input_errors"] > 0 and one["ok"] > 0
    assert _report(path, monkeypatch, 1, "", records=str(tmp_path / "r.jsonl"), **kw) == one
    for jobs, route in ((2, "range"), (2, "schema"), (3, "schema")):
        assert _report(path, monkeypatch, jobs, route, **kw) == one, (jobs, route)


def test_a_step_is_counted_under_one_key_whatever_the_order(tmp_path: Path) -> None:
    """``True``, ``1`` and ``1.0`` are one dict key in Python, so the step printed depended on
    which record came first (and routed workers merge in another order); ``"1"`` and ``1``
    were printed under one JSON key, one count overwriting the other. Steps are now keyed by
    ``stats.step_key``: the same report in either order."""
    ok = '{"order_id": "ORD-12345678"}'
    steps: list[Any] = [1, True, 1.0, "1", "01", 2.0, 2, "x", [1], 1e300, "9" * 5000]
    docs = []
    for order in (steps, steps[::-1]):
        rows = [{"schema": "get_order", "text": ok, "episode_id": "e", "step": s} for s in order]
        path = tmp_path / "log.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        opts = AuditOptions(registry=str(REGISTRY), jobs=1, cache=False)
        docs.append(run_audit(str(path), opts).to_json()["episodes"]["by_step"])
    assert docs[0] == docs[1]
    assert {k: v["outputs"] for k, v in docs[0].items()} == {
        "1": 3,  # 1, 1.0, "1"
        "2": 2,  # 2.0, 2
        "1e+300": 1,
        "01": 1,
        "True": 1,
        "x": 1,
        "9" * 5000: 1,  # a string, not an integer past int()'s digit limit (a traceback)
    }
