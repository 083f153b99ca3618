"""Hostile registries: each gets a bounded, clean answer with the documented exit code.

Real files, the real CLI (in a subprocess where a hang or a traceback is what is tested).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_support import run_cli
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.registry import inspect_registry, load_registry

runner = CliRunner()
EVIL = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
#: backtracks for hours with Python's re against ^(a+)+$
EVIL_TEXT = "a" * 48 + "b"


def write(folder: Path, name: str, content) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def cli(*args: str, timeout: float = 90, stdin: str | None = None) -> subprocess.CompletedProcess:
    """The real console entry point in a subprocess, killed if it runs past ``timeout``."""
    return run_cli(*args, timeout=timeout, stdin=stdin, cwd=None)


def nested(levels: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def deep_text(levels: int) -> str:
    """A schema ``levels`` deep as text (``json.dumps`` itself cannot write 10,000 levels)."""
    return '{"not":' * levels + '{"type":"string"}' + "}" * levels


@pytest.fixture
def evil(tmp_path: Path) -> Path:
    """A registry: one good schema, one with a catastrophic pattern and a sidecar example."""
    write(tmp_path, "good.json", {"type": "integer"})
    write(tmp_path, "evil.json", EVIL)
    write(tmp_path, "evil.examples.json", {"valid": [{"s": EVIL_TEXT}], "invalid": []})
    return tmp_path


# -- 14.1: a catastrophic pattern with a sidecar example is bounded everywhere -------------


def test_catastrophic_sidecar_validate_is_bounded_and_unproven(evil: Path) -> None:
    start = time.monotonic()
    proc = cli("registry", "validate", str(evil), "--json")  # the default bound: 1 s
    assert time.monotonic() - start < 60
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    [p] = doc["problems"]
    assert p["kind"] == "example_unproven" and p["pointer"] == "/valid/0"
    assert p["file"].endswith("evil.examples.json") and "unproven" in p["reason"]
    assert [s["name"] for s in doc["schemas"]] == ["evil", "good"]


@pytest.mark.parametrize("command", [["list"], ["export", "good"], ["hash"], ["show", "good"]])
def test_catastrophic_sidecar_other_commands_are_bounded(evil: Path, command: list) -> None:
    proc = cli("registry", *command, "--registry", str(evil), "--timeout", "1")
    assert proc.returncode == 1, proc.stderr  # the unproven example is a registry problem
    assert "example_unproven" in proc.stderr and "Traceback" not in proc.stderr


def test_catastrophic_sidecar_audit_registry_is_bounded(evil: Path, tmp_path: Path) -> None:
    outputs = tmp_path / "out.jsonl"
    outputs.write_text(
        json.dumps({"schema": "good", "text": "1"})
        + "\n"
        + json.dumps({"schema": "evil", "text": '{"s": "aaa"}'})
        + "\n"
    )
    proc = cli("audit", str(outputs), "--registry", str(evil), "--json", "--timeout", "1")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] == 2 and doc["input_errors"] == 0


def test_check_examples_timeout_zero_means_no_bound(tmp_path: Path) -> None:
    write(tmp_path, "t.json", EVIL)
    write(tmp_path, "t.examples.json", {"valid": [{"s": "aaaa"}], "invalid": [{"s": "b"}]})
    reg, problems = inspect_registry(tmp_path, timeout=0)
    assert problems == [] and len(reg) == 1


# -- 13.9: one wire string under two names is a warning, and audit still audits both ------


def test_duplicate_content_is_a_warning_and_audited(tmp_path: Path) -> None:
    reg_dir = tmp_path / "reg"
    write(reg_dir, "x.json", {"type": "integer"})
    write(reg_dir, "y.json", '{"type":  "integer"}')
    result = runner.invoke(app, ["registry", "validate", str(reg_dir), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["ok"] is True and doc["problems"] == []
    [w] = doc["warnings"]
    assert w["kind"] == "duplicate_content" and w["file"].endswith("y.json")
    human = runner.invoke(app, ["registry", "validate", str(reg_dir)])
    assert human.exit_code == 0 and "duplicate_content" in human.stderr
    assert set(load_registry(reg_dir).schemas) == {"x", "y"}
    outputs = write(
        tmp_path,
        "o.jsonl",
        "\n".join(json.dumps({"schema": n, "text": t}) for n, t in [("x", "1"), ("y", '"s"')]),
    )
    audit = runner.invoke(app, ["audit", str(outputs), "--registry", str(reg_dir), "--json"])
    doc = json.loads(audit.stdout)
    assert doc["input_errors"] == 0 and doc["outputs"] == 2 and doc["ok"] == 1


# -- 14.3: rich markup in schema text is printed as text -----------------------------------


def test_markup_in_titles_and_names_is_escaped(tmp_path: Path) -> None:
    write(tmp_path, "orders.json", {"type": "object", "title": "Orders endpoint [/v2/orders]"})
    write(tmp_path, "o2.json", {"type": "string", "title": "[bold]x[/bold] [red]"})
    for args in (
        ["validate", str(tmp_path)],
        ["list", "-r", str(tmp_path)],
        ["show", "orders", "-r", str(tmp_path)],
    ):
        result = runner.invoke(app, ["registry", *args])
        assert result.exit_code == 0, result.output
        assert "Orders endpoint [/v2/orders]" in result.stdout
    assert (
        "[bold]x[/bold] [red]"
        in runner.invoke(app, ["registry", "list", "-r", str(tmp_path)]).stdout
    )
    old = write(tmp_path / "old", "s.json", {"enum": ["[/a]"]})
    new = write(tmp_path / "new", "s.json", {"enum": ["[/b]"]})
    result = runner.invoke(app, ["registry", "diff", str(old), str(new)])
    assert result.exit_code == 0, result.output
    assert "[/a]" in result.stdout and "[/b]" in result.stdout


# -- 14.4: too deep: a clear per-file error, the rest loads; audit and diff survive --------


@pytest.mark.parametrize("levels", [100, 10_000])
def test_too_deep_schema_is_a_per_file_error(tmp_path: Path, levels: int) -> None:
    write(tmp_path, "ok.json", {"type": "integer"})
    text = json.dumps(nested(levels)) if levels < 500 else deep_text(levels)
    write(tmp_path, "deep.json", text)
    proc = cli("registry", "validate", str(tmp_path), "--json")
    assert "Traceback" not in proc.stderr and proc.returncode == 1
    doc = json.loads(proc.stdout)
    [p] = doc["problems"]
    assert p["kind"] == "too_deep" and p["file"].endswith("deep.json")
    assert [s["name"] for s in doc["schemas"]] == ["ok"]


def test_too_deep_sidecar_example_is_a_problem(tmp_path: Path) -> None:
    write(tmp_path, "s.json", {"type": "object"})
    instance: dict = {}
    for _ in range(300):
        instance = {"a": instance}
    write(tmp_path, "s.examples.json", {"valid": [instance], "invalid": []})
    write(tmp_path, "t.json", {"type": "object"})
    write(tmp_path, "t.examples.json", '{"valid": [' + "[" * 5000 + "]" * 5000 + "]}")
    reg, problems = inspect_registry(tmp_path)
    assert {(Path(p["file"]).name, p["kind"]) for p in problems} == {
        ("s.examples.json", "too_deep"),
        ("t.examples.json", "too_deep"),
    }


def test_too_deep_file_does_not_abort_audit(tmp_path: Path) -> None:
    reg_dir = tmp_path / "reg"
    write(reg_dir, "ok.json", {"type": "integer"})
    write(reg_dir, "deep.json", deep_text(10_000))
    outputs = write(tmp_path, "o.jsonl", json.dumps({"schema": "ok", "text": "1"}) + "\n")
    proc = cli("audit", str(outputs), "--registry", str(reg_dir), "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["ok"] == 1


@pytest.mark.parametrize("levels", [100, 10_000])
def test_too_deep_diff_is_a_clean_error(tmp_path: Path, levels: int) -> None:
    text = json.dumps(nested(levels)) if levels < 500 else deep_text(levels)
    old = write(tmp_path / "old", "s.json", text)
    new = write(tmp_path / "new", "s.json", text.replace('"string"', '"integer"'))
    for a, b in ((old, new), (old.parent, new.parent)):
        proc = cli("registry", "diff", str(a), str(b), "--json")
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert "s.json" in proc.stderr and "deep" in proc.stderr
        doc = json.loads(proc.stdout)  # --json: the error is the one document
        assert doc["ok"] is False and doc["exit_code"] == 2 and "deep" in doc["error"]


# -- 14.6: lone surrogates; an unwritable --output -----------------------------------------


def test_lone_surrogate_is_a_per_file_problem(tmp_path: Path) -> None:
    write(tmp_path, "ok.json", {"type": "integer"})
    write(tmp_path, "bad.json", '{"type": "string", "enum": ["\\ud800"]}')
    write(tmp_path, "badkey.json", '{"type": "object", "properties": {"\\udfff": {}}}')
    proc = cli("registry", "validate", str(tmp_path), "--json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    found = {(Path(p["file"]).name, p["kind"], p["pointer"]) for p in doc["problems"]}
    assert found == {
        ("bad.json", "bad_unicode", "/enum/0"),
        ("badkey.json", "bad_unicode", "/properties"),
    }
    assert [s["name"] for s in doc["schemas"]] == ["ok"]
    proc = cli("registry", "list", "-r", str(tmp_path))
    assert proc.returncode == 1 and "bad_unicode" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("draft", ["draft-04", "draft-06", "draft-07"])
def test_a_non_string_id_is_a_per_file_problem(tmp_path: Path, draft: str) -> None:
    """Drafts 4-7 read an id with ``.startswith``: a number there was a traceback of every
    command that loaded the file (found by the ref fast path's differential test)."""
    key = "id" if draft == "draft-04" else "$id"
    bad = {
        "$schema": f"http://json-schema.org/{draft}/schema#",
        "definitions": {"a": {key: 1}},
        "$ref": "#/definitions/a",
    }
    write(tmp_path, "ok.json", {"type": "integer"})
    write(tmp_path, "bad.json", bad)
    proc = cli("registry", "validate", str(tmp_path), "--json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert {(Path(p["file"]).name, p["kind"]) for p in doc["problems"]} >= {
        ("bad.json", "metaschema")
    }
    records = tmp_path.parent / f"records-{draft}.jsonl"
    records.write_text('{"schema": "bad", "output": "{}"}\n{"schema": "ok", "output": "1"}\n')
    proc = cli("audit", str(records), "--registry", str(tmp_path), "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["input_errors"] == 1 and doc["outputs"] == 1 and doc["ok"] == 1


def test_file_name_not_utf8_is_a_problem_and_json_stays_utf8(tmp_path: Path) -> None:
    write(tmp_path, "ok.json", {"type": "integer"})
    (Path(os.fsdecode(bytes(tmp_path))) / os.fsdecode(b"\xff.json")).write_text("{}")
    (Path(os.fsdecode(bytes(tmp_path))) / os.fsdecode(b"\xfe.examples.json")).write_text("{}")
    proc = subprocess.run(
        [sys.executable, "-m", "schemaops", "registry", "validate", str(tmp_path), "--json"],
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    doc = json.loads(proc.stdout.decode("utf-8"))  # strict UTF-8
    kinds = sorted(p["kind"] for p in doc["problems"])
    assert kinds == ["bad_unicode", "orphan_sidecar"]
    assert [s["name"] for s in doc["schemas"]] == ["ok"]


def test_export_to_unwritable_path_is_exit_2(tmp_path: Path) -> None:
    write(tmp_path / "reg", "s.json", {"type": "integer"})
    target = tmp_path / "missing-dir" / "s.json"
    proc = cli("registry", "export", "s", "-r", str(tmp_path / "reg"), "-o", str(target))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "cannot write" in proc.stderr and str(target) in proc.stderr


# -- 14.9: symlinks out of the registry are refused like $refs out of it; duplicate keys --


def test_symlink_outside_registry_is_refused_like_a_ref(tmp_path: Path) -> None:
    outside = write(tmp_path / "elsewhere", "secret.json", {"type": "string"})
    reg_dir = tmp_path / "reg"
    write(reg_dir, "ok.json", {"type": "integer"})
    write(reg_dir, "viaref.json", {"$ref": str(outside.resolve().as_uri())})
    os.symlink(outside, reg_dir / "vialink.json")
    write(reg_dir, "side.json", {"type": "string"})
    side_target = write(tmp_path / "elsewhere", "x.examples.json", {"valid": ["a"], "invalid": []})
    os.symlink(side_target, reg_dir / "side.examples.json")
    reg, problems = inspect_registry(reg_dir)
    kinds = {(Path(p["file"]).name, p["kind"]) for p in problems}
    assert kinds == {
        ("viaref.json", "ref_outside"),
        ("vialink.json", "symlink_outside"),
        ("side.examples.json", "symlink_outside"),
    }
    assert set(reg.schemas) == {"ok", "side", "viaref"}
    link = next(p for p in problems if p["kind"] == "symlink_outside" and "vialink" in p["file"])
    assert "outside the registry" in link["reason"] and "secret.json" in link["reason"]


def test_duplicate_keys_are_an_error_naming_file_and_key(tmp_path: Path) -> None:
    write(tmp_path, "dup.json", '{"type": "object", "properties": {"a": {}, "a": {"type": "x"}}}')
    write(tmp_path, "ok.json", {"type": "string"})
    write(tmp_path, "ok.examples.json", '{"valid": ["a"], "valid": [1], "invalid": []}')
    result = runner.invoke(app, ["registry", "validate", str(tmp_path), "--json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    found = {(Path(p["file"]).name, p["kind"]) for p in doc["problems"]}
    assert ("dup.json", "duplicate_key") in found
    assert ("ok.examples.json", "duplicate_key") in found
    dup = next(p for p in doc["problems"] if p["file"].endswith("dup.json"))
    assert "'a'" in dup["reason"]


def test_symlink_inside_the_registry_is_an_alias_under_its_own_name(tmp_path: Path) -> None:
    """A symlink to another schema file of the same registry is a deliberate second name:
    registered under the link's own file name, with a ``symlink_alias`` warning naming the
    target (not ``duplicate_id``: it is one file, so its base URI and ``$id`` are the target's,
    and not ``duplicate_content``); the lazy index (audit) serves it the same. A symlink out of
    the registry is still refused."""
    from schemaops.registry.lazy import LazyRegistry

    reg_dir = tmp_path / "reg"
    write(reg_dir, "plain.json", {"type": "object", "required": ["a"]})
    write(reg_dir, "withid.json", {"$id": "https://example.com/withid", "type": "integer"})
    write(reg_dir, "named.json", {"x-schemaops-name": "Named Thing", "type": "string"})
    write(reg_dir, "user.json", {"$ref": "withid.json"})
    os.symlink("plain.json", reg_dir / "plain_alias.json")
    os.symlink("withid.json", reg_dir / "withid_alias.json")
    os.symlink("named.json", reg_dir / "nick.json")
    os.symlink("plain_alias.json", reg_dir / "chain.json")  # a link to a link
    (reg_dir / "sub").mkdir()
    os.symlink("../plain.json", reg_dir / "sub" / "deep.json")
    reg, problems = inspect_registry(reg_dir)
    assert problems == []
    aliases = {"plain_alias": "plain", "withid_alias": "withid", "nick": "Named Thing"}
    aliases |= {"chain": "plain", "deep": "plain"}
    assert set(reg.schemas) == {"plain", "withid", "Named Thing", "user", *aliases}
    for alias, target in aliases.items():
        assert reg.schemas[alias].hash == reg.schemas[target].hash
        assert reg.schemas[alias].path.name == f"{alias}.json"  # the link, not the target
    warned = {Path(w["file"]).stem: w for w in reg.warnings}
    assert set(warned) == set(aliases), reg.warnings  # no duplicate_content for an alias
    assert {w["kind"] for w in warned.values()} == {"symlink_alias"}
    assert "is a symlink to withid.json" in warned["withid_alias"]["reason"]
    assert "is a symlink to plain.json" in warned["deep"]["reason"]
    load_registry(reg_dir)  # no problem: it loads
    lazy = LazyRegistry(reg_dir, examples=False)
    assert set(lazy.names()) == set(reg.schemas)
    for name in reg.schemas:
        assert lazy.load(name) == (lazy.schema(name), [])
        assert lazy.schema(name).hash == reg.schemas[name].hash
    proc = cli("registry", "validate", str(reg_dir), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # a link out of the registry stays refused, in both loads
    write(tmp_path / "elsewhere", "secret.json", {"type": "string"})
    os.symlink(tmp_path / "elsewhere" / "secret.json", reg_dir / "leak.json")
    _, problems = inspect_registry(reg_dir)
    assert [(Path(p["file"]).name, p["kind"]) for p in problems] == [
        ("leak.json", "symlink_outside")
    ]
    assert LazyRegistry(reg_dir).load("leak")[1][0]["kind"] == "symlink_outside"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")
@pytest.mark.parametrize("cache", [False, True], ids=["no-cache", "cache"])
def test_fifo_and_folder_named_json_are_refused_not_read(tmp_path: Path, cache: bool) -> None:
    """A FIFO named ``x.json`` blocked every read of the registry forever (``registry
    validate`` and the audit's index both hung); a folder named ``y.json`` and a FIFO sidecar
    too. Each is now an ``unreadable`` problem of its own file, and the rest is served."""
    reg = tmp_path / "reg"
    write(reg, "good.json", {"type": "object", "required": ["a"]})
    os.mkfifo(reg / "pipe.json")
    (reg / "folder.json").mkdir()
    write(reg, "other.json", {"type": "string"})
    os.mkfifo(reg / "other.examples.json")
    r = cli("registry", "validate", str(reg), "--json", timeout=60)
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    bad = {Path(p["file"]).name: p for p in doc["problems"] if p["kind"] == "unreadable"}
    assert set(bad) == {"pipe.json", "folder.json", "other.examples.json"}, doc["problems"]
    assert all("not a regular file" in p["reason"] for p in bad.values())
    data = tmp_path / "in.jsonl"
    lines = [
        {"schema": "good", "text": '{"a": 1}'},
        {"schema": "pipe", "text": "{}"},
        {"schema": "other", "text": '"x"'},
    ]
    data.write_text("".join(json.dumps(x) + "\n" for x in lines))
    flags = ["--cache-dir", str(tmp_path / "cache")] if cache else ["--no-cache"]
    r = cli("audit", str(data), "--registry", str(reg), "--json", *flags, timeout=60)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ok"] == 2 and doc["input_errors"] == 1
    assert "not a regular file" in doc["input_error_lines"][0]["message"]


def test_a_ref_to_an_alias_resolves_as_its_target(tmp_path: Path) -> None:
    """Issue 22 #18: a ``$ref`` naming an in-registry alias symlink was ``ref_outside`` (the
    alias file is registered under its target's URI, not its own). It now resolves as the
    file it aliases, with a fragment too, and an alias in a subfolder resolves the refs inside
    its target where the target lives: bundled self-contained, the sidecar's examples judged
    through it, in the eager and the lazy load. A symlink outside the registry stays refused."""
    from schemaops.registry.lazy import LazyRegistry

    reg_dir = tmp_path / "reg"
    plain = {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}
    write(reg_dir, "plain.json", plain)
    write(reg_dir, "holder.json", {"type": "object", "properties": {"p": {"$ref": "plain.json"}}})
    os.symlink("plain.json", reg_dir / "plain_alias.json")
    (reg_dir / "sub").mkdir()
    os.symlink("../holder.json", reg_dir / "sub" / "h.json")
    refs = {"x": "plain_alias.json", "y": "plain_alias.json#/properties/a", "z": "sub/h.json"}
    user = {"type": "object", "properties": {k: {"$ref": v} for k, v in refs.items()}}
    write(reg_dir, "user.json", user)
    examples = {
        "valid": [{"x": {"a": 1}, "y": 2, "z": {"p": {"a": 3}}}],
        "invalid": [{"x": {}}, {"y": "s"}, {"z": {"p": {"a": "s"}}}],
    }
    write(reg_dir, "user.examples.json", examples)
    reg, problems = inspect_registry(reg_dir)
    assert problems == [], problems
    bundled = json.dumps(reg.schemas["user"].bundled())
    assert '"$ref": "#/' in bundled and ".json" not in bundled  # every ref local
    lazy = LazyRegistry(reg_dir)
    assert lazy.load("user") == (lazy.schema("user"), [])
    assert lazy.schema("user").hash == reg.schemas["user"].hash
    # a link outside the registry that points into it is no alias: still refused
    os.symlink(reg_dir / "plain.json", tmp_path / "outside_link.json")
    write(reg_dir, "user3.json", {"$ref": "../outside_link.json"})
    _, problems = inspect_registry(reg_dir)
    assert [(Path(p["file"]).name, p["kind"]) for p in problems] == [("user3.json", "ref_outside")]


def test_a_draft_04_ref_that_is_not_a_string_is_a_problem(tmp_path: Path) -> None:
    """Draft-04's metaschema does not type ``$ref``; jsonschema then failed with a traceback
    in the audit's explanation of the first violating output."""
    bad = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"a": {"$ref": -1}},
    }
    write(tmp_path / "reg", "bad.json", bad)
    proc = cli("registry", "validate", str(tmp_path / "reg"), "--json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    (found,) = json.loads(proc.stdout)["problems"]
    assert (found["kind"], found["pointer"]) == ("ref_unresolvable", "/properties/a/$ref")
    records = tmp_path / "records.jsonl"
    records.write_text('{"schema": "bad", "output": "{\\"a\\": 1}"}\n')
    proc = cli("audit", str(records), "--registry", str(tmp_path / "reg"), "--json")
    assert (
        proc.returncode == 2
        and "Traceback" not in proc.stderr
        and "must be a string" in (proc.stderr)
    )


def test_a_ref_to_an_invalid_schema_outside_the_keywords_is_a_problem(tmp_path: Path) -> None:
    """The metaschema check reaches keyword positions only; a ``$ref`` may point elsewhere
    (JSONSchemaBench's ``Github_medium.o28532`` does), where jsonschema failed with a
    traceback on ``"minItems": ["a"]``."""
    bad = {
        "type": "object",
        "properties": {"a": {"$ref": "#/x-parts/a"}},
        "x-parts": {"a": {"minItems": ["a"]}},
    }
    write(tmp_path / "reg", "bad.json", bad)
    write(tmp_path / "reg", "good.json", {**bad, "x-parts": {"a": {"minItems": 1}}})
    proc = cli("registry", "validate", str(tmp_path / "reg"), "--json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    (found,) = json.loads(proc.stdout)["problems"]
    assert (Path(found["file"]).name, found["kind"], found["pointer"]) == (
        "bad.json",
        "ref_target_invalid",
        "/properties/a/$ref",
    )
    assert "/minItems" in found["reason"]


# -- an integer past Python's digit limit: a per-file problem, never a traceback -------------


def test_an_integer_of_5000_digits_is_a_per_file_problem(tmp_path: Path) -> None:
    """``json.loads`` raises a plain ``ValueError`` past 4,300 digits (CPython's guard against
    quadratic int conversion): the file is a ``number_too_long`` problem, the rest loads, and
    ``diff`` stops cleanly (found by random registries: a traceback before)."""
    write(tmp_path, "ok.json", {"type": "integer"})
    write(tmp_path, "huge.json", "1" * 5000)
    write(tmp_path, "huge_max.json", '{"type": "integer", "maximum": ' + "9" * 5000 + "}")
    proc = cli("registry", "validate", str(tmp_path), "--json")
    assert "Traceback" not in proc.stderr and proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert {(Path(p["file"]).name, p["kind"]) for p in doc["problems"]} == {
        ("huge.json", "number_too_long"),
        ("huge_max.json", "number_too_long"),
    }
    assert [s["name"] for s in doc["schemas"]] == ["ok"]
    outputs = write(tmp_path / "o", "o.jsonl", json.dumps({"schema": "huge_max", "text": "1"}))
    proc = cli("audit", str(outputs), "--registry", str(tmp_path), "--json")
    assert "Traceback" not in proc.stderr and proc.returncode == 2, proc.stderr
    assert "huge_max" in proc.stderr and "4300 digits" in proc.stderr
    proc = cli("registry", "diff", str(tmp_path / "huge_max.json"), str(tmp_path / "ok.json"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(tmp_path: Path, constant: str) -> None:
    """Python's json reads ``NaN`` and ``Infinity``; RFC 8259 has neither, and orjson and
    JavaScript refuse them. A schema and a tool set holding one validated clean, and
    ``registry export`` wrote ``NaN`` into the wire string (a mutation run over tool sets,
    2026-12-05): each is now a ``not_json`` problem of its file."""
    (tmp_path / "s.json").write_text(f'{{"type": "number", "maximum": {constant}}}')
    params = f'{{"type": "object", "properties": {{"a": {{"maximum": {constant}}}}}}}'
    tools = f'[{{"type": "function", "function": {{"name": "n", "parameters": {params}}}}}]'
    (tmp_path / "fz.tools.json").write_text(tools)
    reg, problems = inspect_registry(tmp_path)
    assert sorted((Path(p["file"]).name, p["kind"]) for p in problems) == [
        ("fz.tools.json", "not_json"),
        ("s.json", "not_json"),
    ]
    assert all(f"{constant.lstrip('-')} is not a JSON number" in p["reason"] for p in problems)
    res = run_cli("registry", "export", "fz", "--registry", str(tmp_path))
    assert res.returncode != 0 and "NaN" not in res.stdout and "Infinity" not in res.stdout
