"""The recommended token budget per schema (``schemaops/audit/tally/budget.py``).

Hand-written records with known ``completion_tokens`` give exactly the expected budget; the
real vLLM dev-server bodies (``tests/data/vllm_response_bodies.json``: one answer cut at
``max_tokens`` 5) give theirs; ``--jobs 1`` and ``--jobs 2`` agree; records without token
counts get no budget (and say why), records without a finish reason none at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console

from schemaops.audit.options import AuditOptions
from schemaops.audit.report.html import render_html
from schemaops.audit.report.markdown import render_markdown
from schemaops.audit.report.terminal import render_terminal
from schemaops.audit.run.pipeline import run_audit
from schemaops.audit.tally import budget
from schemaops.metrics import audit_metrics, write_textfile

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
VLLM = json.loads((Path(__file__).parent / "data" / "vllm_response_bodies.json").read_text())


def _gen(tokens: int, finish: str = "stop", text: str = '{"name": "a"}') -> dict:
    """An SGLang /generate answer's shape with its token count."""
    return {
        "text": text,
        "meta_info": {"finish_reason": {"type": finish}, "completion_tokens": tokens},
    }


def _chat(tokens: int | None, finish: str = "stop", text: str = '{"name": "a"}') -> dict:
    """An OpenAI/vLLM chat answer's shape, with ``usage`` unless ``tokens`` is None."""
    rec: dict[str, Any] = {
        "choices": [{"message": {"content": text}, "finish_reason": finish}],
    }
    if tokens is not None:
        rec["usage"] = {"prompt_tokens": 9, "completion_tokens": tokens}
    return rec


def _audit(tmp_path: Path, records: list[Any], jobs: int = 1, schema: Any = SCHEMA) -> dict:
    s = tmp_path / "item.json"
    s.write_text(json.dumps(schema))
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    return run_audit(str(log), AuditOptions(schema=str(s), cache=False, jobs=jobs)).to_json()


def _budgets(doc: dict) -> list[dict]:
    return doc["diagnoses"]["truncated_at_max_tokens"]["budgets"]


def test_buckets_are_exact_below_128_and_tight_above() -> None:
    prev = -1
    for n in [*range(0, 300), *range(300, 1 << 22, 997)]:
        b = budget.bucket(n)
        assert b >= prev  # monotone: quantiles read in bucket order
        assert n <= budget.upper(b) <= n + n // budget.SUB  # upper edge within 1/32 above
        if n < budget.EXACT:
            assert budget.upper(b) == n
        prev = b
    assert budget.bucket((1 << 40) + 5) < 2000  # bounded: a few hundred buckets at most


def test_known_lengths_give_the_expected_budget(tmp_path: Path) -> None:
    """200 complete answers of 1..200 tokens and one cut at 150: p99 of the 201 (the cut one
    counted above every length) is the 199th smallest, 199; x1.25 = 249 > 1.25 x 150."""
    recs = [_gen(n) for n in range(1, 201)] + [_gen(150, "length", '{"name": "ab')]
    (b,) = _budgets(_audit(tmp_path, recs))
    assert b["schema"] == "item"
    assert (b["complete"], b["cut"], b["max_cut"], b["max_complete"]) == (200, 1, 150, 200)
    assert (b["p99_needed"], b["recommended_max_tokens"], b["lower_bound"]) == (199, 249, False)
    assert b["p50_complete"] == 100 and b["basis"].startswith("completion_tokens")


def test_never_below_the_cut_lengths(tmp_path: Path) -> None:
    """Short complete answers, one cut at 400: the budget is above 400 (x1.25), not ~20."""
    recs = [_chat(n) for n in range(10, 110)] + [_chat(400, "length", '{"name": "a')]
    (b,) = _budgets(_audit(tmp_path, recs))
    assert b["p99_needed"] == 109 and b["recommended_max_tokens"] == 500


def test_too_many_cut_is_a_lower_bound(tmp_path: Path) -> None:
    """3 of 10 cut at 64: the needed p99 lies above 64, so 'at least 128', marked."""
    recs = [_chat(n) for n in range(20, 27)] + [_chat(64, "length", '{"name": "a')] * 3
    (b,) = _budgets(_audit(tmp_path, recs))
    assert (b["recommended_max_tokens"], b["lower_bound"], b["p99_needed"]) == (128, True, None)
    assert "at least 128" in b["why"]


def test_a_lower_bound_is_never_below_a_complete_length(tmp_path: Path) -> None:
    """Budgets that varied per request: 2 of 10 cut at 30, complete answers up to 67 long.
    The lower bound is the longest complete answer with headroom (84), not twice the cut (60)."""
    recs = [_chat(n) for n in range(60, 68)] + [_chat(30, "length", '{"name": "a')] * 2
    (b,) = _budgets(_audit(tmp_path, recs))
    assert (b["recommended_max_tokens"], b["lower_bound"]) == (84, True)
    assert "at least 84 (the longest complete output, 67, x1.25)" in b["why"]


