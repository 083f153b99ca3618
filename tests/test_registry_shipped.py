"""The shipped example registry: loads cleanly, every example behaves, wire strings exact."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import jsonschema
import pytest
from jsonschema.exceptions import best_match
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.registry import load_registry
from schemaops.registry.refs import iter_subschemas

runner = CliRunner()
TOOLS = {
    "get_order",
    "search_orders",
    "update_profile",
    "create_ticket",
    "kb_search",
    "issue_refund",
    "schedule_callback",
    "cancel_subscription",
}


@pytest.fixture(scope="module")
def reg(registry_dir):
    return load_registry(registry_dir)


def test_shipped_registry_has_the_tool_set(reg):
    assert TOOLS | {"tool_call"} == set(reg.schemas)
    assert set(reg.libraries) == {"common"}
    # schemas/support_agent.tools.json: a tool set (issue 35), never a schema "support_agent.tools"
    assert set(reg.toolsets) == {"support_agent"}
    assert set(reg.toolset("support_agent").names) <= TOOLS
    assert reg.get("get_order").version == "2"
    assert reg.get("issue_refund").version == "3"
    assert reg.get("create_ticket").version == "1"


def test_every_example_checked_independently(reg):
    """Re-check each sidecar example with a fresh jsonschema validator (format asserted)."""
    n_valid = n_invalid = 0
    for s in reg:
        assert len(s.valid) >= 3 and len(s.invalid) >= 3, s.name
        v = jsonschema.Draft202012Validator(
            json.loads(s.wire()), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
        )
        for inst in s.valid:
            assert v.is_valid(inst), (s.name, inst, best_match(v.iter_errors(inst)))
            n_valid += 1
        for inst in s.invalid:
            assert not v.is_valid(inst), (s.name, inst)
            n_invalid += 1
    assert n_valid >= 27 and n_invalid >= 27


def test_invalid_examples_cover_each_keyword_family(reg):
    kinds: Counter = Counter()
    for s in reg:
        v = s.validator()
        for inst in s.invalid:
            for err in v.iter_errors(inst):
                kinds[err.validator] += 1
                for sub in err.context or []:
                    kinds[sub.validator] += 1
    for kw in ("enum", "required", "type", "additionalProperties", "format", "pattern"):
        assert kinds[kw] > 0, kw
    bounds = {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
    }
    assert len(bounds & set(kinds)) >= 6, kinds


def test_wire_strings_exact(reg):
    for s in reg:
        native, openai = s.wire("native"), s.wire("openai")
        bundled = s.bundled()
        assert native == json.dumps(bundled, separators=(",", ":"), ensure_ascii=False)
        assert openai == json.dumps(bundled)
        assert json.loads(native) == bundled == json.loads(openai)
        # key order preserved, never sorted: property order is generation order
        assert list(json.loads(native)) == list(bundled)
        assert s.hash == hashlib.sha256(native.encode()).hexdigest()
    ticket = reg.get("create_ticket")
    props = list(json.loads(ticket.wire())["properties"])
    assert props[:3] == ["customer_id", "subject", "body"]  # as written in the file, not sorted
    assert ticket.wire("openai").startswith('{"title": "create_ticket", "description": ')
    with pytest.raises(ValueError):
        ticket.wire("grpc")  # type: ignore[arg-type]


def test_cross_file_refs_are_bundled_self_contained(reg):
    """get_order/issue_refund/tool_call refer to other files; their wire form must not."""
    for name in ("get_order", "issue_refund", "tool_call"):
        s = reg.get(name)
        assert s.self_contained is not None
        assert "common.json" in json.dumps(s.schema) or name == "tool_call"
        for node, _, _ in iter_subschemas(s.bundled(), "file:///x.json", "2020-12"):
            if "$ref" in node:
                assert node["$ref"].startswith("#/$defs/"), (name, node["$ref"])
    money = reg.get("issue_refund").bundled()["$defs"]["common__money"]
    assert money["properties"]["currency"]["enum"][:2] == ["USD", "EUR"]
    tool_call = json.loads(reg.get("tool_call").wire())
    assert [b["properties"]["tool"]["const"] for b in tool_call["anyOf"]][0] == "get_order"
    assert TOOLS <= set(tool_call["$defs"])
    # self-contained schemas are sent exactly as written (same object, no copy)
    assert reg.get("kb_search").bundled() is reg.get("kb_search").schema


def test_cli_validate_json_names_every_schema_with_hash(reg, registry_dir):
    result = runner.invoke(app, ["registry", "validate", str(registry_dir), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["ok"] is True and doc["problems"] == []
    assert {r["name"]: r["hash"] for r in doc["schemas"]} == {s.name: s.hash for s in reg}


@pytest.mark.parametrize("api", ["native", "openai"])
def test_cli_export_is_byte_exact(reg, registry_dir, tmp_path, api):
    for name in ("tool_call", "update_profile"):
        args = ["registry", "export", name, "--api", api, "--registry", str(registry_dir)]
        result = runner.invoke(app, args)
        assert result.exit_code == 0
        assert result.stdout_bytes == reg.get(name).wire(api).encode("utf-8")  # no newline
        out = tmp_path / f"{name}.{api}"
        assert runner.invoke(app, [*args, "--output", str(out)]).exit_code == 0
        assert out.read_bytes() == reg.get(name).wire(api).encode("utf-8")


def test_cli_list_show_hash_json(reg, registry_dir):
    r = ["--registry", str(registry_dir)]
    listed = json.loads(runner.invoke(app, ["registry", "list", *r, "--json"]).stdout)
    assert [x["name"] for x in listed["schemas"]] == sorted(reg.schemas)
    shown = json.loads(
        runner.invoke(app, ["registry", "show", "issue_refund", *r, "--json"]).stdout
    )
    assert shown["version"] == "3" and shown["examples"] == {"valid": 3, "invalid": 7}
    assert shown["wire_sha256"]["native"] == reg.get("issue_refund").hash
    hashes = json.loads(runner.invoke(app, ["registry", "hash", *r, "--json"]).stdout)
    for row in hashes["schemas"]:
        wire = reg.get(row["name"]).wire("openai").encode()
        assert row["openai_sha256"] == hashlib.sha256(wire).hexdigest()
    human = runner.invoke(app, ["registry", "list", *r])
    assert human.exit_code == 0 and "schedule_callback" in human.stdout


def test_load_schema_file_matches_registry(reg, registry_dir):
    """A single file (audit --schema FILE) resolves its cross-file refs like the registry."""
    from schemaops.registry import load_schema_file

    for s in reg:
        one = load_schema_file(registry_dir / f"{s.name}.json")
        assert (one.name, one.version, one.hash) == (s.name, s.version, s.hash)
        assert one.wire("openai") == s.wire("openai")
        assert (one.valid, one.invalid) == (s.valid, s.invalid)
