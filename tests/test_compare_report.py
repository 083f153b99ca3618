"""Pure report/recommend/HTML logic over hand-built result dicts (docs/contracts/compare.md).

These need no backend: they pin the aggregation rules and the recommendation order. The
end-to-end tests with real libraries are in test_compare_e2e.py.
"""

from __future__ import annotations

import json

from schemaops.compare.recommend import recommend
from schemaops.compare.report import CompareReport, keyword_outcomes, percentile
from schemaops.compare.report_html import render_html


def _r(schema, backend, status="ok", cms=1.0, p50=10.0, p99=30.0, verdict="enforced", kws=None):
    enf = {
        "verdict": verdict,
        "accepts_invalid": int(verdict == "accepts_invalid"),
        "rejects_valid": int(verdict == "rejects_valid"),
        "details": [],
    }
    r = {
        "schema": schema,
        "backend": backend,
        "status": status,
        "compile_ms": cms if status == "ok" else None,
        "mask_us": {"mean": p50, "p50": p50, "p99": p99} if status == "ok" else None,
        "advance_us": {"mean": 5.0, "p50": 5.0, "p99": 9.0} if status == "ok" else None,
        "enforcement": enf if status == "ok" else {"verdict": "unsupported"},
        "error": None if status == "ok" else f"{status} error",
    }
    if kws:  # keyword -> outcome, written as the measurement layer's example counts
        enf["keywords"] = {
            kw: {"enforced": int(o == "enforced"), "ignored": int(o == "ignored"), "rejected": 0}
            for kw, o in kws.items()
        }
    return r


def _report(results, backends=("xgrammar", "llguidance", "outlines")):
    rep = CompareReport(
        results=results, backends=list(backends), tokenizer="qwen2.5", source="test"
    )
    rep.recommendation = recommend(rep)
    return rep


def test_percentile_interpolates_like_numpy():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([5], 99) == 5.0
    assert percentile([], 50) is None
    assert abs(percentile(list(range(101)), 99) - 99.0) < 1e-9


def test_summary_counts_coverage_and_percentiles():
    res = [
        _r("a", "xgrammar", cms=10),
        _r("b", "xgrammar", cms=30),
        _r("c", "xgrammar", status="timeout"),
    ]
    s = _report(res, ["xgrammar"]).summary()["xgrammar"]
    assert s["schemas"] == 3 and s["ok"] == 2
    assert abs(s["coverage"] - 2 / 3) < 1e-9
    assert s["status"] == {"ok": 2, "timeout": 1}
    assert s["compile_ms"]["p50"] == 20.0
    # a timeout is its own verdict, not "unsupported" (the backend did not decline anything)
    assert s["enforcement"]["failed"] == 1 and s["enforcement"]["unsupported"] == 0
    assert s["enforcement"]["enforced"] == 2


def test_recommend_prefers_full_coverage_and_enforcement_over_speed():
    res = []
    for s in ("a", "b"):
        res += [
            _r(s, "xgrammar", cms=200, p50=20),
            _r(
                s,
                "llguidance",
                cms=1,
                p50=40,
                verdict="accepts_invalid",
                kws={"uniqueItems": "ignored"},
            ),
            _r(s, "outlines", status="timeout"),
        ]
    rec = _report(res).recommendation
    assert rec["backend"] == "xgrammar"
    text = " ".join(rec["tradeoffs"])
    assert "uniqueItems" in text and "timeout" in text


def test_recommend_uses_compile_then_mask_within_band():
    # Both fully correct; compile p99 within the 10 ms band -> faster mask wins.
    res = [_r("a", "xgrammar", cms=8, p50=20), _r("a", "llguidance", cms=1, p50=45)]
    assert _report(res, ["xgrammar", "llguidance"]).recommendation["backend"] == "xgrammar"
    # Far apart compile tails -> lower compile p99 wins despite slower masks.
    res = [_r("a", "xgrammar", cms=900, p50=20), _r("a", "llguidance", cms=1, p50=45)]
    rec = _report(res, ["xgrammar", "llguidance"]).recommendation
    assert rec["backend"] == "llguidance"
    assert any("faster per token" in t for t in rec["tradeoffs"])


def test_recommend_none_when_nothing_compiles():
    res = [_r("a", "xgrammar", status="error"), _r("a", "llguidance", status="unsupported")]
    assert _report(res, ["xgrammar", "llguidance"]).recommendation["backend"] is None


def test_keyword_outcomes_from_enforcement_counts_and_table():
    r = _r("a", "llguidance", verdict="accepts_invalid")
    r["enforcement"]["keywords"] = {
        "uniqueItems": {"enforced": 0, "ignored": 2, "rejected": 0},
        "enum": {"enforced": 1, "ignored": 0, "rejected": 0},
    }
    assert keyword_outcomes(r) == {"uniqueItems": "ignored", "enum": "enforced"}
    table = _report([r], ["llguidance"]).keywords()
    assert table["uniqueItems"]["llguidance"] == {"enforced": 0, "ignored": 2, "rejected": 0}


