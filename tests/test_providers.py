"""``check --target openai|anthropic|gemini``: every documented rule of each provider table has a
schema that triggers it and one that does not; the shipped registry's verdicts as read from
the rules; the CLI's exit codes, ``--json`` and ``--junit``.

No network: the tables are the providers' documented rules (schemaops/providers/*.py), so the
tests pin what each rule says, at which pointer, with which effect."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.errors import InputError
from schemaops.providers import TABLES, check_targets, judge_schema, parse_targets
from schemaops.providers.base import nesting, ref_cycles, walk
from schemaops.providers.report import junit_xml, render_text

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def obj(props: dict[str, Any], required: list[str] | None = None, **kw: Any) -> dict[str, Any]:
    """A closed object schema, every property required unless told otherwise."""
    return {
        "type": "object",
        "properties": props,
        "required": list(props) if required is None else required,
        "additionalProperties": False,
        **kw,
    }


OK = obj({"a": {"type": "string"}})


def nested(levels: int) -> dict[str, Any]:
    """``levels`` object schemas, each the only property of the one above."""
    s: dict[str, Any] = obj({"leaf": {"type": "string"}})
    for _ in range(levels - 1):
        s = obj({"n": s})
    return s


def many(n: int, prop: dict[str, Any], required: bool = True) -> dict[str, Any]:
    props = {f"p{i}": dict(prop) for i in range(n)}
    return obj(props, None if required else [])


def enums(total: int, per: int = 200) -> dict[str, Any]:
    """``total`` short enum values spread over enums of at most ``per`` values."""
    props, i = {}, 0
    while total > 0:
        k = min(per, total)
        props[f"e{i}"] = {"type": "string", "enum": [f"v{j}" for j in range(k)]}
        total, i = total - k, i + 1
    return obj(props)


def one_enum(n: int, width: int) -> dict[str, Any]:
    return obj({"e": {"type": "string", "enum": [f"{j:0{width}d}" for j in range(n)]}})


def prop(**kw: Any) -> dict[str, Any]:
    return obj({"a": kw})


# (target, rule id, schema that triggers it, pointer of the finding, schema that does not)
CASES: list[tuple[str, str, Any, str, Any]] = [
    # OpenAI
    ("openai", "root-object", {"anyOf": [OK, OK]}, "/anyOf", OK),
    ("openai", "root-object", {"type": "array", "items": OK}, "", OK),
    ("openai", "all-required", obj({"a": {}, "b": {}}, ["a"]), "/properties/b", OK),
    (
        "openai",
        "additional-properties",
        {**OK, "additionalProperties": True},
        "/additionalProperties",
        OK,
    ),
    (
        "openai",
        "additional-properties",
        prop(type="object", properties={}, required=[]),
        "/properties/a",
        prop(type="object", properties={}, required=[], additionalProperties=False),
    ),
    (
        "openai",
        "max-properties",
        many(5001, {"type": "string"}),
        "",
        many(5000, {"type": "string"}),
    ),
    ("openai", "max-nesting", nested(11), "/properties/n" * 10, nested(10)),
    (
        "openai",
        "max-string-size",
        obj({"a": {"type": "string", "enum": [f"{j:0600d}" for j in range(200)]}}),
        "",
        obj({"a": {"type": "string", "enum": [f"{j:0600d}" for j in range(199)]}}),
    ),
    ("openai", "max-enum-values", enums(1001), "", enums(1000)),
    ("openai", "max-large-enum-size", one_enum(251, 60), "/properties/e/enum", one_enum(250, 100)),
    (
        "openai",
        "unsupported-composition",
        prop(allOf=[{"type": "string"}]),
        "/properties/a/allOf",
        prop(anyOf=[{"type": "string"}, {"type": "null"}]),
    ),
    ("openai", "unsupported-composition", prop(**{"if": {}, "then": {}}), "/properties/a/if", OK),
    (
        "openai",
        "undocumented-keyword",
        prop(type="string", deprecated=True),
        "/properties/a/deprecated",
        prop(type="string", pattern="^a", default="a", examples=["a"], **{"$comment": "c"}),
    ),
    # a nested $id is refused (openai-node assertNoNestedSchemaIds); a root one is accepted
    (
        "openai",
        "undocumented-keyword",
        prop(type="string", **{"$id": "https://example.com/a"}),
        "/properties/a/$id",
        {
            **OK,
            "$id": "https://example.com/s",
            "$schema": "http://json-schema.org/draft-07/schema#",
        },
    ),
    (
        "openai",
        "string-length",
        prop(type="string", minLength=1),
        "/properties/a/minLength",
        prop(type="string", pattern="^a"),
    ),
    (
        "openai",
        "anyof-first-keys",
        prop(anyOf=[obj({"kind": {"const": "a"}}), obj({"kind": {"const": "b"}, "n": {}})]),
        "/properties/a/anyOf/1",
        prop(anyOf=[obj({"kind": {"const": "a"}}), obj({"n": {}, "kind": {"const": "b"}})]),
    ),
    (
        "openai",
        "anyof-first-keys",
        obj(
            {"a": {"anyOf": [{"$ref": "#/$defs/x"}, {"$ref": "#/$defs/y"}]}},
            **{"$defs": {"x": obj({"id": {"type": "string"}}), "y": obj({"id": {}, "z": {}})}},
        ),
        "/properties/a/anyOf/1",
        obj(
            {"a": {"anyOf": [{"$ref": "#/$defs/x"}, {"type": "null"}]}},
            **{"$defs": {"x": obj({"id": {"type": "string"}})}},
        ),
    ),
    (
        "openai",
        "format-value",
        prop(type="string", format="uri"),
        "/properties/a/format",
        prop(type="string", format="email"),
    ),
    (
        "openai",
        "ref-siblings",
        obj({"a": {"$ref": "#/$defs/x", "type": "object"}}, **{"$defs": {"x": OK}}),
        "/properties/a/type",
        obj(
            {"a": {"$ref": "#/$defs/x", "description": "d", "default": {"a": "x"}}},
            **{"$defs": {"x": OK}},
        ),
    ),
    # Anthropic
    (
        "anthropic",
        "recursive",
        obj({"next": {"$ref": "#"}}, []),
        "/properties/next",
        obj({"x": {"$ref": "#/$defs/x"}}, **{"$defs": {"x": {"type": "string"}}}),
    ),
    (
        "anthropic",
        "recursive",
        obj(
            {"l": {"$ref": "#/$defs/n"}},
            **{
                "$defs": {
                    "n": obj(
                        {
                            "v": {"type": "number"},
                            "next": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]},
                        }
                    )
                }
            },
        ),
        "/$defs/n/properties/next/anyOf/0",
        OK,
    ),
    (
        "anthropic",
        "numeric-constraints",
        prop(type="integer", minimum=1),
        "/properties/a/minimum",
        prop(type="integer"),
    ),
    (
        "anthropic",
        "numeric-constraints",
        prop(type="number", exclusiveMinimum=0),
        "/properties/a/exclusiveMinimum",
        prop(type="number"),
    ),
    (
        "anthropic",
        "string-length",
        prop(type="string", maxLength=5),
        "/properties/a/maxLength",
        prop(type="string", format="uuid"),
    ),
    (
        "anthropic",
        "array-constraints",
        prop(type="array", minItems=2),
        "/properties/a/minItems",
        prop(type="array", minItems=1),
    ),
    (
        "anthropic",
        "array-constraints",
        prop(type="array", maxItems=3),
        "/properties/a/maxItems",
        prop(type="array", minItems=0),
    ),
    ("anthropic", "additional-properties", {"type": "object", "properties": {}}, "", OK),
    (
        "anthropic",
        "enum-complex",
        prop(enum=[{"a": 1}]),
        "/properties/a/enum/0",
        prop(enum=["x", 1, True, None]),
    ),
    (
        "anthropic",
        "external-ref",
        prop(**{"$ref": "https://example.com/s.json"}),
        "/properties/a/$ref",
        obj({"a": {"$ref": "#/$defs/x"}}, **{"$defs": {"x": {"type": "string"}}}),
    ),
    (
        "anthropic",
        "allof-ref",
        obj({"a": {"allOf": [{"$ref": "#/$defs/x"}]}}, **{"$defs": {"x": {"type": "string"}}}),
        "/properties/a/allOf/0/$ref",
        prop(allOf=[{"type": "string"}]),
    ),
    (
        "anthropic",
        "format-value",
        prop(type="string", format="regex"),
        "/properties/a/format",
        prop(type="string", format="ipv4"),
    ),
    (
        "anthropic",
        "pattern-features",
        prop(type="string", pattern="^(?=a)a+$"),
        "/properties/a/pattern",
        prop(type="string", pattern="^[a-z]{2,8}$"),
    ),
    (
        "anthropic",
        "pattern-features",
        prop(type="string", pattern="\\bword"),
        "/properties/a/pattern",
        prop(type="string", pattern="^\\+[1-9][0-9]{7,14}$"),
    ),
    (
        "anthropic",
        "pattern-features",
        prop(type="string", pattern="^(?P<a>x)(?P=a)$"),
        "/properties/a/pattern",
        prop(type="string", pattern="^(?P<a>x)[\\b]$"),
    ),
    (
        "anthropic",
        "pattern-large-quantifier",
        prop(type="string", pattern="^[0-9]{1,5000}$"),
        "/properties/a/pattern",
        prop(type="string", pattern="^[0-9]{1, 5000}[{]5000}$"),
    ),
    (
        "anthropic",
        "pattern-quantifier-range",
        prop(type="string", pattern="^a{101}$"),
        "/properties/a/pattern",
        prop(type="string", pattern="^a{100}$"),
    ),
    (
        "anthropic",
        "max-optional",
        many(25, {"type": "string"}, required=False),
        "",
        many(24, {"type": "string"}, required=False),
    ),
    (
        "anthropic",
        "max-unions",
        many(17, {"type": ["string", "null"]}),
        "",
        many(16, {"type": ["string", "null"]}),
    ),
    ("anthropic", "undocumented-keyword", {**OK, "minProperties": 1}, "/minProperties", OK),
    # Gemini
    (
        "gemini",
        "unsupported-keyword",
        prop(type="string", pattern="^a"),
        "/properties/a/pattern",
        prop(type="string", title="t", **{"x-note": 1}),
    ),
    ("gemini", "unsupported-keyword", prop(const="x"), "/properties/a/const", prop(enum=["x"])),
    (
        "gemini",
        "enum-types",
        prop(enum=[True, False]),
        "/properties/a/enum/0",
        prop(enum=["a", 1, 2.5]),
    ),
    (
        "gemini",
        "oneof-as-anyof",
        prop(oneOf=[{"type": "string"}, {"type": "integer"}]),
        "/properties/a/oneOf",
        prop(anyOf=[{"type": "string"}, {"type": "integer"}]),
    ),
    (
        "gemini",
        "ref-siblings",
        obj({"a": {"$ref": "#/$defs/x", "type": "object"}}, **{"$defs": {"x": {}}}),
        "/properties/a/type",
        obj(
            {"a": {"$ref": "#/$defs/x", "$comment": "c", "description": "d"}},
            **{"$defs": {"x": {}}},
        ),
    ),
    (
        "gemini",
        "cyclic-required",
        obj({"child": {"$ref": "#"}}),
        "/properties/child",
        obj({"child": {"$ref": "#"}}, []),
    ),
]


# Azure OpenAI: OpenAI's rules under azure. ids (the same schemas), and its own default rule
CASES += [("azure", rid, bad, where, good) for t, rid, bad, where, good in CASES if t == "openai"]
CASES.append(
    (
        "azure",
        "default",
        prop(type="integer", default=3),
        "/properties/a/default",
        {**OK, "default": {}},
    )
)


def ids(case: tuple) -> str:
    return f"{case[0]}.{case[1]}:{case[3] or 'root'}"


@pytest.mark.parametrize("case", CASES, ids=[ids(c) for c in CASES])
def test_rule_fires_on_its_schema_and_not_on_the_other(case):
    target, rid, bad, where, good = case
    rule_id = f"{target}.{rid}"
    hit = judge_schema("s", bad, target)
    fired = [f for f in hit.findings if f.rule.id == rule_id]
    assert fired, f"{rule_id} did not fire: {[f.rule.id for f in hit.findings]}"
    assert where in {f.pointer for f in fired}
    expected = {"refused": "refused", "restricted": "unproven", "ignored": "accepted_ignored"}
    assert hit.verdict == expected[TABLES[target].rules[rule_id].effect]
    assert hit.passed == (hit.verdict != "refused")
    miss = judge_schema("s", good, target)
    assert rule_id not in {f.rule.id for f in miss.findings}


def test_every_rule_of_every_table_has_a_case_and_a_source():
    covered = {f"{t}.{r}" for t, r, *_ in CASES}
    for table in TABLES.values():
        for rid, rule in table.rules.items():
            assert rid in covered, f"no case triggers {rid}"
            assert rule.source.startswith("https://")
            assert rule.read in ("2026-12-01", "2026-12-03") and rule.read <= table.version
            assert rule.effect in ("refused", "restricted", "ignored")


@pytest.mark.parametrize("target", list(TABLES))
def test_a_plain_closed_object_is_accepted_everywhere(target):
    assert judge_schema("s", OK, target).verdict == "accepted"


# --- the shipped registry, verdicts read from the rules -------------------------------------

# OpenAI: every shipped schema leaves a property out of "required" (all-required), so all are
# refused; tool_call's root is anyOf. Anthropic: only cancel_subscription and
# schedule_callback use nothing outside the subset (enum, pattern without lookaround,
# uuid/date-time formats, minItems absent, every object closed); the rest carry
# minLength/maxLength, minimum/maximum, maxItems, minProperties or x-schemaops-version.
# Gemini: nothing is refused (no $ref with siblings, no cycle); pattern, minLength,
# maxLength, exclusiveMinimum, minProperties and const are dropped, and search_orders uses
# only listed keywords (format, enum, minimum, maximum).
SHIPPED = {
    "cancel_subscription": ("refused", "accepted", "accepted_ignored"),
    "create_ticket": ("refused", "refused", "accepted_ignored"),
    "get_order": ("refused", "refused", "accepted_ignored"),
    "issue_refund": ("refused", "refused", "accepted_ignored"),
    "kb_search": ("refused", "refused", "accepted_ignored"),
    "schedule_callback": ("refused", "accepted", "accepted_ignored"),
    "search_orders": ("refused", "refused", "accepted"),
    "tool_call": ("refused", "refused", "accepted_ignored"),
    "update_profile": ("refused", "refused", "accepted_ignored"),
}


@pytest.fixture(scope="module")
def shipped():
    return check_targets(REPO / "schemas", ["openai", "anthropic", "gemini"])


def test_shipped_registry_verdicts(shipped):
    got = {(r.schema, r.target): r for r in shipped.results}
    for name, verdicts in SHIPPED.items():
        for target, verdict in zip(("openai", "anthropic", "gemini"), verdicts, strict=True):
            assert got[(name, target)].verdict == verdict, (name, target)
    assert len(shipped.results) == 3 * len(SHIPPED)
    assert not shipped.passed


def test_shipped_registry_findings_name_rule_and_pointer(shipped):
    got = {(r.schema, r.target): r for r in shipped.results}
    tool_openai = got[("tool_call", "openai")]
    assert tool_openai.refused[0].rule.id == "openai.root-object"
    assert tool_openai.refused[0].pointer == "/anyOf"
    cancel = {(f.rule.id, f.pointer) for f in got[("cancel_subscription", "openai")].refused}
    assert cancel == {
        ("openai.all-required", "/properties/feedback"),
        ("openai.all-required", "/properties/offer_retention"),
    }
    # The tool-name discriminator is dropped by Gemini: a residual to re-check.
    residual = {f.pointer for f in got[("tool_call", "gemini")].residual}
    assert "/anyOf/0/properties/tool/const" in residual
    refund = {f.pointer for f in got[("issue_refund", "anthropic")].refused}
    assert "/$defs/common__money/properties/amount/exclusiveMinimum" in refund


# --- walker, cycles, bounded answers ---------------------------------------------------------


def test_pointers_are_escaped():
    s = obj({"a/b": {"type": "string", "minLength": 1}, "t~": {"type": "string"}})
    ptrs = {f.pointer for f in judge_schema("s", s, "gemini").residual}
    assert ptrs == {"/properties/a~1b/minLength"}


def test_defs_count_where_used_for_nesting():
    s = obj({"x": {"$ref": "#/$defs/d"}}, **{"$defs": {"d": nested(3)}})
    assert nesting(s)[0] == 4


def test_cycles_through_defs_and_not_through_unused_defs():
    s = obj({"a": {"type": "string"}}, **{"$defs": {"loop": {"$ref": "#/$defs/loop"}}})
    assert ref_cycles(s) == []  # kept but never used: not a recursive schema
    used = obj({"a": {"$ref": "#/$defs/loop"}}, **{"$defs": {"loop": {"$ref": "#/$defs/loop"}}})
    assert [c.closing for c in ref_cycles(used)] == ["/$defs/loop"]


def test_deep_and_wide_hostile_schemas_get_a_bounded_answer():
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(5000):
        deep = {"type": "array", "items": deep}
    assert len(walk(deep)) == 5001
    assert judge_schema("s", deep, "openai").verdict == "refused"  # root not an object
    # Every def refers twice to the next: 2^40 paths if refs were expanded naively.
    defs = {
        f"d{i}": obj({"l": {"$ref": f"#/$defs/d{i + 1}"}, "r": {"$ref": f"#/$defs/d{i + 1}"}})
        for i in range(40)
    }
    defs["d40"] = {"type": "string"}
    fan = obj({"x": {"$ref": "#/$defs/d0"}}, **{"$defs": defs})
    for target in TABLES:
        judge_schema("s", fan, target)  # returns: visits are bounded


def test_unknown_target_is_a_usage_error():
    with pytest.raises(InputError):
        parse_targets(["openai", "bedrock"])
    assert parse_targets(["Gemini", "openai", "gemini"]) == ["gemini", "openai"]


# --- reports and the CLI ---------------------------------------------------------------------


def test_text_table_has_rule_pointer_and_source(shipped):
    text = render_text(shipped)
    head = text.splitlines()[0].split()
    assert head == ["schema", "target", "verdict", "rule", "pointer", "source"]
    row = next(
        line for line in text.splitlines() if line.startswith("tool_call") and "openai" in line
    )
    assert "openai.root-object" in row and "/anyOf" in row and "[" in row
    assert "https://platform.openai.com/docs/guides/structured-outputs" in text
    line = next(x for x in text.splitlines() if x.startswith("gemini (rules of 2026-12-03)"))
    assert ": 1 accepted, 8 accepted with ignored keywords," in line
    assert "0 accepted narrower" in line and "0 unproven" in line and line.endswith("0 refused")


def write(root: Path, name: str, schema: Any) -> None:
    (root / f"{name}.json").write_text(json.dumps(schema))


def test_cli_exit_0_when_accepted_or_ignored_and_json_document(tmp_path):
    write(tmp_path, "plain", OK)
    write(tmp_path, "loose", prop(type="string", pattern="^a"))
    res = runner.invoke(app, ["check", "--registry", str(tmp_path), "--target", "gemini", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["passed"] is True and doc["targets"] == ["gemini"]
    counts = doc["counts"]["gemini"]
    assert (counts["accepted"], counts["accepted_ignored"], counts["refused"]) == (1, 1, 0)
    assert counts["unproven"] == 0 and sum(counts.values()) == 2
    loose = next(r for r in doc["results"] if r["schema"] == "loose")
    assert loose["verdict"] == "accepted_ignored"
    assert loose["residual"][0]["pointer"] == "/properties/a/pattern"
    assert loose["residual"][0]["source"].startswith("https://ai.google.dev/")
    assert doc["tables"]["gemini"]["version"] == "2026-12-03"


def test_cli_exit_1_on_refused_with_junit(tmp_path):
    write(tmp_path, "plain", OK)
    write(tmp_path, "open", obj({"a": {"type": "string"}, "b": {"type": "string"}}, ["a"]))
    junit = tmp_path / "out" / "hosted.xml"
    junit.parent.mkdir()
    res = runner.invoke(
        app,
        [
            "check",
            "--registry",
            str(tmp_path),
            "-t",
            "openai",
            "-t",
            "gemini",
            "--junit",
            str(junit),
        ],
    )
    assert res.exit_code == 1
    assert "refused" in res.stdout and "openai.all-required" in res.stdout
    root = ET.parse(junit).getroot()
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "schemaops check --target openai",
        "schemaops check --target gemini",
    ]
    assert root.get("tests") == "4" and root.get("failures") == "1"
    cases = {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}
    fail = cases[("schemaops.hosted.openai", "open")].find("failure")
    assert fail is not None and fail.get("type") == "openai.all-required"
    assert "/properties/b" in fail.get("message")
    assert cases[("schemaops.hosted.gemini", "open")].find("failure") is None


def test_cli_usage_errors_exit_2(tmp_path):
    write(tmp_path, "plain", OK)
    res = runner.invoke(app, ["check", "--registry", str(tmp_path), "--target", "bedrock"])
    assert res.exit_code == 2 and "unknown target" in res.output
    res = runner.invoke(app, ["check", "--registry", str(tmp_path / "missing"), "-t", "openai"])
    assert res.exit_code == 2
    res = runner.invoke(app, ["check", "--registry", str(tmp_path), "-t", "openai", "--fix"])
    assert res.exit_code == 2
    (tmp_path / "broken.json").write_text("{not json")
    res = runner.invoke(app, ["check", "--registry", str(tmp_path), "-t", "openai"])
    assert res.exit_code == 2
    res = runner.invoke(app, ["check", "--registry", str(tmp_path)])
    assert res.exit_code == 2 and "--backend" in res.output


def test_junit_merges_after_another_document(shipped):
    extra = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="1" failures="0">'
        '<testsuite name="schemaops check xgrammar" tests="1" failures="0">'
        '<testcase name="x"/></testsuite></testsuites>'
    )
    root = ET.fromstring(junit_xml(shipped, extra).split("\n", 1)[1])
    names = [s.get("name") for s in root.findall("testsuite")]
    assert names[0] == "schemaops check xgrammar" and len(names) == 4
    # 9 schemas x 3 targets, and the support_agent tool set: its own row and 5 tools, x 3
    assert root.get("tests") == str(1 + 27 + 3 * 6)


def test_cli_target_beside_backend_one_document_and_both_gates(tmp_path):
    """--backend xgrammar passes (the schema compiles and is enforced) while OpenAI refuses
    the optional property: exit 1, one JSON document with the hosted report attached."""
    schema = obj({"status": {"enum": ["open", "closed"]}, "note": {"type": "string"}}, ["status"])
    write(tmp_path, "ticket", schema)
    (tmp_path / "ticket.examples.json").write_text(
        json.dumps({"valid": [{"status": "open"}], "invalid": [{"status": "pending"}]})
    )
    res = runner.invoke(
        app,
        ["check", "--registry", str(tmp_path), "-b", "xgrammar", "-q", "-t", "openai", "--json"],
    )
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    assert doc["backend"] == "xgrammar" and doc["failed"] == 0
    assert doc["hosted"]["passed"] is False and doc["passed"] is False
    assert doc["hosted"]["results"][0]["refused"][0]["pointer"] == "/properties/note"


def test_cli_escapes_control_characters_from_the_registry(tmp_path):
    """A property name carrying an escape sequence reaches the table as a pointer: printed
    escaped, never raw (it would drive the terminal)."""
    write(tmp_path, "evil", obj({"a\x1b[2J": {"type": "string"}}, []))
    res = runner.invoke(app, ["check", "--registry", str(tmp_path), "-t", "openai"])
    assert res.exit_code == 1
    assert "\x1b" not in res.stdout and "/properties/a" in res.stdout


def test_cli_bad_target_beside_a_backend_is_refused_before_compiling(tmp_path):
    write(tmp_path, "plain", OK)
    res = runner.invoke(
        app, ["check", "--registry", str(tmp_path), "-b", "xgrammar", "-t", "bedrock"]
    )
    assert res.exit_code == 2 and "unknown target" in res.output
    assert "ready for xgrammar" not in res.output  # nothing was compiled or reported
