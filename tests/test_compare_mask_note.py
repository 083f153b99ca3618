"""compare's summary explains a mask p99 far above its p50 (issue 34 item 9: "a mask p99 of
~10 ms next to a p50 of 2 µs is unexplained"): which schema carries it, where to look."""

from __future__ import annotations

from rich.console import Console

from schemaops.compare.report import CompareReport
from schemaops.compare.report_text import mask_tail_notes, print_report


def _result(schema: str, p50: float, p99: float) -> dict:
    """One (schema, backend) result as run_compare records it (docs/contracts/compare.md)."""
    return {
        "backend": "xgrammar",
        "schema": schema,
        "status": "ok",
        "compile_ms": 10.0,
        "mask_us": {"mean": p50, "p50": p50, "p99": p99},
        "enforcement": {"verdict": "enforced"},
    }


def test_a_mask_tail_is_explained_once_with_the_schema_that_carries_it() -> None:
    report = CompareReport(
        results=[_result("get_order", 1.8, 40.0), _result("tool_call", 2.1, 9800.0)],
        backends=["xgrammar"],
        tokenizer="qwen2.5",
        source="schemas",
    )
    [note] = mask_tail_notes(report)
    assert "tool_call" in note and "glossary" in note
    con = Console(record=True, width=200)
    print_report(report, console=con)
    assert con.export_text().count("the slowest 1 % of tokens") == 1


def test_no_note_without_a_tail() -> None:
    report = CompareReport(
        results=[_result("get_order", 1.8, 40.0)],
        backends=["xgrammar"],
        tokenizer="qwen2.5",
        source="schemas",
    )
    assert mask_tail_notes(report) == []
