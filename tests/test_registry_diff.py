"""``registry diff``: every rule, classified for consumers (model output) and clients."""

from __future__ import annotations

import copy
import json
import shutil

import pytest
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.registry import diff_paths, diff_schemas

runner = CliRunner()
CONS, CLI = "consumers", "clients"
BASE = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["open", "closed"]},
        "qty": {"type": "integer", "minimum": 1, "maximum": 10},
        "name": {"type": "string", "minLength": 1, "maxLength": 40, "pattern": "^[a-z]+$"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 5},
        "price": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 100},
        "email": {"type": "string"},
        "kind": {"const": "ticket"},
        "note": {"type": "string"},
    },
    "required": ["status"],
    "additionalProperties": False,
}


def changed(edit) -> list[tuple[str, str, tuple[str, ...]]]:
    new = copy.deepcopy(BASE)
    edit(new)
    return [(c.path, c.kind, c.breaking_for) for c in diff_schemas(BASE, new)]


P = "/properties"
# One row per diff rule; the rows look alike by design (a table, not repeated code).
RULES = [
    # (id, edit, expected (path, kind, breaking_for))
    (
        "required_added",
        lambda s: s["required"].append("qty"),
        ("/required", "property_required", (CLI,)),
    ),
    (
        "required_removed",
        lambda s: s["required"].remove("status"),
        ("/required", "required_removed", (CONS,)),
    ),
    (
        "enum_removed",
        lambda s: s["properties"]["status"]["enum"].remove("closed"),
        (f"{P}/status/enum", "enum_value_removed", (CLI,)),
    ),
    (
        "enum_added",
        lambda s: s["properties"]["status"]["enum"].append("pending"),
        (f"{P}/status/enum", "enum_value_added", (CONS,)),
    ),
    (
        "type_narrowed",
        lambda s: s["properties"]["price"].update(type="integer"),
        (f"{P}/price/type", "type_narrowed", (CLI,)),
    ),
    (
        "type_widened",
        lambda s: s["properties"]["qty"].update(type=["integer", "null"]),
        (f"{P}/qty/type", "type_widened", (CONS,)),
    ),
    (
        "type_changed",
        lambda s: s["properties"]["note"].update(type="boolean"),
        (f"{P}/note/type", "type_changed", (CONS, CLI)),
    ),
    (
        "prop_removed_closed",
        lambda s: s["properties"].pop("note"),
        (f"{P}/note", "property_removed", (CLI,)),
    ),
    (
        "prop_added_closed",
        lambda s: s["properties"].update(extra={"type": "string"}),
        (f"{P}/extra", "property_added", (CONS,)),
    ),
    (
        "minimum_up",
        lambda s: s["properties"]["qty"].update(minimum=2),
        (f"{P}/qty/minimum", "bound_tightened", (CLI,)),
    ),
    (
        "maximum_up",
        lambda s: s["properties"]["qty"].update(maximum=20),
        (f"{P}/qty/maximum", "bound_loosened", (CONS,)),
    ),
    (
        "exclusive_min_up",
        lambda s: s["properties"]["price"].update(exclusiveMinimum=5),
        (f"{P}/price/exclusiveMinimum", "bound_tightened", (CLI,)),
    ),
    (
        "exclusive_max_removed",
        lambda s: s["properties"]["price"].pop("exclusiveMaximum"),
        (f"{P}/price/exclusiveMaximum", "bound_loosened", (CONS,)),
    ),
    (
        "maxLength_down",
        lambda s: s["properties"]["name"].update(maxLength=20),
        (f"{P}/name/maxLength", "bound_tightened", (CLI,)),
    ),
    (
        "minLength_down",
        lambda s: s["properties"]["name"].update(minLength=0),
        (f"{P}/name/minLength", "bound_loosened", (CONS,)),
    ),
    (
        "minItems_up",
        lambda s: s["properties"]["tags"].update(minItems=2),
        (f"{P}/tags/minItems", "bound_tightened", (CLI,)),
    ),
    (
        "uniqueItems_added",
        lambda s: s["properties"]["tags"].update(uniqueItems=True),
        (f"{P}/tags/uniqueItems", "bound_tightened", (CLI,)),
    ),
    (
        "pattern_changed",
        lambda s: s["properties"]["name"].update(pattern="^[a-z0-9]+$"),
        (f"{P}/name/pattern", "pattern_changed", (CONS, CLI)),
    ),
    (
        "pattern_removed",
        lambda s: s["properties"]["name"].pop("pattern"),
        (f"{P}/name/pattern", "pattern_removed", (CONS,)),
    ),
    (
        "format_added",
        lambda s: s["properties"]["email"].update(format="email"),
        (f"{P}/email/format", "format_added", (CLI,)),
    ),
    (
        "const_changed",
        lambda s: s["properties"]["kind"].update(const="incident"),
        (f"{P}/kind/const", "const_changed", (CONS, CLI)),
    ),
    (
        "nested_items",
        lambda s: s["properties"]["tags"]["items"].update(maxLength=8),
        (f"{P}/tags/items/maxLength", "bound_tightened", (CLI,)),
    ),
    (
        "closed",
        lambda s: s.update(additionalProperties=True),
        ("/additionalProperties", "additional_properties_opened", (CONS,)),
    ),
    (
        "description",
        lambda s: s.update(description="a ticket"),
        ("/description", "annotation_changed", ()),
    ),
]


