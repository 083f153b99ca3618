"""Canary design of ``schemaops probe``: tokens, answers, judgements, false-verdict bounds.

Pure logic on hand-written answers (the shapes SGLang and vLLM return); the verdicts on real
servers are in tests/integration/test_probe.py.
"""

from __future__ import annotations

import json

import pytest

from schemaops.probe import canary as cn
from schemaops.probe.paths import BY_NAME, read
from schemaops.probe.run import Shot, path_verdict


def test_tokens_are_distinct_random_16_chars() -> None:
    t = cn.Tokens()
    seen = [t.take() for _ in range(500)]
    assert len(set(seen)) == 500
    assert all(len(s) == 16 and set(s) <= set(cn.ALPHABET) for s in seen)


def test_false_verdict_bounds_are_negligible() -> None:
    assert cn.P_TOKEN == pytest.approx(62.0**-16)
    assert cn.P_FALSE_ENFORCED_JSON < 1e-85
    assert cn.P_FALSE_ENFORCED_TEXT < 1e-56
    assert cn.P_FALSE_ENFORCED_CHOICE < 1e-28
    assert cn.P_FALSE_UNCONSTRAINED == 0.0


@pytest.mark.parametrize("kind", ["json", "regex", "ebnf", "choice"])
def test_every_listed_answer_is_satisfied_and_a_near_miss_is_broken(kind: str) -> None:
    c = cn.make(kind, cn.Tokens())  # type: ignore[arg-type]
    for a in c.answers():
        assert cn.judge(c, a, truncated=False)[0] == "satisfied"
    wrong = c.answers()[0].replace(c.choices[0], c.choices[0][:-1] + "!")
    assert cn.judge(c, wrong, truncated=False)[0] == "broken"


def test_json_answers_with_whitespace_and_any_order_pass() -> None:
    c = cn.make("json", cn.Tokens())
    text = json.dumps({"shape": c.shape, "same": c.fixed, "pick": c.choices[2]}, indent=2)
    assert cn.judge(c, text, truncated=False)[0] == "satisfied"
    extra = json.dumps({"shape": c.shape, "same": c.fixed, "pick": c.choices[2], "x": 1})
    assert cn.judge(c, extra, truncated=False)[0] == "broken"


def test_a_cut_off_possible_answer_is_inconclusive_never_broken() -> None:
    c = cn.make("json", cn.Tokens())
    full = c.answers()[0]
    for cut in range(1, len(full)):
        assert cn.judge(c, full[:cut], truncated=True)[0] == "inconclusive", full[:cut]
    assert cn.judge(c, "{" + " " * 300, truncated=True)[0] == "inconclusive"  # free whitespace
    assert cn.judge(c, "The sky is blue.", truncated=True)[0] == "broken"
    r = cn.make("regex", cn.Tokens())
    assert cn.judge(r, r.answers()[1][:9], truncated=True)[0] == "inconclusive"
    assert cn.judge(r, "blue", truncated=True)[0] == "broken"
    # the same cut without finish_reason length is an answer that broke the canary
    assert cn.judge(c, full[:10], truncated=False)[0] == "broken"


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ('{"a": [1, 2.5e3, true, null, "x\\u00', True),
        ('{"a": tru', True),
        ("[]", True),
        ("  ", True),
        ('{"a" 1', False),
        ("{'a': 1}", False),
        ('{"a": 1}}', False),
        ("[1,]", False),
        ("Sure! {", False),
        ('{"a": 01', False),
        ('"tab\there"', False),
    ],
)
def test_json_prefix(text: str, ok: bool) -> None:
    assert cn.is_json_prefix(text) is ok


def _chat(message: dict, finish: str = "stop") -> dict:
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}


def test_read_sglang_tool_array_content_and_openai_tool_calls() -> None:
    spec = BY_NAME["tools.required"]
    params = {"pick": "a"}
    arr = json.dumps([{"name": "record_canary", "parameters": params}])
    r = read(spec, _chat({"content": arr}))
    assert not isinstance(r, str) and r.tool_call and json.loads(r.text or "") == params
    cut = arr[:-1] + ', {"name": "record_canary", "param'  # a second call cut off
    r = read(spec, _chat({"content": cut}, "length"))
    assert not isinstance(r, str) and json.loads(r.text or "") == params
    calls = [{"function": {"name": "record_canary", "arguments": json.dumps(params)}}]
    r = read(spec, _chat({"content": "Sure.", "tool_calls": calls}, "tool_calls"))
    assert not isinstance(r, str) and r.tool_call and "prose next to the tool call" in r.notes
    r = read(spec, _chat({"content": None, "tool_calls": []}, "tool_calls"))
    assert not isinstance(r, str) and "finish_reason tool_calls but no tool call" in r.notes


def test_read_reasoning_content_and_abort_and_garbage() -> None:
    spec = BY_NAME["response_format.json_schema"]
    r = read(spec, _chat({"content": "", "reasoning_content": '{"pick": "x"}'}))
    assert not isinstance(r, str) and r.notes
    native = BY_NAME["generate.json_schema"]
    fr = {"type": "abort", "message": "no grammar"}
    r = read(native, {"text": "", "meta_info": {"finish_reason": fr}})
    assert not isinstance(r, str) and r.aborted == "no grammar"
    assert isinstance(read(native, {"ok": True}), str)
    assert isinstance(read(spec, "<html>proxy</html>"), str)


def test_verdict_aggregation() -> None:
    spec = BY_NAME["generate.json_schema"]
    ok, cut = Shot("satisfied", "ok"), Shot("inconclusive", "cut")
    bad, no = Shot("broken", "prose"), Shot("rejected", "HTTP 400: no")
    assert path_verdict([ok, cut, ok], spec)[0] == "enforced"
    assert path_verdict([ok, bad, ok], spec)[0] == "unconstrained"
    assert path_verdict([no], spec) == ("rejected", "HTTP 400: no")
    assert path_verdict([cut, cut], spec)[0] == "unproven"
    assert path_verdict([Shot("error", "timeout")], spec)[0] == "error"


def test_gate_rules() -> None:
    from schemaops.probe.run import summarise

    def doc(*verdicts: str) -> dict:
        return {"paths": [{"path": f"p{i}", "verdict": v} for i, v in enumerate(verdicts)]}

    d = doc("enforced", "rejected", "unproven")
    summarise(d, None)
    assert d["failed"] == []  # a loud refusal or no evidence is no finding without --paths
    d = doc("enforced", "unconstrained")
    summarise(d, None)
    assert d["failed"] == ["p1"]
    d = doc("rejected", "rejected", "unproven")  # enforces nothing (--grammar-backend none)
    summarise(d, None)
    assert d["failed"] == ["p0", "p1", "p2"]
    d = doc("enforced", "unproven")
    summarise(d, ["p0", "p1"])
    assert d["failed"] == ["p1"]
    d = {**doc("enforced"), "registry": [{"schema": "s", "verdict": "rejected"}]}
    summarise(d, None)
    assert d["failed"] == ["registry:s"]
