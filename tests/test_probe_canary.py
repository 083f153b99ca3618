"""Canary design of ``schemaops probe``: tokens, answers, judgements, false-verdict bounds.

Pure logic on hand-written answers (the shapes SGLang and vLLM return); the verdicts on real
servers are in tests/integration/test_probe.py.
"""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import pytest

from schemaops.http.client import Attempt
from schemaops.http.retry import AttemptOutcome
from schemaops.probe import canary as cn
from schemaops.probe import jsonscan
from schemaops.probe.paths import BY_NAME, Reading, read
from schemaops.probe.run import Shot, judge_shot, path_verdict, registry_verdict


def test_tokens_are_distinct_random_16_chars() -> None:
    t = cn.Tokens()
    seen = [t.take() for _ in range(500)]
    assert len(set(seen)) == 500
    assert all(len(s) == 16 and set(s) <= set(cn.ALPHABET) for s in seen)


class _Scripted(cn.Tokens):
    """Tokens in a given order: one draw of a small design, so a test can take every draw."""

    def __init__(self, draw: tuple[str, ...]) -> None:
        super().__init__()
        self._draw = iter(draw)

    def take(self) -> str:
        return next(self._draw)


def _answer(kind: str, pick: str, same: str, shape: str) -> str:
    """An answer that names fixed tokens (what a model that never saw them can do at best)."""
    if kind == "json":
        return json.dumps({"pick": pick, "same": same, "shape": shape})
    return f"{pick}-{same}" if kind in ("regex", "ebnf") else pick


@pytest.mark.parametrize("kind", ["json", "regex", "choice"])
def test_false_enforced_bound_is_the_exact_chance_of_a_blind_answer(kind: str) -> None:
    """The bound ``false_enforced_bound`` gives (and the probe reports) against an independent,
    exact count: a 3-letter alphabet, 2-character tokens (9 tokens) and an enum of 2, every
    ordered draw of the canary's 4 distinct tokens (9*8*7*6 = 3,024) made into a canary by
    ``make`` and judged by ``judge``. An answer that names fixed distinct tokens satisfies a
    fraction of the draws exactly equal to the bound; one that names a token twice, none. The
    old ``ENUM_SIZE * P_TOKEN**3`` (tokens as if drawn with replacement) is 2/729 here, below
    the true 2/504: not a bound."""
    alphabet, length, enum = "abc", 2, 2
    space = len(alphabet) ** length
    tokens = ["".join(t) for t in itertools.product(alphabet, repeat=length)]
    draws = list(itertools.permutations(tokens, enum + 2))
    answers = {
        "distinct": _answer(kind, "aa", "bb", "cc"),
        "repeated": _answer(kind, "aa", "aa", "aa"),
    }
    hits = dict.fromkeys(answers, 0)
    for draw in draws:
        can = cn.make(kind, _Scripted(draw), enum=enum)  # type: ignore[arg-type]
        for name, text in answers.items():
            hits[name] += cn.judge(can, text, truncated=False)[0] == "satisfied"
    bound = cn.false_enforced_bound(kind, space=space, enum=enum, drawn=0)
    assert Fraction(hits["distinct"], len(draws)) == bound
    if kind != "choice":  # a choice answer names one token: nothing to repeat
        assert hits["repeated"] == 0
    # tokens drawn before (other canaries of the run) only shrink the space: a larger bound
    assert cn.false_enforced_bound(kind, space=space, enum=enum, drawn=3) > bound
    # what the probe reports is this bound on the real design, after the most draws a run has
    real = cn.false_enforced_bound(kind)
    assert real is not None and cn.make(kind, cn.Tokens()).bound() == float(real)  # type: ignore[arg-type]
    assert {"json": cn.P_FALSE_ENFORCED_JSON, "regex": cn.P_FALSE_ENFORCED_TEXT}.get(
        kind, cn.P_FALSE_ENFORCED_CHOICE
    ) == float(real)
    # and the help text's figures hold: below 4e-86 per JSON canary, 1e-28 per token
    assert cn.P_FALSE_ENFORCED_JSON < 4e-86 and cn.P_FALSE_ENFORCED_CHOICE < 1e-28


def test_no_cut_off_allowed_answer_is_ever_broken() -> None:
    """The false-"unconstrained" bound of 0, checked exhaustively on a small design: every cut
    of every allowed answer (compact and spaced) of every canary kind, judged as cut off by
    the token budget, is inconclusive or satisfied, never broken."""
    for kind in ("json", "regex", "ebnf", "choice", "json_object"):
        can = cn.make(kind, cn.Tokens("ab", 3), enum=2)  # type: ignore[arg-type]
        full = can.answers() or ['{"x": [1, {"y": null}]}']
        if kind == "json":
            full += [json.dumps(json.loads(a), indent=2) for a in full]
        for a in full:
            for cut in range(len(a) + 1):
                j = cn.judge(can, a[:cut], truncated=True)[0]
                assert j != "broken", (kind, a[:cut])


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
    assert jsonscan.is_json_prefix(text) is ok


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


