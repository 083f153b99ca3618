"""Pure gate logic and JUnit rendering over hand-built results (no backend needed)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from schemaops.check import CheckReport, evaluate, junit_xml


def _ok(name, cms=5.0, verdict="enforced", **extra):
    r = {
        "schema": name,
        "backend": "llguidance",
        "status": "ok",
        "compile_ms": cms,
        "mask_us": {"mean": 1, "p50": 1, "p99": 2},
        "enforcement": {
            "verdict": verdict,
            "accepts_invalid": int(verdict == "accepts_invalid"),
            "rejects_valid": int(verdict == "rejects_valid"),
            "details": [],
        },
    }
    for kw, outcome in extra.pop("keywords", {}).items():  # as the measurement layer writes
        r["enforcement"].setdefault("keywords", {})[kw] = {
            "enforced": int(outcome == "enforced"),
            "ignored": int(outcome == "ignored"),
            "rejected": 0,
        }
    r.update(extra)
    return r


def test_pass_budget_ignored_keyword_and_status():
    assert evaluate(_ok("a"), "llguidance", 100).passed
    over = evaluate(_ok("b", cms=2300), "llguidance", 1000)
    assert not over.passed
    assert "compile 2300 ms > budget 1000 ms" in over.problems[0].message
    assert "schemaops warm" in over.problems[0].fix
    ign = evaluate(
        _ok("c", verdict="accepts_invalid", keywords={"uniqueItems": "ignored"}), "llguidance", 1000
    )
    assert ign.problems[0].text() == (
        "keyword uniqueItems is ignored by llguidance: enforce it in application validation "
        "or drop it"
    )
    to = evaluate(
        {
            "schema": "d",
            "backend": "outlines",
            "status": "timeout",
            "compile_ms": None,
            "error": "timed out",
        },
        "outlines",
        1000,
        30,
    )
    assert not to.passed and "30 s" in to.problems[0].message
    unc = evaluate(_ok("e", verdict=None), "llguidance", 1000)
    assert unc.passed and unc.warnings


def test_junit_one_testcase_per_schema_with_failures():
    cases = [
        evaluate(_ok("a"), "llguidance", 1000),
        evaluate(_ok("b", cms=2300), "llguidance", 1000),
    ]
    rep = CheckReport("llguidance", "qwen2.5", "schemas", 1000.0, cases)
    root = ET.fromstring(junit_xml(rep))
    suite = root.find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    tcs = {tc.get("name"): tc for tc in suite.iter("testcase")}
    assert tcs["a"].find("failure") is None
    assert "budget" in tcs["b"].find("failure").get("message")
    assert not rep.passed and rep.to_dict()["failed"] == 1


def test_unimplemented_keyword_and_unknown_format_advice():
    un = evaluate(
        {"schema": "x", "status": "unsupported", "error": 'Unimplemented keys: ["if", "then"]'},
        "llguidance",
        1000,
    )
    assert un.problems[0].message.startswith(
        "llguidance does not implement keyword if, keyword then"
    )
    fm = evaluate(
        {"schema": "y", "status": "error", "error": "RuntimeError: Unknown format: uri-reference"},
        "llguidance",
        1000,
    )
    assert "format uri-reference" in fm.problems[0].message


def test_vacuous_enforcement_is_unchecked_and_warned():
    none = _ok("n")
    none["enforcement"].update(valid=0, invalid=0)
    case = evaluate(none, "xgrammar", 1000)
    assert case.verdict == "unchecked" and case.passed and "no examples" in case.warnings[0]
    valid_only = _ok("v")
    valid_only["enforcement"].update(valid=2, invalid=0)
    case = evaluate(valid_only, "xgrammar", 1000)
    assert case.verdict == "enforced" and "no invalid examples" in case.warnings[0]


def test_junit_is_well_formed_with_control_characters_in_names():
    # U+0001, U+000B and U+001B are not allowed anywhere in XML 1.0; a schema name or an
    # error message carrying them must not make the whole report unparseable for CI.
    bad = "sch\x01ema\x0bname\x1b[31m"
    err = {"schema": bad, "status": "error", "error": "boom \x01\x0b\x1b here"}
    cases = [evaluate(_ok(bad), "llguidance", 1000), evaluate(err, "llguidance", 1000)]
    rep = CheckReport("llguidance", "tok\x1b", "reg\x01", 1000.0, cases)
    root = ET.fromstring(junit_xml(rep))
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert names == ["sch\\x01ema\\x0bname\\x1b[31m"] * 2
    assert "(boom \\x01)" in root.find(".//failure").get("message")


def test_check_terminal_output_prints_rich_markup_literally():
    import io

    from rich.console import Console

    from schemaops.check.render import print_check

    name = "Orders endpoint [/v2/orders]"
    err = {"schema": name, "status": "error", "error": "bad [/x] thing"}
    cases = [evaluate(_ok(name, verdict=None), "llguidance", 1000), evaluate(err, "llguidance", 1)]
    rep = CheckReport("llguidance", "[/tok]", "[/reg]", 1000.0, cases)
    buf = io.StringIO()
    print_check(rep, Console(file=buf, width=300))
    out = buf.getvalue()
    assert f"PASS {name}" in out and "bad [/x] thing" in out and "[/tok]" in out


def test_non_ascii_refusals_fail_the_gate_and_retokenized_ones_warn():
    refused = _ok("names", verdict="rejects_valid")
    refused["enforcement"].update(
        rejects_valid=1,
        rejects_valid_content=1,
        details=[
            {
                "kind": "valid",
                "outcome": "rejected",
                "where": "string",
                "content": True,
                "text": '"Zo\u00eb"',
                "accepted_as": None,
            }
        ],
    )
    case = evaluate(refused, "outlines", 1000)
    assert not case.passed and case.problems[0].kind == "rejects_valid"
    assert "1 inside a non-ASCII string under every tokenization" in case.problems[0].message
    retok = _ok("ctl")
    retok["enforcement"].update(
        accepted_retokenized=1,
        details=[
            {
                "kind": "valid",
                "outcome": "rejected",
                "content": True,
                "text": '"a"',
                "accepted_as": "escaped",
            }
        ],
    )
    case2 = evaluate(retok, "llguidance", 1000)
    assert case2.passed and "produced only as \\u escapes" in case2.warnings[0]
    rep = CheckReport("outlines", "qwen2.5", "schemas", 1000.0, [case, case2])
    assert rep.to_dict()["rejects_valid_content"] == 1
    assert rep.to_dict()["accepted_retokenized"] == 1
    assert "rejects_valid_content=1" in junit_xml(rep)


def test_a_huge_budget_gives_a_bounded_wait_and_bad_values_are_input_errors() -> None:
    """A budget of 1e9 ms made a 34-day wait that epoll refused (OverflowError traceback in
    the capacity measurement); the derived wait is now bounded, and a non-finite budget or an
    over-long --timeout is exit 2."""
    from schemaops.check.gate import MAX_TIMEOUT_S, gate_options
    from schemaops.errors import InputError

    assert gate_options(1e9, None, 1, None, None)[0] == MAX_TIMEOUT_S
    for bad in (float("nan"), float("inf"), -1.0):
        with pytest.raises(InputError):
            gate_options(bad, None, 1, None, None)
    with pytest.raises(InputError):
        gate_options(1000.0, MAX_TIMEOUT_S * 2, 1, None, None)
