"""Bad registries: each problem has a precise message, the right exit code, no traceback."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.errors import InputError
from schemaops.registry import (
    RegistryError,
    inspect_registry,
    load_registry,
    load_schema_file,
    load_schema_text,
    validate_schema_object,
)

runner = CliRunner()
OBJ = {"type": "object", "properties": {"a": {"type": "string"}}}


def write(folder: Path, name: str, content) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def validate(folder: Path) -> tuple[int, dict, str]:
    """Run ``registry validate --json``; return exit code, the JSON doc, and stderr."""
    result = runner.invoke(app, ["registry", "validate", str(folder), "--json"])
    assert "Traceback" not in result.output
    return result.exit_code, json.loads(result.stdout), result.stderr


def only(doc: dict, kind: str) -> dict:
    found = [p for p in doc["problems"] if p["kind"] == kind]
    assert len(found) == 1, doc["problems"]
    return found[0]


def test_malformed_json_exit_2(tmp_path):
    write(tmp_path, "ok.json", OBJ)
    write(tmp_path, "broken.json", '{"type": "object",\n "properties": {')
    code, doc, _ = validate(tmp_path)
    assert code == 2
    p = only(doc, "not_json")
    assert p["file"].endswith("broken.json") and "line 2" in p["reason"]
    assert [s["name"] for s in doc["schemas"]] == ["ok"]  # the good file still loads


def test_undecodable_file_exit_2(tmp_path):
    write(tmp_path, "latin.json", b'{"title": "caf\xe9"}')
    code, doc, _ = validate(tmp_path)
    assert code == 2 and only(doc, "unreadable")["file"].endswith("latin.json")


def test_metaschema_violations_all_reported_with_pointers(tmp_path):
    bad = {
        "type": "objekt",
        "properties": {"a": {"minLength": -1}, "b": {"pattern": "("}},
        "required": "a",
    }
    write(tmp_path, "bad.json", bad)
    code, doc, _ = validate(tmp_path)
    assert code == 1
    # the exact set of (pointer, kind): the shape of test_registry_diff's (schema, kind) sets
    got = {(p["pointer"], p["kind"]) for p in doc["problems"]}
    assert got == {
        ("/type", "metaschema"),
        ("/properties/a/minLength", "metaschema"),
        ("/properties/b/pattern", "metaschema"),
        ("/required", "metaschema"),
    }
    reasons = " ".join(p["reason"] for p in doc["problems"])
    assert "-1 is less than the minimum of 0" in reasons and "'(' is not a 'regex'" in reasons


def test_draft_is_respected(tmp_path):
    """exclusiveMinimum: true is right in draft-04 and wrong in 2020-12 (the default)."""
    d4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "number",
        "minimum": 0,
        "exclusiveMinimum": True,
    }
    assert validate_schema_object(d4) == []
    d2020 = {k: v for k, v in d4.items() if k != "$schema"}
    problems = validate_schema_object(d2020)
    assert [p["pointer"] for p in problems] == ["/exclusiveMinimum"]
    assert "draft 2020-12" in problems[0]["reason"]
    for uri in (
        "http://json-schema.org/draft-07/schema",
        "https://json-schema.org/draft/2019-09/schema#",
        "http://json-schema.org/draft-06/schema#",
    ):
        assert validate_schema_object({"$schema": uri, "type": "string"}) == []


def test_unknown_draft_exit_1(tmp_path):
    write(
        tmp_path, "u.json", {"$schema": "http://json-schema.org/draft-99/schema#", "type": "object"}
    )
    code, doc, _ = validate(tmp_path)
    assert code == 1
    p = only(doc, "unknown_draft")
    assert p["pointer"] == "/$schema" and "draft-99" in p["reason"] and "2020-12" in p["reason"]


def test_remote_ref_is_never_fetched(tmp_path):
    """A listening socket on 127.0.0.1 must see no connection attempt."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.setblocking(False)
        port = server.getsockname()[1]
        schema = {
            "type": "object",
            "properties": {
                "x": {"$ref": f"http://127.0.0.1:{port}/x.json"},
                "y": {"$ref": "http://127.0.0.1:9/x"},
            },
        }
        write(tmp_path, "remote.json", schema)
        write(tmp_path, "remote.examples.json", {"valid": [{"x": 1}], "invalid": []})
        code, doc, _ = validate(tmp_path)
        with pytest.raises(RegistryError) as exc:
            load_schema_text(json.dumps(schema), name="remote")
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody connected
    assert code == 1
    remote = [p for p in doc["problems"] if p["kind"] == "ref_remote"]
    assert [p["pointer"] for p in remote] == ["/properties/x/$ref", "/properties/y/$ref"]
    assert "never fetched" in remote[0]["reason"]
    assert exc.value.exit_code == 1 and "ref_remote" in str(exc.value)


