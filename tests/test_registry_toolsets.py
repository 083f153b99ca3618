"""Tool sets in the registry (issue 35): NAME.tools.json is checked, bundled, hashed, exported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.registry import LazyRegistry, inspect_registry, load_registry
from schemaops.registry.toolsets import refused_by

runner = CliRunner()


def _fn(name: str, parameters: object = None, **extra: object) -> dict:
    fn: dict = {"name": name, **extra}
    if parameters is not None:
        fn["parameters"] = parameters
    return {"type": "function", "function": fn}


OBJ = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


@pytest.fixture
def reg_dir(tmp_path: Path, registry_dir: Path) -> Path:
    out = tmp_path / "reg"
    shutil.copytree(registry_dir, out)
    return out


def _write(folder: Path, name: str, tools: object) -> Path:
    f = folder / f"{name}.tools.json"
    f.write_text(json.dumps(tools))
    return f


def _kinds(folder: Path) -> list[tuple[str, str]]:
    _, problems = inspect_registry(folder)
    return [(p["pointer"], p["kind"]) for p in problems]


def test_shipped_tool_set_refs_bundled_and_not_a_schema(registry_dir: Path) -> None:
    reg = load_registry(registry_dir)
    assert "support_agent.tools" not in reg.schemas
    ts = reg.toolset("support_agent")
    assert ts.names == ["get_order", "search_orders", "create_ticket", "issue_refund", "kb_search"]
    wire = json.loads(ts.wire())
    params = wire["tools"][0]["function"]["parameters"]
    # the whole-schema $ref is the schema itself; its ref to the library is bundled locally
    assert params["type"] == "object" and "$ref" not in params
    assert params["properties"]["order_id"] == {"$ref": "#/$defs/common__order_id"}
    assert params["$defs"]["common__order_id"]["pattern"] == "^ORD-[0-9]{8}$"
    assert ts.wire() == json.dumps(wire, separators=(",", ":"), ensure_ascii=False)
    assert "common.json" not in ts.wire()


def test_lazy_registry_does_not_index_a_tool_set_as_schema(registry_dir: Path) -> None:
    lazy = LazyRegistry(registry_dir)
    assert "support_agent.tools" not in set(lazy.names())


def test_hash_follows_a_library_change(reg_dir: Path) -> None:
    before = load_registry(reg_dir).toolset("support_agent").hash
    common = json.loads((reg_dir / "common.json").read_text())
    common["$defs"]["order_id"]["description"] = "changed"
    (reg_dir / "common.json").write_text(json.dumps(common))
    assert load_registry(reg_dir).toolset("support_agent").hash != before


def test_not_an_array_and_not_function_tools(reg_dir: Path) -> None:
    _write(reg_dir, "a", {"tools": []})
    _write(reg_dir, "b", [{"type": "web_search"}, {"type": "function", "function": 3}])
    kinds = _kinds(reg_dir)
    assert ("", "not_tools") in kinds
    assert ("/0", "not_function_tool") in kinds
    assert ("/1/function", "not_function_tool") in kinds


def test_duplicate_and_provider_refused_names(reg_dir: Path) -> None:
    _write(reg_dir, "t", [_fn("find", OBJ), _fn("find", OBJ), _fn("a.b", OBJ), _fn("x" * 65, OBJ)])
    kinds = _kinds(reg_dir)
    assert ("/1/function/name", "duplicate_tool") in kinds
    assert ("/2/function/name", "bad_tool_name") in kinds  # OpenAI and Anthropic refuse '.'
    assert ("/3/function/name", "bad_tool_name") in kinds
    assert refused_by("a.b") == ["openai", "anthropic"]
    assert refused_by("x" * 65) == ["openai", "anthropic", "gemini"]
    assert refused_by("get_order-2") == []


def test_parameters_checked_as_schemas(reg_dir: Path) -> None:
    typo = {"type": "object", "proprties": {"q": {"type": "string"}}}
    bad_meta = {"type": "object", "required": "q"}
    _write(
        reg_dir,
        "t",
        [_fn("a", typo), _fn("b", bad_meta), _fn("c", {"type": "string"}), _fn("d", OBJ)],
    )
    _write(reg_dir, "u", [_fn("e", {"$ref": "nowhere.json"})])
    kinds = _kinds(reg_dir)
    assert ("/0/function/parameters/proprties", "unknown_keyword_typo") in kinds
    assert any(p.startswith("/1/function/parameters") and k == "metaschema" for p, k in kinds)
    assert ("/2/function/parameters", "not_object_schema") in kinds
    assert not any(p.startswith("/3/") for p, _ in kinds)
    _, problems = inspect_registry(reg_dir)
    in_u = [p for p in problems if p["file"].endswith("u.tools.json")]
    assert in_u and in_u[0]["pointer"].startswith("/0/function/parameters")
    assert in_u[0]["kind"].startswith("ref_")


def test_cli_validate_list_show_hash_export(reg_dir: Path) -> None:
    r = runner.invoke(app, ["registry", "validate", str(reg_dir), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [t["name"] for t in doc["toolsets"]] == ["support_agent"]
    r = runner.invoke(app, ["registry", "export", "support_agent", "-r", str(reg_dir)])
    assert r.exit_code == 0
    ts = load_registry(reg_dir).toolset("support_agent")
    assert r.stdout == ts.wire()
    r = runner.invoke(app, ["registry", "hash", "support_agent", "-r", str(reg_dir), "--json"])
    assert json.loads(r.stdout)["toolsets"][0]["hash"] == ts.hash
    r = runner.invoke(app, ["registry", "show", "support_agent", "-r", str(reg_dir), "--json"])
    assert json.loads(r.stdout)["tools"] == json.loads(ts.wire())["tools"]
    _write(reg_dir, "bad", [_fn("a", OBJ), _fn("a", OBJ)])
    r = runner.invoke(app, ["registry", "validate", str(reg_dir)])
    assert r.exit_code == 1
    assert "bad.tools.json#/1/function/name" in r.output and "[duplicate_tool]" in r.output


def test_diff_says_which_tool_changed_and_for_whom(tmp_path: Path, registry_dir: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    for d in (old, new):
        d.mkdir()
        shutil.copy(registry_dir / "common.json", d / "common.json")
    kb = {"type": "object", "properties": {"q": {"type": "string", "maxLength": 100}}}
    _write(old, "s", [_fn("find", OBJ), _fn("gone", OBJ), _fn("kb", kb)])
    kb_new = {"type": "object", "properties": {"q": {"type": "string", "maxLength": 50}}}
    _write(
        new,
        "s",
        [_fn("find", OBJ, description="now described"), _fn("kb", kb_new), _fn("fresh", OBJ)],
    )
    r = runner.invoke(app, ["registry", "diff", str(old), str(new), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    got = {(c["path"], c["kind"]): c["breaking_for"] for c in doc["changes"] if c["schema"] == "s"}
    assert got[("/tools/gone", "tool_removed")] == ["clients"]
    assert got[("/tools/fresh", "tool_added")] == ["consumers"]
    assert got[("/tools/find", "tool_changed")] == []
    kb_change = [k for k in got if k[0].startswith("/tools/kb/parameters/properties/q")]
    assert kb_change and got[kb_change[0]] == ["clients"]  # maxLength tightened
    row = next(x for x in doc["schemas"] if x["name"] == "s")
    assert row["kind"] == "toolset" and row["status"] == "changed"


def test_a_registry_of_tool_sets_only(tmp_path: Path) -> None:
    """Inline parameters need no schema file: such a folder is a registry, not empty."""
    reg = tmp_path / "reg"
    reg.mkdir()
    _write(reg, "only", [_fn("find", OBJ)])
    r = runner.invoke(app, ["registry", "validate", str(reg)])
    assert r.exit_code == 0, r.output
    assert "ok: 0 schemas, 0 libraries, 1 tool set, no problems" in r.stdout
    assert json.loads(load_registry(reg).toolset("only").wire())["tools"][0]["function"] == {
        "name": "find",
        "parameters": OBJ,
    }


@pytest.mark.parametrize(
    "args",
    [
        ["registry", "show", "agnet"],
        ["registry", "export", "agnet"],
        ["lower", "agnet", "--target", "openai", "--generate", "0"],
    ],
)
def test_a_typo_of_a_tool_set_name_is_offered_the_tool_set(tmp_path: Path, args: list) -> None:
    """These commands take a tool set's name too; a typo of one was answered with the schema
    names only ("known: ticket"), never the set (a mutation run over tool sets, 2026-12-05)."""
    (tmp_path / "ticket.json").write_text('{"type": "object"}')
    fn = {"name": "f", "parameters": {"type": "object", "properties": {}}}
    _write(tmp_path, "agent", [{"type": "function", "function": fn}])
    r = runner.invoke(app, [*args, "--registry", str(tmp_path)])
    assert r.exit_code == 2, r.output
    assert "unknown schema or tool set 'agnet'" in r.output
    assert "(did you mean 'agent'?)" in r.output and "(tool sets: agent)" in r.output