def _ok(body: dict) -> Attempt:
    return Attempt(AttemptOutcome.OK, 200, 1.0, body=body)


def _native(text: str, finish: str = "stop") -> dict:
    return {"text": text, "meta_info": {"finish_reason": {"type": finish}}}


# The shapes a reasoning model answers in when it stops inside its reasoning (issue 22 #2):
# chat with a reasoning parser (SGLang reasoning_content, vLLM reasoning; content null or
# empty) and raw /generate text. Hand-written from the engines' answer formats: a real
# reasoning model cannot be made to stop inside its reasoning on demand here.
STOPPED_IN_REASONING = [
    ("response_format.json_schema", _chat({"content": None, "reasoning_content": "Hmm, the sky"})),
    ("response_format.json_schema", _chat({"content": "", "reasoning": "The user asks"})),
    ("response_format.json_schema", _chat({"content": "  ", "reasoning_content": "x"}, "length")),
    ("tools.required", _chat({"content": None, "reasoning_content": "I should call"})),
    ("structured_outputs.regex", _chat({"content": "<think>Blue, I think"})),
    ("generate.json_schema", _native("<think>\nThe sky is blue because")),
    ("generate.regex", _native("◁think▷Let me see", "length")),
]


@pytest.mark.parametrize(("path", "body"), STOPPED_IN_REASONING)
def test_an_answer_that_stopped_inside_its_reasoning_is_unproven(path: str, body: dict) -> None:
    """``finish_reason: stop`` with only reasoning is no evidence either way: the grammar of a
    server with a reasoning parser starts after the reasoning. The path is ``unproven`` with
    that reason, never ``unconstrained`` (the old code judged the empty content: broken)."""
    spec = BY_NAME[path]
    can = cn.make(spec.kind, cn.Tokens())
    shot = judge_shot(spec, can, _ok(body))
    assert shot.judgement == "inconclusive", shot
    verdict, reason = path_verdict([shot, shot], spec)
    assert verdict == "unproven" and "reasoning" in reason and "no evidence" in reason


def test_the_text_after_the_reasoning_is_what_is_judged() -> None:
    """After an end marker the grammar applied: a canary answer there is evidence (satisfied),
    and prose there still breaks the canary (the grammar was not applied)."""
    spec = BY_NAME["generate.json_schema"]
    can = cn.make("json", cn.Tokens())
    good = _native(f"<think>fine</think>\n{can.answers()[0]}")
    assert judge_shot(spec, can, _ok(good)).judgement == "satisfied"
    bad = _native("I will think.</think>The sky is blue.")  # DeepSeek-R1 writes no <think>
    assert judge_shot(spec, can, _ok(bad)).judgement == "broken"
    chat = BY_NAME["response_format.json_schema"]
    r = read(chat, _chat({"content": f"<think>a</think>{can.answers()[1]}"}))
    assert not isinstance(r, str) and r.reasoning == "ended" and r.text == can.answers()[1]


def test_unmarked_generate_text_of_a_reasoning_server_cannot_break_a_canary() -> None:
    """SGLang with --reasoning-parser deepseek-r1: the model writes its reasoning without a
    <think> on /generate; prose without an end marker may be that reasoning."""
    spec = BY_NAME["generate.json_schema"]
    can = cn.make("json", cn.Tokens())
    prose = _ok(_native("Okay, the user wants the colour of the sky", "length"))
    assert judge_shot(spec, can, prose).judgement == "broken"  # no reasoning parser: a finding
    shot = judge_shot(spec, can, prose, reasoning_parser="deepseek-r1")
    assert shot.judgement == "inconclusive" and "deepseek-r1" in shot.why
    good = _ok(_native(can.answers()[0]))
    assert judge_shot(spec, can, good, reasoning_parser="deepseek-r1").judgement == "satisfied"


def test_read_abort_and_garbage() -> None:
    spec = BY_NAME["response_format.json_schema"]
    native = BY_NAME["generate.json_schema"]
    fr = {"type": "abort", "message": "no grammar"}
    r = read(native, {"text": "", "meta_info": {"finish_reason": fr}})
    assert not isinstance(r, str) and r.aborted == "no grammar"
    assert isinstance(read(native, {"ok": True}), str)
    assert isinstance(read(spec, "<html>proxy</html>"), str)


def _reading(reasoning: str | None = None) -> Reading:
    return Reading("{}", False, "stop", reasoning=reasoning)


