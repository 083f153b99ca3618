"""``check`` end to end with real backends and the real Qwen2.5 vocabulary: exit codes 0/1/2,
what-to-change messages, and JUnit XML that CI systems can parse."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from shared_schemas import TAGS, TAGS_EX
from typer.testing import CliRunner

from schemaops.cli import app

runner = CliRunner()

STATUS = {
    "type": "object",
    "properties": {"status": {"enum": ["open", "closed"]}, "priority": {"type": "integer"}},
    "required": ["status", "priority"],
    "additionalProperties": False,
}
STATUS_EX = {
    "valid": [{"status": "open", "priority": 2}],
    "invalid": [{"status": "pending", "priority": 2}, {"status": "open"}],
}


def write_registry(root, schemas):
    """A registry folder in the shipped layout: NAME.json plus NAME.examples.json."""
    for name, (schema, examples) in schemas.items():
        (root / f"{name}.json").write_text(json.dumps(schema, indent=2))
        (root / f"{name}.examples.json").write_text(json.dumps(examples, indent=2))
    return root


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    return write_registry(tmp_path_factory.mktemp("good"), {"status": (STATUS, STATUS_EX)})


@pytest.fixture(scope="module")
def ignored(tmp_path_factory):
    return write_registry(
        tmp_path_factory.mktemp("ignored"),
        {"status": (STATUS, STATUS_EX), "tags": (TAGS, TAGS_EX)},
    )


def _junit(path):
    suite = ET.parse(path).getroot().find("testsuite")
    return suite, {tc.get("name"): tc for tc in suite.iter("testcase")}


def test_check_passes_exit_0(good, tmp_path):
    junit = tmp_path / "junit.xml"
    res = runner.invoke(
        app, ["check", "--backend", "llguidance", "--registry", str(good), "--junit", str(junit)]
    )
    assert res.exit_code == 0, res.stdout + res.stderr
    assert "PASS status" in res.stdout
    suite, cases = _junit(junit)
    assert suite.get("tests") == "1" and suite.get("failures") == "0"
    assert cases["status"].find("failure") is None


def test_ignored_keyword_and_budget_fail_exit_1_with_advice(ignored, tmp_path):
    # One run covers both failure kinds (each backend run costs a worker start-up): with a
    # 0 ms budget every schema is over budget, and tags also has a keyword xgrammar ignores.
    junit = tmp_path / "junit.xml"
    res = runner.invoke(
        app,
        [
            "check",
            "--backend",
            "xgrammar",
            "--registry",
            str(ignored),
            "--compile-budget-ms",
            "0",
            "--json",
            "--junit",
            str(junit),
            "-q",
        ],
    )
    assert res.exit_code == 1, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    assert doc["passed"] is False and doc["failed"] == 2
    case = {c["schema"]: c for c in doc["cases"]}
    assert [p["kind"] for p in case["status"]["problems"]] == ["compile_budget"]
    assert (
        "> budget 0 ms: warm it at deploy (schemaops warm)" in case["status"]["problems"][0]["text"]
    )
    texts = [p["text"] for p in case["tags"]["problems"]]
    assert (
        "keyword uniqueItems is ignored by xgrammar: enforce it in application validation "
        "or drop it"
    ) in texts
    suite, cases = _junit(junit)
    assert suite.get("tests") == "2" and suite.get("failures") == "2"
    fails = [f for f in cases["tags"].iter("failure")]
    assert len(fails) == 1 and "uniqueItems" in fails[0].text
    assert "budget" in cases["status"].find("failure").get("message")


def test_usage_errors_exit_2(tmp_path):
    missing = runner.invoke(
        app, ["check", "--backend", "xgrammar", "--registry", str(tmp_path / "nope")]
    )
    assert missing.exit_code == 2
    assert runner.invoke(app, ["check", "--backend", "vllm"]).exit_code == 2
    assert runner.invoke(app, ["check"]).exit_code == 2  # --backend is required
    assert (
        runner.invoke(
            app, ["check", "--backend", "xgrammar,llguidance", "--registry", str(tmp_path)]
        ).exit_code
        == 2
    )


NOTE = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}
# U+007F is legal raw in a JSON string. outlines' string grammar refuses it raw and has no
# \u escapes at all, so a model under outlines cannot produce this valid value; llguidance
# refuses it raw but produces it as "\u007f".
NOTE_EX = {"valid": [{"note": "Zoë wrote \u007f"}], "invalid": [{}]}


@pytest.fixture(scope="module")
def note(tmp_path_factory):
    return write_registry(tmp_path_factory.mktemp("note"), {"note": (NOTE, NOTE_EX)})


def test_valid_non_ascii_content_no_tokenization_produces_fails_the_gate(note, tmp_path):
    junit = tmp_path / "junit.xml"
    args = ["check", "--registry", str(note), "--junit", str(junit), "-q"]
    res = runner.invoke(app, [*args, "--backend", "outlines"])
    assert res.exit_code == 1, res.stdout + res.stderr
    out = " ".join(res.stdout.split())  # rich wraps long lines
    assert "inside a non-ASCII string under every tokenization tried" in out
    assert "non-ASCII valid examples: 1 refused" in out
    suite, cases = _junit(junit)
    assert "rejects_valid_content=1" in cases["note"].find("system-out").text
    ok = runner.invoke(app, [*args, "--backend", "llguidance", "--json"])
    assert ok.exit_code == 0, ok.stdout + ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["accepted_retokenized"] == 1 and doc["rejects_valid_content"] == 0
    assert "produced only as \\u escapes" in doc["cases"][0]["warnings"][0]