def test_real_vllm_answers_cut_at_max_tokens_5(tmp_path: Path) -> None:
    """Real vLLM bodies: 17 tokens complete, one cut at 5 (usage.completion_tokens 5). The
    n=2 and two-prompt answers share one usage across choices: counted, not attributed."""
    bodies = VLLM["bodies"]
    keys = ("chat_response_format_json_schema", "chat_response_format_max_tokens_cut", "chat_n2")
    (b,) = _budgets(_audit(tmp_path, [bodies[k]["response"] for k in keys], schema=VLLM["schema"]))
    assert (b["complete"], b["max_complete"], b["cut"], b["max_cut"]) == (1, 17, 1, 5)
    # 1 of 2 counted outputs cut: the needed p99 is above 5; a complete answer used 17, so
    # at least 17 x 1.25 = 22 (twice the cut, 10, would be below a length really needed)
    assert (b["recommended_max_tokens"], b["lower_bound"]) == (22, True)
    assert b["without_counts"] == 2  # n=2: one usage for both choices, not attributed


def test_jobs_1_and_2_agree(tmp_path: Path) -> None:
    recs = []
    for i in range(600):
        recs.append(_gen(i % 300 + 1))
        if i % 37 == 0:
            recs.append(_gen(128, "length", '{"name": "x'))
        if i % 53 == 0:
            recs.append(_chat(None, "length", '{"name": "y'))
    one, two = _audit(tmp_path, recs, 1), _audit(tmp_path, recs, 2)
    assert two["jobs"] == 2
    assert one["diagnoses"] == two["diagnoses"]
    assert _budgets(one)[0]["complete"] == 600


def test_records_without_counts_or_finish_reason(tmp_path: Path) -> None:
    """finish_reason length without usage: no budget, and why; plain records: no budgets,
    the document as before."""
    doc = _audit(tmp_path, [_chat(None), _chat(None, "length", '{"name": "a')])
    (b,) = _budgets(doc)
    assert b["recommended_max_tokens"] is None and b["basis"] is None
    assert b["cut"] == 1 and b["without_counts"] == 2
    assert "no completion token count" in b["why"]
    plain = _audit(tmp_path, [{"text": '{"name": "a"}'}, {"text": '{"name": "a'}])
    assert list(plain["diagnoses"]) == ["truncated_other"]  # as before: no finish reason
    assert "budgets" not in json.dumps(plain)


def test_reports_show_the_budget(tmp_path: Path) -> None:
    recs = [_gen(n) for n in range(1, 201)] + [_gen(150, "length", '{"name": "ab')]
    doc = _audit(tmp_path, recs)
    md = render_markdown(doc)
    assert "recommended max_tokens" in md and "| 249 |" in md
    assert "249" in render_html(doc)
    con = Console(record=True, width=400)
    render_terminal(doc, con)
    assert "item: max_tokens 249 (1 cut, 200 complete;" in con.export_text()
    prom = tmp_path / "a.prom"
    write_textfile(prom, audit_metrics(doc))
    samples = {
        (s.name, s.labels.get("schema")): s.value
        for f in text_string_to_metric_families(prom.read_text())
        for s in f.samples
    }
    assert samples[("schemaops_audit_recommended_max_tokens", "item")] == 249
    assert samples[("schemaops_audit_recommended_max_tokens_lower_bound", "item")] == 0
    assert samples[("schemaops_audit_cut_outputs", "item")] == 1


def test_shards_agree_with_their_concatenation(tmp_path: Path) -> None:
    """Several input files (``shards.py``) are audited as their concatenation: the budget
    state merges the same way across shards and ``--jobs`` workers."""
    s = tmp_path / "item.json"
    s.write_text(json.dumps(SCHEMA))
    recs = [_gen(i % 250 + 1) for i in range(900)] + [_gen(96, "length", '{"name": "')] * 4
    recs += [_chat(None, "length", '{"name": "z')]
    parts = [recs[i::3] for i in range(3)]
    files = []
    for i, part in enumerate(parts):
        f = tmp_path / f"shard{i}.jsonl"
        f.write_text("".join(json.dumps(r) + "\n" for r in part))
        files.append(str(f))
    whole = tmp_path / "whole.jsonl"
    whole.write_text("".join(Path(f).read_text() for f in files))
    want = run_audit(str(whole), AuditOptions(schema=str(s), cache=False)).to_json()
    for jobs in (1, 2):
        got = run_audit(files, AuditOptions(schema=str(s), cache=False, jobs=jobs)).to_json()
        assert got["diagnoses"] == want["diagnoses"], jobs
    (b,) = _budgets(want)
    assert (b["complete"], b["cut"], b["without_counts"]) == (900, 5, 1)