@pytest.mark.parametrize(
    ("path_verdict_", "valid", "cut", "reasoning", "unmarked", "want"),
    [
        ("enforced", True, False, None, False, "enforced"),
        ("enforced", False, False, None, False, "leaky"),
        ("unconstrained", False, False, None, False, "unconstrained"),
        # one valid output on a path that enforces nothing proves nothing (issue 22 #2)
        ("unconstrained", True, False, None, False, "unproven"),
        ("unproven", True, False, None, False, "unproven"),
        # no evidence on the path: an invalid output is not "unconstrained" either
        ("unproven", False, False, None, False, "unproven"),
        ("enforced", False, True, None, False, "unproven"),
        ("enforced", False, False, "open", False, "unproven"),
        ("enforced", False, False, None, True, "unproven"),
    ],
)
def test_registry_row_verdicts(
    path_verdict_: str, valid: bool, cut: bool, reasoning: str | None, unmarked: bool, want: str
) -> None:
    got, reason = registry_verdict(
        path_verdict_, valid=valid, cut=cut, reading=_reading(reasoning), unmarked=unmarked
    )
    assert got == want
    assert (reason is not None) == (want == "unproven")


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
    # --paths gates the registry's own path too (issue 22 #2): p1 is where its rows went
    d = {
        **doc("enforced", "unconstrained"),
        "registry": [{"schema": "s", "path": "p1", "verdict": "unproven"}],
    }
    summarise(d, ["p0"])
    assert d["failed"] == ["p1"] and d["gate"]["paths"] == ["p0", "p1"]


# --- issue 22 #12 and #13: hostile answers stay bounded -----------------------------------


def _empty_containers(n_bytes: int) -> str:
    """A cut-off JSON text of empty containers (``{"a":[],"b":{},...``): each ``]``/``}`` made
    the old prefix check re-read the whole text before it (quadratic)."""
    unit = '"k":[],"o":{},'
    return "{" + unit * (n_bytes // len(unit))


def test_the_json_prefix_scan_is_linear() -> None:
    """Work counted, not timed: the scan's loop consumes at least one character per step."""
    for n in (10_000, 100_000, 1_000_000):
        text = _empty_containers(n)
        found = jsonscan.scan(text)
        assert found.state == "prefix" and found.steps <= len(text) + 1
    deep = "[" * 100_000
    found = jsonscan.scan(deep)
    assert found.state == "prefix" and found.depth == 100_000 and found.steps <= len(deep) + 1


@pytest.mark.timeout(120)
def test_a_3mb_cut_off_answer_is_judged_in_one_pass() -> None:
    """The issue's case at scale: a 3 MB cut-off answer of empty arrays (``[[],[],...``).
    Linear, this takes seconds; the old check re-read everything before each ``]`` (measured
    here on the old code: 46 s at 2 MB of ``{"k":[],...``, 100 s at 2 MB of ``[],``, growing
    with the square: ~225 s at 3 MB). The 120 s limit only stops a hang; no speed is
    asserted."""
    c = cn.make("json", cn.Tokens())
    text = "[" + "[]," * 1_000_000
    assert cn.judge(c, text, truncated=True)[0] == "inconclusive"


def test_the_judge_stops_at_its_deadline() -> None:
    """An injected clock past the deadline: the scan ends as ``unknown`` and the judgement is
    inconclusive with the reason (never a verdict it did not finish computing)."""
    text = _empty_containers(100_000)
    found = jsonscan.scan(text, deadline=0.5, clock=lambda: 1.0)
    assert found.state == "unknown" and found.steps == jsonscan.CHECK_EVERY
    c = cn.make("json", cn.Tokens())
    judgement, why = cn.judge(c, text, truncated=True, deadline=-1.0)
    assert judgement == "inconclusive" and "within --timeout" in why


@pytest.mark.parametrize(
    ("kind", "text", "truncated", "want"),
    [
        ("json", "[" * 1_500, True, "inconclusive"),
        ("json", "[" * 1_500, False, "broken"),
        ("json", "[" * 1_500 + "]" * 1_500, False, "broken"),
        ("json_object", '{"a":' + "[" * 5_000 + "]" * 5_000 + "}", False, "satisfied"),
        ("json_object", "[" * 5_000 + "]" * 5_000, False, "broken"),
        ("json", "[" * 1_500 + "}", True, "broken"),
    ],
)
def test_an_answer_deeper_than_the_parser_is_judged_without_a_traceback(
    kind: str, text: str, truncated: bool, want: str
) -> None:
    """``[`` x 1,500 made ``json.loads`` raise RecursionError inside the judge (a traceback that
    ended the probe); the scan has no recursion."""
    c = cn.make(kind, cn.Tokens())  # type: ignore[arg-type]
    assert cn.judge(c, text, truncated)[0] == want


def test_a_deep_tool_array_is_no_tool_call() -> None:
    spec = BY_NAME["tools.required"]
    r = read(spec, _chat({"content": "[" * 1_500}, "length"))
    assert not isinstance(r, str) and not r.tool_call