@pytest.mark.parametrize("edit,expected", [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_rule(edit, expected):
    assert changed(edit) == [expected]


def test_open_object_property_rules():
    old = {"type": "object", "properties": {"a": {"type": "string"}}}
    removed = diff_schemas(old, {"type": "object", "properties": {}})
    assert [(c.kind, c.breaking_for) for c in removed] == [("property_removed", (CONS,))]
    added = diff_schemas(old, {"type": "object", "properties": {"a": {"type": "string"}, "b": {}}})
    assert [(c.kind, c.breaking_for) for c in added] == [("property_added", (CLI,))]


def test_required_property_removed_breaks_both():
    old = {"properties": {"a": {}}, "required": ["a"], "additionalProperties": False}
    new = {"properties": {}, "additionalProperties": False}
    got = {(c.kind, c.breaking_for) for c in diff_schemas(old, new)}
    assert got == {("required_removed", (CONS,)), ("property_removed", (CONS, CLI))}


def test_nested_defs_and_draft04_flags():
    old = {"$defs": {"money": {"type": "number", "maximum": 100}}, "$ref": "#/$defs/money"}
    new = {"$defs": {"money": {"type": "number", "maximum": 50}}, "$ref": "#/$defs/money"}
    (c,) = diff_schemas(old, new)
    assert (c.path, c.kind, c.detail) == (
        "/$defs/money/maximum",
        "bound_tightened",
        "maximum 100 -> 50",
    )
    d4_old = {"type": "number", "minimum": 0}
    (c,) = diff_schemas(d4_old, {**d4_old, "exclusiveMinimum": True})
    assert (c.kind, c.breaking_for) == ("bound_tightened", (CLI,))


def test_key_order_only_is_a_wire_change(tmp_path):
    """Same schema, different key order: not breaking, but a different cache key."""
    (tmp_path / "a.json").write_text('{"type": "object", "required": ["x"]}')
    (tmp_path / "b.json").write_text('{"required": ["x"], "type": "object"}')
    report = diff_paths(tmp_path / "a.json", tmp_path / "b.json")
    assert [c.kind for c in report.changes] == ["wire_changed"]
    assert report.schemas[0]["old_hash"] != report.schemas[0]["new_hash"]


@pytest.fixture
def versions(tmp_path, registry_dir):
    old, new = tmp_path / "v1", tmp_path / "v2"
    shutil.copytree(registry_dir, old)
    shutil.copytree(registry_dir, new)
    (new / "cancel_subscription.json").unlink()
    (new / "cancel_subscription.examples.json").unlink()
    (new / "track_parcel.json").write_text(json.dumps({"type": "object"}))
    ticket = json.loads((new / "create_ticket.json").read_text())
    ticket["properties"]["priority"]["enum"].remove("urgent")
    (new / "create_ticket.json").write_text(json.dumps(ticket))
    return old, new


def test_folder_diff_cli(versions):
    old, new = versions
    result = runner.invoke(app, ["registry", "diff", str(old), str(new), "--json"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    kinds = {(c["schema"], c["kind"]) for c in doc["changes"]}
    # tool_call refers to create_ticket.json and cancel_subscription.json: its wire string
    # (cache key) changes through both, so it is changed too (issue 13.2)
    assert kinds == {
        ("cancel_subscription", "schema_removed"),
        ("track_parcel", "schema_added"),
        ("create_ticket", "enum_value_removed"),
        ("tool_call", "enum_value_removed"),
        ("tool_call", "definition_removed"),
        ("tool_call", "keyword_changed"),
        # the shipped tool set's create_ticket tool refers to create_ticket.json (issue 35)
        ("support_agent", "enum_value_removed"),
    }
    status = {s["name"]: s["status"] for s in doc["schemas"]}
    assert status["support_agent"] == "changed"
    assert status["create_ticket"] == "changed" and status["get_order"] == "unchanged"
    assert status["tool_call"] == "changed"
    via = [c for c in doc["changes"] if c["schema"] == "tool_call" and "urgent" in c["detail"]]
    assert len(via) == 1 and "through create_ticket.json" in via[0]["detail"]
    assert doc["breaking"] == 5 and doc["breaking_for"] == {"consumers": 2, "clients": 5}
    fail = runner.invoke(app, ["registry", "diff", str(old), str(new), "--fail-on-breaking"])
    assert fail.exit_code == 1 and "enum_value_removed" in fail.stdout
    same = runner.invoke(app, ["registry", "diff", str(old), str(old), "--fail-on-breaking"])
    assert same.exit_code == 0


def test_diff_bad_input_exit_2(tmp_path, registry_dir):
    (tmp_path / "x.json").write_text("{")
    r = runner.invoke(
        app, ["registry", "diff", str(tmp_path / "x.json"), str(registry_dir / "get_order.json")]
    )
    assert r.exit_code == 2 and "not JSON" in r.stderr and "Traceback" not in r.output
    r = runner.invoke(
        app, ["registry", "diff", str(registry_dir), str(registry_dir / "get_order.json")]
    )
    assert r.exit_code == 2 and "folder with a file" in r.stderr


def _common_changed(tmp_path, registry_dir):
    """Two copies of the shipped registry; in the second, common.json's order_id changed."""
    old, new = tmp_path / "v1", tmp_path / "v2"
    shutil.copytree(registry_dir, old)
    shutil.copytree(registry_dir, new)
    common = json.loads((new / "common.json").read_text())
    common["$defs"]["order_id"]["pattern"] = "^ORD-[0-9]{10}$"
    (new / "common.json").write_text(json.dumps(common))
    return old, new


def test_library_change_changes_its_dependents(tmp_path, registry_dir):
    """A change in common.json changes the wire string of every schema that refers to it;
    the diff hashes what is served (the registry's own hash), not the raw files."""
    from schemaops.registry import inspect_registry

    old, new = _common_changed(tmp_path, registry_dir)
    report = diff_paths(old, new)
    rows = {r["name"]: r for r in report.schemas}
    assert rows["get_order"]["status"] == "changed"
    # (the new pattern fails the sidecar examples: irrelevant to a diff)
    reg_old, reg_new = (inspect_registry(v, examples=False)[0] for v in (old, new))
    for name in ("get_order", "issue_refund", "tool_call"):
        assert rows[name]["status"] == "changed" and rows[name]["via_library"] is True
        assert rows[name]["old_hash"] == reg_old.get(name).hash
        assert rows[name]["new_hash"] == reg_new.get(name).hash
        found = [c for c in report.changes if c.schema == name]
        assert found and all("through common.json" in c.detail for c in found)
        assert {c.kind for c in found} == {"pattern_changed"}
    assert rows["create_ticket"]["status"] == "unchanged"
    assert rows["common"]["library"] is True and rows["common"]["status"] == "changed"
    assert [c.kind for c in report.changes if c.schema == "common"] == ["library_changed"]


def test_single_file_diff_resolves_library_refs(tmp_path, registry_dir):
    old, new = _common_changed(tmp_path, registry_dir)
    report = diff_paths(old / "get_order.json", new / "get_order.json")
    assert report.schemas[0]["status"] == "changed"
    assert [c.kind for c in report.changes] == ["pattern_changed"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"additionalProperties": True}, {"additionalProperties": {}}),
        ({"additionalProperties": {}}, {}),
        ({"items": True}, {"items": {}}),
        ({"properties": {"a": True}}, {"properties": {"a": {}}}),
    ],
)
def test_true_and_empty_schema_are_the_same(old, new):
    assert diff_schemas({"type": "object", **old}, {"type": "object", **new}) == []


def test_pattern_properties_direction():
    closed = {"type": "object", "additionalProperties": False}
    with_pp = {**closed, "patternProperties": {"^x-": {"type": "string"}}}
    (added,) = diff_schemas(closed, with_pp)
    assert (added.kind, added.breaking_for) == ("pattern_property_added", (CONS,))
    (removed,) = diff_schemas(with_pp, closed)
    assert (removed.kind, removed.breaking_for) == ("pattern_property_removed", (CLI,))
    open_ = {"type": "object"}
    open_pp = {**open_, "patternProperties": {"^x-": {"type": "string"}}}
    (added,) = diff_schemas(open_, open_pp)
    assert (added.kind, added.breaking_for) == ("pattern_property_added", (CLI,))
    (removed,) = diff_schemas(open_pp, open_)
    assert (removed.kind, removed.breaking_for) == ("pattern_property_removed", (CONS,))


@pytest.mark.parametrize(
    ("old", "new", "kinds"),
    [
        # Python's == says True == 1: each of these diffed to nothing, or to a wire change
        ({"enum": [1, 2]}, {"enum": [True, 2]}, {"enum_value_removed", "enum_value_added"}),
        ({"const": 1}, {"const": True}, {"const_changed"}),
        ({"enum": [[1]]}, {"enum": [[True]]}, {"enum_value_removed", "enum_value_added"}),
        ({"const": {"a": 0}}, {"const": {"a": False}}, {"const_changed"}),
    ],
)
def test_true_is_not_1(old, new, kinds):
    """JSON Schema keeps booleans apart from numbers (JSON-Schema-Test-Suite, draft2020-12
    enum.json: "enum with 1 does not match true"), at every depth."""
    found = {c.kind for c in diff_schemas(old, new)}
    assert kinds <= found, found


def test_a_number_spelled_otherwise_is_the_same_value(tmp_path):
    """``1`` and ``1.0`` are one JSON Schema value: no classified change, a new wire text."""
    assert diff_schemas({"enum": [1], "maximum": 3}, {"enum": [1.0], "maximum": 3.0}) == []
    (tmp_path / "a.json").write_text('{"type": "integer", "enum": [1]}')
    (tmp_path / "b.json").write_text('{"type": "integer", "enum": [1.0]}')
    report = diff_paths(tmp_path / "a.json", tmp_path / "b.json")
    assert [(c.kind, c.detail) for c in report.changes] == [
        ("wire_changed", "same schema, different wire text (key order or number spelling)")
    ]
