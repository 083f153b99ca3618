"""``lower --engine``, ``check --fix`` and what ``--out`` holds for a schema that could not be
lowered, on the real backends (xgrammar: milliseconds per compile).

The engine rules are ``check --engine``'s (SGLang 0.5.23, vLLM 0.32.0; checked against the
dev servers in tests/integration/). The mixed ``SHIPMENT`` schema lowered for the bare
xgrammar library is refused by both engines configured with xgrammar (a string ``format``
with a length bound), which is why ``--engine`` exists.
"""

from __future__ import annotations

import json
from pathlib import Path

from shared_schemas import LOOK, LOOK_EXAMPLES
from test_lower_e2e import SHIPMENT, SHIPMENT_EXAMPLES, _cli, _registry

from schemaops.check.engine import route, run_engine_check
from schemaops.lower import LOWERED_FROM, lower_registry
from schemaops.lower.fix import fix_registry
from schemaops.registry import load_registry
from schemaops.registry.model import canonical_text, openai_text

PLAIN = {"type": "object", "properties": {"q": {"type": "string", "enum": ["a", "b"]}}}
PLAIN_EXAMPLES = {"valid": [{"q": "a"}], "invalid": [{"q": "c"}]}


def test_engine_rules_apply_to_the_served_schema(tmp_path: Path) -> None:
    reg = _registry(tmp_path, {"shipment": (SHIPMENT, SHIPMENT_EXAMPLES)})
    bare = lower_registry(reg, "xgrammar", generate=0).cases[0]
    assert bare.lowered_ok and bare.engine is None
    # the bare-library lowering keeps a format with a length: both engines answer 400
    assert route(bare.doc, "sglang", "xgrammar").rejected
    assert route(bare.doc, "vllm", "xgrammar").rejected
    for engine, wire in (("sglang", canonical_text), ("vllm", openai_text)):
        rep = lower_registry(reg, "xgrammar", engine=engine, generate=5)
        (case,) = rep.cases
        assert rep.passed, case.problems
        assert not route(case.doc, engine, "xgrammar").rejected
        d = case.to_dict()["engine"]
        assert d["route"]["served_by"] == "xgrammar" and d["wire"] == wire(case.doc)
        assert ("/properties/contact/allOf/0/properties/email/maxLength", "maxLength") in {
            (r.pointer, r.keyword) for r in case.lowered.residual
        }
        assert rep.to_dict()["engine"]["release"] in ("0.5.23", "0.32.0")


def test_engine_via_cli_and_its_usage_error(tmp_path: Path) -> None:
    reg = _registry(tmp_path, {"shipment": (SHIPMENT, SHIPMENT_EXAMPLES)})
    out = tmp_path / "served"
    args = ("lower", "--registry", str(reg), "-b", "xgrammar", "--generate", "0", "-q")
    res = _cli(*args, "--engine", "sglang", "--out", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "engine sglang 0.5.23 configured xgrammar" in res.stdout
    # --generate 0 proves nothing: served (exit 0, as the contract says), never counted proven
    assert "0 of 1 schema(s) lowered and proven; 1 lowered but unproven" in res.stdout
    # the budget is not what this test is about: a loaded machine must not fail it on time
    gate = run_engine_check(out, "sglang", "xgrammar", compile_budget_ms=1e9)
    assert gate.passed, [p.text() for c in gate.failed for p in c.problems]
    assert _cli(*args, "--engine", "tgi").returncode == 2


def test_a_schema_not_lowered_is_not_written_as_served(tmp_path: Path) -> None:
    reg = _registry(tmp_path, {"look": (LOOK, LOOK_EXAMPLES)})
    out = tmp_path / "served"
    out.mkdir()
    # what an earlier, passing run would have left
    (out / "look.json").write_text(json.dumps({**LOOK, LOWERED_FROM: {"name": "look"}}))
    (out / "look.examples.json").write_text(json.dumps(LOOK_EXAMPLES))
    rep = lower_registry(reg, "xgrammar", out=out, generate=0)
    assert not rep.passed
    assert not (out / "look.json").exists() and not (out / "look.examples.json").exists()
    report = json.loads((out / ".lower" / "look.json").read_text())
    assert report["lowered"] is False and report["problems"]


def test_check_fix_gates_the_fixed_registry(tmp_path: Path) -> None:
    reg = _registry(
        tmp_path,
        {"shipment": (SHIPMENT, SHIPMENT_EXAMPLES), "plain": (PLAIN, PLAIN_EXAMPLES)},
    )
    out = tmp_path / "fixed"
    rep = fix_registry(reg, "xgrammar", out, generate=5)
    assert [c.schema for c in rep.before.failed] == ["shipment"]  # uniqueItems ignored, ...
    assert rep.passed and rep.fixed == ["shipment"] and rep.after.passed
    served = load_registry(out)
    assert sorted(s.name for s in served) == ["plain", "shipment"]
    assert (out / "plain.json").read_text() == (reg / "plain.json").read_text()
    assert served.get("shipment").schema[LOWERED_FROM]["backend"] == "xgrammar"
    assert "residual of shipment (check after decoding): /properties/tags/uniqueItems" in (
        rep.summary()
    )


def test_check_fix_cli_exit_codes(tmp_path: Path) -> None:
    reg = _registry(tmp_path, {"look": (LOOK, LOOK_EXAMPLES), "plain": (PLAIN, PLAIN_EXAMPLES)})
    out = tmp_path / "fixed"
    base = ("check", "--registry", str(reg), "-b", "xgrammar", "-q")
    res = _cli(*base, "--fix", "--out", str(out), "--json")
    assert res.returncode == 1, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    assert doc["passed"] is False and doc["not_lowered"] == ["look"]
    assert doc["after"]["passed"] is True  # what was written passes: look was left out
    assert "gate on" in res.stderr and "FAILED (exit 1)" in res.stderr
    assert not (out / "look.json").exists() and (out / "plain.json").is_file()
    assert (out / ".lower" / "look.json").is_file()
    text = _cli(*base, "--fix", "--out", str(tmp_path / "again"))
    assert text.returncode == 1 and "cannot be lowered (not written to" in text.stdout
    assert _cli(*base, "--fix").returncode == 2  # no --out
    assert _cli(*base, "--out", str(out)).returncode == 2  # --out without --fix
    assert _cli(*base, "--fix", "--out", str(reg / "x")).returncode == 2  # inside the registry