def test_ref_outside_registry_and_pointer_to_nowhere(tmp_path):
    write(
        tmp_path,
        "a.json",
        {"properties": {"x": {"$ref": "missing.json#/$defs/m"}, "y": {"$ref": "#/$defs/nope"}}},
    )
    code, doc, _ = validate(tmp_path)
    assert code == 1
    outside = only(doc, "ref_outside")
    assert outside["pointer"] == "/properties/x/$ref" and "missing.json" in outside["reason"]
    nowhere = only(doc, "ref_unresolvable")
    assert nowhere["pointer"] == "/properties/y/$ref" and "/$defs/nope" in nowhere["reason"]


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
        {"$defs": {"a": {"allOf": [{"$ref": "#"}]}}, "$ref": "#/$defs/a"},
        {"$ref": "#"},
    ],
)
def test_ref_cycle_exit_1(tmp_path, schema):
    write(tmp_path, "cyc.json", schema)
    code, doc, _ = validate(tmp_path)
    assert code == 1
    assert "never consumes input" in only(doc, "ref_cycle")["reason"]


def test_recursion_through_properties_is_fine():
    tree = {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}
    assert validate_schema_object(tree) == []
    linked = {
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
        "$ref": "#/$defs/node",
    }
    assert validate_schema_object(linked) == []


def test_duplicate_names_and_content(tmp_path):
    write(tmp_path, "a/order.json", OBJ)
    write(tmp_path, "b/order.json", {"type": "string"})
    write(tmp_path, "x.json", {"type": "integer"})
    write(tmp_path, "y.json", '{"type":"integer"}')  # same canonical text, other spacing
    code, doc, _ = validate(tmp_path)
    assert code == 1
    dup = only(doc, "duplicate_name")
    assert dup["file"].endswith("b/order.json") and "a/order.json" in dup["reason"]
    # one wire string under two names: a warning (both names work), not a problem
    [same] = [w for w in doc["warnings"] if w["kind"] == "duplicate_content"]
    assert same["file"].endswith("y.json") and "x.json" in same["reason"]
    assert not [p for p in doc["problems"] if p["kind"] == "duplicate_content"]


def test_empty_and_missing_folder_exit_2(tmp_path):
    code, doc, _ = validate(tmp_path)
    assert code == 2 and "no schema files" in only(doc, "empty_folder")["reason"]
    code, doc, _ = validate(tmp_path / "nope")
    assert code == 2 and "not found" in only(doc, "missing_folder")["reason"]
    with pytest.raises(RegistryError) as exc:
        load_registry(tmp_path / "nope")
    assert exc.value.exit_code == 2


def test_examples_say_which_fails_and_why(tmp_path):
    write(
        tmp_path,
        "t.json",
        {
            "type": "object",
            "properties": {"e": {"type": "string", "format": "email"}},
            "required": ["e"],
            "additionalProperties": False,
        },
    )
    write(
        tmp_path,
        "t.examples.json",
        {
            "valid": [{"e": "a@example.com"}, {"e": "not-an-email"}],
            "invalid": [{}, {"e": "b@example.com"}],
        },
    )
    write(tmp_path, "orphan.examples.json", {"valid": [], "invalid": []})
    code, doc, _ = validate(tmp_path)
    assert code == 1
    fails = only(doc, "example_valid_fails")
    assert (
        fails["pointer"] == "/valid/1" and "/e" in fails["reason"] and "format" in fails["reason"]
    )
    passes = only(doc, "example_invalid_passes")
    assert passes["pointer"] == "/invalid/1" and "b@example.com" in passes["reason"]
    assert only(doc, "orphan_sidecar")["file"].endswith("orphan.examples.json")


