"""The provider tables re-read against what the providers do (issue 33, items 11-14): each
case pins the verdict itself, not the table's own effect, so a table that drifts back to a
false 400 (or a false accept) fails here; the CLI shows an ``unproven`` pair and passes it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.providers import judge_schema

runner = CliRunner()


def obj(props: dict[str, Any], required: list[str] | None = None, **kw: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": list(props) if required is None else required,
        "additionalProperties": False,
        **kw,
    }


def prop(**kw: Any) -> dict[str, Any]:
    return obj({"a": kw})


def tree(required: bool) -> dict[str, Any]:
    """A recursive schema whose cycle runs through a required (or an optional) property."""
    node = obj(
        {"v": {"type": "integer"}, "child": {"$ref": "#/$defs/n"}},
        None if required else ["v"],
    )
    return obj({"root": {"$ref": "#/$defs/n"}}, **{"$defs": {"n": node}})


# (target, schema, verdict, the rule that decides it or None)
CASES: list[tuple[str, str, Any, str, str | None]] = [
    # 11: what openai-python sends for ordinary models
    ("openai", "default", prop(type="integer", default=3), "accepted", None),
    ("openai", "default-object", prop(type="object", properties={}, required=[],
                                      additionalProperties=False, default={}), "accepted", None),
    ("openai", "minLength", prop(type="string", minLength=2, maxLength=8),
     "accepted_ignored", "openai.string-length"),
    # 12: the API's "must not share identical first keys"
    ("openai", "first-keys",
     prop(anyOf=[obj({"t": {"const": "a"}}), obj({"t": {"const": "b"}})]),
     "refused", "openai.anyof-first-keys"),
    ("openai", "first-keys-differ",
     prop(anyOf=[obj({"t": {"const": "a"}}), obj({"u": {"const": "b"}})]), "accepted", None),
    # 13: annotations the SDKs send; root $schema/$id
    ("openai", "comment-examples",
     prop(type="string", examples=["x"], readOnly=True, **{"$comment": "c"}), "accepted", None),
    ("openai", "root-schema-id",
     {**prop(type="string"), "$schema": "https://json-schema.org/draft/2020-12/schema",
      "$id": "https://example.com/s"}, "accepted", None),
    ("openai", "ref-beside-description",
     obj({"a": {"$ref": "#/$defs/x", "description": "d"}},
         **{"$defs": {"x": prop(type="string")}}), "accepted", None),
    # 13: Azure OpenAI refuses a default api.openai.com serves (a separate target)
    ("azure", "default", prop(type="integer", default=3), "refused", "azure.default"),
    ("azure", "no-default", prop(type="string", examples=["x"]), "accepted", None),
    ("azure", "first-keys",
     prop(anyOf=[obj({"t": {"const": "a"}}), obj({"t": {"const": "b"}})]),
     "refused", "azure.anyof-first-keys"),
    # 14: Gemini's restrictions are not documented 400s
    ("gemini", "cycle-through-required", tree(True), "unproven", "gemini.cyclic-required"),
    ("gemini", "cycle-through-optional", tree(False), "accepted", None),
    ("gemini", "ref-beside-type",
     obj({"a": {"$ref": "#/$defs/x", "type": "string"}}, **{"$defs": {"x": {"type": "string"}}}),
     "unproven", "gemini.ref-siblings"),
    ("gemini", "ref-beside-default",
     obj({"a": {"$ref": "#/$defs/x", "default": "d"}}, **{"$defs": {"x": {"type": "string"}}}),
     "accepted", None),
    # 14: Anthropic's large quantifiers; Python's named backreference
    ("anthropic", "large-quantifier", prop(type="string", pattern="^[a-z]{1,5000}$"),
     "refused", "anthropic.pattern-large-quantifier"),
    ("anthropic", "open-large-quantifier", prop(type="string", pattern="^x{2000,}$"),
     "refused", "anthropic.pattern-large-quantifier"),
    ("anthropic", "middle-quantifier", prop(type="string", pattern="^[a-z]{1,500}$"),
     "unproven", "anthropic.pattern-quantifier-range"),
    ("anthropic", "small-quantifier", prop(type="string", pattern="^[a-z]{1,100}$"),
     "accepted", None),
    ("anthropic", "spaced-is-literal", prop(type="string", pattern="^a{1, 5000}$"),
     "accepted", None),
    ("anthropic", "named-backreference", prop(type="string", pattern="^(?P<q>['\"]).*(?P=q)$"),
     "refused", "anthropic.pattern-features"),
    ("anthropic", "backspace-in-class", prop(type="string", pattern="^[\\b\\t]+$"),
     "accepted", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("target", "name", "schema", "verdict", "rule"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_reread_verdict(target, name, schema, verdict, rule):
    v = judge_schema(name, schema, target)
    assert v.verdict == verdict, [(f.rule.id, f.pointer, f.message) for f in v.findings]
    if rule is not None:
        assert rule in {f.rule.id for f in v.findings}
    assert v.passed == (verdict != "refused")


def test_cli_unproven_passes_the_gate_and_is_listed(tmp_path: Path):
    (tmp_path / "tree.json").write_text(json.dumps(tree(True)))
    junit = tmp_path / "out.xml"
    args = ["check", "--registry", str(tmp_path), "--target", "gemini"]
    res = runner.invoke(app, [*args, "--json", "--junit", str(junit)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["passed"] is True
    assert doc["counts"]["gemini"]["unproven"] == 1
    (result,) = doc["results"]
    assert result["verdict"] == "unproven" and result["refused"] == []
    assert result["unproven"][0]["rule"] == "gemini.cyclic-required"
    assert result["unproven"][0]["effect"] == "restricted"
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0"
    assert "unproven: gemini.cyclic-required" in ET.tostring(suite, encoding="unicode")
    text = runner.invoke(app, args)
    assert text.exit_code == 0
    assert "gemini.cyclic-required" in text.stdout
    assert "1 unproven" in text.stdout