def test_json_document_roundtrip_and_html_has_plots():
    res = [
        _r("a", "xgrammar", cms=120),
        _r("a", "llguidance", cms=0.8),
        _r("a", "outlines", status="oom"),
    ]
    rep = _report(res)
    doc = json.loads(json.dumps(rep.to_dict()))
    assert {"results", "summary", "keywords", "recommendation"} <= set(doc)
    assert doc["results"][0]["mask_us"].keys() >= {"mean", "p50", "p99"}
    again = CompareReport.from_dict(doc)
    page = render_html(again)
    assert page.count('src="data:image/png;base64,') == 3
    assert "Recommendation" in page and "oom" in page


def test_html_renders_when_nothing_compiled(recwarn):
    rep = _report(
        [_r("a", "xgrammar", status="timeout"), _r("a", "outlines", status="crash")],
        ["xgrammar", "outlines"],
    )
    page = render_html(rep)
    assert page.count("data:image/png;base64,") == 3
    assert rep.recommendation["backend"] is None
    assert not [w for w in recwarn if "legend" in str(w.message)]


def test_recommend_ranking_is_a_total_order_for_every_backends_order():
    # Compile p99 0/9/18 ms: each neighbour pair is within the 10 ms band, the ends are not;
    # mask p50 30/20/10 µs. A pairwise "equal within a band" comparator is not transitive
    # here (C<B on mask, B<A on mask, A<C on compile), so the sort depended on input order.
    import itertools

    res = [
        _r("a", "xgrammar", cms=0.5, p50=30),
        _r("a", "llguidance", cms=9.0, p50=20),
        _r("a", "outlines", cms=18.0, p50=10),
    ]
    seen = set()
    for perm in itertools.permutations(["xgrammar", "llguidance", "outlines"]):
        rec = _report(res, perm).recommendation
        seen.add(tuple(p["backend"] for p in rec["ranking"]))
    assert len(seen) == 1, seen


def test_a_top_level_keywords_field_is_not_a_result_shape():
    # Only ``enforcement.keywords`` (example counts) is read; a hand-built top-level
    # ``keywords: {kw: "ignored"}`` shape existed for tests only and is gone.
    r = _r("a", "xgrammar")
    r["keywords"] = {"uniqueItems": "ignored"}
    assert keyword_outcomes(r) == {}
    assert _report([r], ["xgrammar"]).keywords() == {}


def test_terminal_tables_print_rich_markup_in_names_literally():
    # "[/v2/orders]" is a rich closing tag: printed unescaped it raised MarkupError.
    import io

    from rich.console import Console

    from schemaops.compare.report_text import print_report

    name = "Orders endpoint [/v2/orders]"
    r = _r(name, "xgrammar", verdict="accepts_invalid", kws={"[/kw]": "ignored"})
    bad = _r(name, "llguidance", status="error")
    rep = CompareReport(
        results=[r, bad], backends=["xgrammar", "llguidance"], tokenizer="[/tok]", source="[/s]"
    )
    rep.recommendation = recommend(rep)
    buf = io.StringIO()
    print_report(rep, Console(file=buf, width=300))
    out = buf.getvalue()
    assert name in out and "[/kw]" in out and "[/s]" in out and "[/tok]" in out


def test_verdict_without_evidence_is_unchecked_and_failures_are_not_unsupported():
    from schemaops.compare.enforce import summarize
    from schemaops.compare.model import unwalked

    none = summarize([], "ok", "generation: hypothesis-jsonschema is not installed")
    assert none["verdict"] == "unchecked" and "not installed" in none["reason"]
    inst = [{"kind": "invalid", "index": 0, "keyword": "enum"}]
    for status in ("timeout", "crash", "oom", "error"):
        assert summarize(unwalked(inst), status)["verdict"] == "failed"
    assert summarize(unwalked(inst), "unsupported")["verdict"] == "unsupported"


def test_cli_backend_choices_are_the_backends():
    # The check command's typer enum is static (importing the backends package at CLI start
    # would import numpy); it must list exactly the backends there are.
    from schemaops.backends import BACKENDS
    from schemaops.commands.compare import Backend

    assert tuple(b.value for b in Backend) == BACKENDS


def test_terminal_report_says_why_a_result_has_no_evidence():
    import io

    from rich.console import Console

    from schemaops.compare.report_text import print_report

    r = _r("tree", "llguidance")
    r["enforcement"].update(valid=0, invalid=0, verdict="unchecked", reason="generation: boom")
    r["instance_errors"] = ["generation: boom"]
    rep = _report([r], ["llguidance"])
    buf = io.StringIO()
    print_report(rep, Console(file=buf, width=200))
    assert "tree on llguidance: generation: boom" in buf.getvalue()