def test_every_problem_at_once(tmp_path):
    write(tmp_path, "a.json", "nope")
    write(tmp_path, "b.json", {"type": 5})
    write(tmp_path, "c.json", {"$ref": "http://example.com/s.json"})
    write(tmp_path, "d.json", OBJ)
    code, doc, _ = validate(tmp_path)
    assert code == 2  # unreadable input wins over invalid content
    assert {p["kind"] for p in doc["problems"]} == {"not_json", "metaschema", "ref_remote"}
    with pytest.raises(RegistryError) as exc:
        load_registry(tmp_path)
    assert len(exc.value.problems) == 3 and str(tmp_path / "c.json") in str(exc.value)


def test_cross_file_refs_by_path_and_id(tmp_path):
    write(
        tmp_path,
        "lib.json",
        {
            "x-schemaops-library": True,
            "$defs": {
                "money": {
                    "type": "object",
                    "properties": {"cur": {"$ref": "#/$defs/cur"}},
                    "required": ["cur"],
                },
                "cur": {"enum": ["USD", "EUR"]},
            },
        },
    )
    write(
        tmp_path,
        "ids.json",
        {"$id": "urn:example:ids", "$defs": {"sku": {"type": "string", "pattern": "^S[0-9]+$"}}},
    )
    write(
        tmp_path,
        "order.json",
        {
            "type": "object",
            "properties": {
                "total": {"$ref": "lib.json#/$defs/money"},
                "sku": {"$ref": "urn:example:ids#/$defs/sku"},
            },
        },
    )
    write(
        tmp_path,
        "order.examples.json",
        {
            "valid": [{"total": {"cur": "USD"}, "sku": "S1"}],
            "invalid": [{"total": {"cur": "GBP"}}, {"sku": "X"}],
        },
    )
    reg, problems = inspect_registry(tmp_path)
    assert problems == []
    assert set(reg.schemas) == {"ids", "order"} and set(reg.libraries) == {"lib"}
    wire = json.loads(reg.get("order").wire())
    assert wire["properties"]["total"] == {"$ref": "#/$defs/lib__money"}
    assert wire["$defs"]["lib__money"]["properties"]["cur"] == {"$ref": "#/$defs/lib__cur"}
    assert wire["$defs"]["ids__sku"]["pattern"] == "^S[0-9]+$"


def test_single_schema_loaders(tmp_path):
    f = write(tmp_path, "one.json", {"x-schemaops-version": 4, **OBJ})
    s = load_schema_file(f)
    assert (s.name, s.version) == ("one", "4")
    with pytest.raises(InputError):
        load_schema_file(tmp_path / "absent.json")
    with pytest.raises(RegistryError) as exc:
        load_schema_text("[1, 2]")
    assert exc.value.problems[0]["kind"] == "not_schema"
    assert load_schema_text('{"type": "string", "version": "2.1"}').version == "2.1"


def test_cli_entry_point_no_traceback(tmp_path):
    """The real console script: human output, exit code, message on stderr."""
    write(tmp_path, "broken.json", "{")
    proc = subprocess.run(
        [sys.executable, "-m", "schemaops", "registry", "list", "--registry", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "broken.json" in proc.stderr and "not JSON" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    proc = subprocess.run(
        [sys.executable, "-m", "schemaops", "registry", "validate", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "registry folder not found" in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr


def test_refs_resolve_where_referencing_cannot_crawl():
    """Real schemas (JSONSchemaStore tmlanguage) trip referencing's crawler: a draft-07
    ``dependencies`` list. Pointer refs must still resolve, not be called 'outside'."""
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "https://example.com/s.json",
        "$ref": "#/definitions/root",
        "definitions": {
            "root": {
                "type": "object",
                "properties": {"a": {"$ref": "#/definitions/name"}},
                "dependencies": {"a": ["b"]},
            },
            "name": {"type": "string"},
        },
    }
    assert validate_schema_object(schema) == []
    validator = load_schema_text(json.dumps(schema)).validator()
    assert validator.is_valid({"a": "x", "b": 1})
    assert not validator.is_valid({"a": "x"})  # dependencies: b required with a
    assert not validator.is_valid({"a": 1, "b": 1})
