"""``compare`` end to end with the real xgrammar, llguidance and outlines-core libraries and the
real Qwen2.5 vocabulary (no fakes). Kept small: one three-backend run shared by the module,
one CLI run over the shipped registry on the fastest backend.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from shared_schemas import TAGS, TAGS_EX
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.compare.report_html import render_html
from schemaops.compare.run import run_compare

REPO = Path(__file__).resolve().parents[1]

STATUS = {
    "type": "object",
    "properties": {
        "status": {"enum": ["open", "closed"]},
        "priority": {"type": "integer", "minimum": 1, "maximum": 5},
    },
    "required": ["status", "priority"],
    "additionalProperties": False,
}
STATUS_EX = {
    "valid": [{"status": "open", "priority": 2}],
    "invalid": [{"status": "pending", "priority": 2}, {"status": "open"}],
}
# outlines-core's index for a bare string with maxLength 100 takes minutes (measured; see
# tests/test_backends_isolation.py), while xgrammar and llguidance compile it in ms: with a
# 5 s timeout outlines must come back as ``timeout`` and the run must go on. (A shipped
# schema is not used here: its outlines compile time, 5-20 s, straddles any fixed timeout.)
TIMEOUT_S = 5.0
LONGTEXT = {"type": "string", "maxLength": 100}
LONGTEXT_EX = {"valid": ["hello"], "invalid": ["x" * 101, 7]}


def write_registry(root: Path, schemas: dict[str, tuple[dict, dict | None]]) -> Path:
    """A registry folder in the shipped layout: NAME.json plus NAME.examples.json."""
    root.mkdir(parents=True, exist_ok=True)
    for name, (schema, examples) in schemas.items():
        (root / f"{name}.json").write_text(json.dumps(schema, indent=2))
        if examples is not None:
            (root / f"{name}.examples.json").write_text(json.dumps(examples, indent=2))
    return root


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    reg = write_registry(
        tmp_path_factory.mktemp("reg") / "schemas",
        {
            "status": (STATUS, STATUS_EX),
            "tags": (TAGS, TAGS_EX),
            "longtext": (LONGTEXT, LONGTEXT_EX),
        },
    )
    return run_compare(reg, jobs=2, timeout_s=TIMEOUT_S, mem_mb=4096)


def _get(report, schema, backend):
    (r,) = [r for r in report.results if r["schema"] == schema and r["backend"] == backend]
    return r


def test_results_follow_the_design_contract(report):
    assert len(report.results) == 9
    for r in report.results:
        assert {"schema", "backend", "status", "compile_ms", "mask_us", "enforcement"} <= set(r)
        assert r["status"] in ("ok", "unsupported", "error", "timeout", "crash", "oom")
        assert r["enforcement"]["verdict"] in (
            "enforced",
            "accepts_invalid",
            "rejects_valid",
            "unsupported",
            "unchecked",
            "failed",
        )
        if r["status"] == "ok":
            assert r["compile_ms"] > 0
            assert set(r["mask_us"]) >= {"mean", "p50", "p99"} and r["mask_us"]["p50"] > 0


def test_verdicts_and_keyword_attribution(report):
    for b in ("xgrammar", "llguidance", "outlines"):
        assert _get(report, "status", b)["enforcement"]["verdict"] == "enforced"
    xg = _get(report, "tags", "xgrammar")
    assert xg["enforcement"]["verdict"] == "accepts_invalid"
    assert report.keywords()["uniqueItems"]["xgrammar"]["ignored"] == 1
    assert _get(report, "tags", "llguidance")["status"] == "unsupported"
    out = _get(report, "longtext", "outlines")
    assert out["status"] == "timeout", out.get("error")
    assert out["enforcement"]["verdict"] == "failed"  # not "unsupported": it timed out
    assert _get(report, "longtext", "xgrammar")["status"] == "ok"


def test_summary_and_recommendation(report):
    summ = report.summary()
    assert summ["xgrammar"]["coverage"] == 1.0
    assert summ["llguidance"]["status"] == {"ok": 2, "unsupported": 1}
    assert summ["outlines"]["status"].get("timeout") == 1
    assert summ["outlines"]["enforcement"]["failed"] == 1
    assert summ["outlines"]["enforcement"]["unsupported"] == 0
    rec = report.recommendation
    # Only xgrammar compiles everything; its gap (uniqueItems) must be named.
    assert rec["backend"] == "xgrammar"
    assert "uniqueItems" in " ".join(rec["reasons"])
    assert any("llguidance" in t and "unsupported" in t for t in rec["tradeoffs"])
    doc = json.loads(json.dumps(report.to_dict()))
    assert doc["summary"]["xgrammar"]["compile_ms"]["p99"] is not None


def test_compile_threads_and_host_cpus_are_reported(report):
    import os

    assert report.settings["compile_threads"] == 8  # SGLang's and vLLM's xgrammar default
    assert report.settings["host"]["cpus"] == os.cpu_count()


def test_html_embeds_the_three_plots(report):
    page = render_html(report)
    assert page.count('src="data:image/png;base64,') == 3
    for alt in ("compile-time distribution", "mask-time percentiles", "coverage"):
        assert f'alt="{alt}"' in page
    assert "Recommendation: xgrammar" in page


def test_cli_compare_shipped_registry_json_and_html(tmp_path):
    html = tmp_path / "report.html"
    res = CliRunner().invoke(
        app,
        [
            "compare",
            "--registry",
            str(REPO / "schemas"),
            "--backends",
            "llguidance",
            "--json",
            "--html",
            str(html),
            "-q",
        ],
    )
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    names = {
        p.stem
        for p in (REPO / "schemas").glob("*.json")
        if not p.name.endswith((".examples.json", ".tools.json")) and p.stem != "common"
    }
    assert {r["schema"] for r in doc["results"]} == names
    assert all(r["backend"] == "llguidance" for r in doc["results"])
    assert doc["summary"]["llguidance"]["schemas"] == len(names)
    assert doc["recommendation"]["backend"] == "llguidance"
    assert html.read_text().count("data:image/png;base64,") == 3


def test_cli_compare_corpus_generates_instances_for_mask_times(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    schema = json.dumps(STATUS, separators=(",", ":"))
    corpus.write_text(
        json.dumps({"unique_id": "s1", "json_schema": schema})
        + "\n"
        + json.dumps({"unique_id": "s2", "json_schema": schema})
        + "\n"
    )
    res = CliRunner().invoke(
        app,
        [
            "compare",
            "--corpus",
            str(corpus),
            "--limit",
            "1",
            "--backends",
            "llguidance",
            "--json",
            "-q",
        ],
    )
    assert res.exit_code == 0, res.stderr
    (r,) = json.loads(res.stdout)["results"]
    assert r["schema"] == "s1" and r["status"] == "ok"
    # no examples in a corpus: the default --generate 1 walks one generated valid instance
    assert r["enforcement"]["valid"] == 1 and r["mask_us"]["p50"] > 0


def test_cli_compare_usage_errors(tmp_path):
    runner = CliRunner()
    assert runner.invoke(app, ["compare", "--backends", "nope", "--json"]).exit_code == 2
    assert runner.invoke(app, ["compare", "--registry", str(tmp_path / "missing")]).exit_code == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"unique_id": "x"}\n')
    assert runner.invoke(app, ["compare", "--corpus", str(bad)]).exit_code == 2


RECURSIVE = {
    "$defs": {"node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}}},
    "$ref": "#/$defs/node",
}


def test_cli_compare_corpus_without_evidence_is_unchecked_with_a_reason(tmp_path):
    # hypothesis-jsonschema cannot follow a recursive $ref: nothing is walked, so the verdict
    # is "unchecked" with the generator's reason, not "enforced" over 0 examples.
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"unique_id": "tree", "json_schema": RECURSIVE}) + "\n")
    res = CliRunner().invoke(
        app, ["compare", "--corpus", str(corpus), "--backends", "llguidance", "--json", "-q"]
    )
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)
    (r,) = doc["results"]
    assert r["status"] == "ok"
    enf = r["enforcement"]
    assert (enf["valid"], enf["invalid"]) == (0, 0)
    assert enf["verdict"] == "unchecked"
    assert "generation" in enf["reason"] and r["instance_errors"]
    assert doc["summary"]["llguidance"]["enforcement"]["unchecked"] == 1


def test_cli_compare_corpus_without_the_generator_is_a_clear_usage_error(tmp_path, monkeypatch):
    # What `pip install "schemaops[all]"` without the generator looked like: a None entry in
    # sys.modules makes the import fail exactly as a missing package does.
    monkeypatch.setitem(sys.modules, "hypothesis_jsonschema", None)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"unique_id": "s1", "json_schema": STATUS}) + "\n")
    res = CliRunner().invoke(
        app, ["compare", "--corpus", str(corpus), "--backends", "llguidance", "--json", "-q"]
    )
    assert res.exit_code == 2
    assert "hypothesis-jsonschema" in res.stderr and "schemaops[compare]" in res.stderr
    assert "--generate 0" in res.stderr


def test_a_normal_install_has_the_instance_generator():
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert "hypothesis-jsonschema==0.23.1" in extras["compare"]
    assert "hypothesis==6.130.13" in extras["compare"]
    assert any("compare" in dep for dep in extras["all"])
