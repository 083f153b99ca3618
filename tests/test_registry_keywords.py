"""Misspelt and unknown keywords in schema positions (issue 34, item 1).

Every validator and grammar compiler ignores a keyword it does not know, and no metaschema
forbids extra keys: ``proprties``/``requried``/``maxLenght`` beside
``"additionalProperties": false`` passed ``registry validate`` and ``check`` while allowing only
``{}``. A likely typo is now a problem (exit 1) with "did you mean", per draft; other unknown
keys are warnings; extensions, annotations and data values are left alone.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from corpus_paths import JSB, REPO
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.registry import inspect_registry, load_registry, validate_schema_object
from schemaops.registry.drafts import UnknownDraft, draft_label
from schemaops.registry.keywords import KEYWORDS, TYPO_KIND, keyword_findings

runner = CliRunner()

#: the schema from the issue, exactly
ISSUE_SCHEMA = {
    "type": "object",
    "proprties": {
        "title": {"type": "string", "maxLenght": 80},
        "priority": {"enum": ["low", "high"]},
    },
    "requried": ["title"],
    "additionalProperties": False,
}

D07 = "http://json-schema.org/draft-07/schema#"
D04 = "http://json-schema.org/draft-04/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"


def _registry(tmp_path: Path, schema: dict, name: str = "ticket") -> Path:
    root = tmp_path / "reg"
    root.mkdir(exist_ok=True)
    (root / f"{name}.json").write_text(json.dumps(schema))
    return root


def _kinds(tmp_path: Path, schema: dict) -> dict[str, str]:
    """pointer -> kind of every finding (problems and warnings) of a one-schema registry."""
    reg, problems = inspect_registry(_registry(tmp_path, schema))
    return {p["pointer"]: p["kind"] for p in [*problems, *reg.warnings]}


def test_issue_schema_fails_registry_validate_with_did_you_mean(tmp_path):
    root = _registry(tmp_path, ISSUE_SCHEMA)
    res = runner.invoke(app, ["registry", "validate", str(root), "--json"])
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    found = {p["pointer"]: p for p in doc["problems"]}
    assert set(found) == {"/proprties", "/requried", "/proprties/title/maxLenght"}
    assert all(p["kind"] == TYPO_KIND for p in found.values())
    assert "did you mean `required`?" in found["/requried"]["reason"]
    assert "did you mean `properties`?" in found["/proprties"]["reason"]
    assert "did you mean `maxLength`?" in found["/proprties/title/maxLenght"]["reason"]
    plain = runner.invoke(app, ["registry", "validate", str(root)])
    assert plain.exit_code == 1
    assert "did you mean `required`?" in plain.stderr


def test_issue_schema_stops_check_and_lower(tmp_path):
    root = _registry(tmp_path, ISSUE_SCHEMA)
    res = runner.invoke(app, ["check", "--registry", str(root), "--backend", "llguidance"])
    assert res.exit_code == 1, res.output
    assert "PASS" not in res.output
    assert "did you mean `properties`?" in res.stderr
    low = runner.invoke(app, ["lower", "--registry", str(root), "--backend", "llguidance"])
    assert low.exit_code != 0, low.output
    assert "did you mean `maxLength`?" in low.stderr
    with pytest.raises(Exception, match="unknown_keyword_typo"):
        load_registry(root)


@pytest.mark.parametrize(
    ("schema", "pointer", "kind"),
    [
        # definitions containers are fine in every draft
        ({"$schema": D07, "definitions": {"a": {"type": "string"}}}, None, None),
        ({"$schema": D07, "$defs": {"a": {"type": "string"}}}, None, None),
        ({"definitions": {"a": {"type": "string"}}}, None, None),
        # ... a misspelt one is a typo, and its insides are walked as the keyword's
        ({"$def": {"a": {"type": "string"}}}, "/$def", TYPO_KIND),
        ({"$def": {"a": {"tpye": "string"}}}, "/$def/a/tpye", TYPO_KIND),
        # dependentRequired is 2019-09+, dependencies is draft-04..07 (and declared by 2020-12)
        ({"dependentRequired": {"a": ["b"]}}, None, None),
        ({"$schema": D2019, "dependentRequired": {"a": ["b"]}}, None, None),
        ({"$schema": D07, "dependencies": {"a": ["b"]}}, None, None),
        (
            {"$schema": D07, "dependentRequired": {"a": ["b"]}},
            "/dependentRequired",
            "keyword_other_draft",
        ),
        (
            {"$schema": D07, "dependentRequird": {"a": ["b"]}},
            "/dependentRequird",
            "unknown_keyword",
        ),
        ({"dependentRequird": {"a": ["b"]}}, "/dependentRequird", TYPO_KIND),
        # id is draft-04's, $id draft-06+; if/then/else are draft-07+; prefixItems 2020-12
        ({"$schema": D04, "id": "http://x.test/a"}, None, None),
        ({"$schema": D04, "$id": "http://x.test/a"}, "/$id", "keyword_other_draft"),
        ({"$schema": D04, "if": {"type": "string"}}, "/if", "keyword_other_draft"),
        ({"$schema": D2019, "$recursiveRef": "#"}, None, None),
        (
            {"$schema": D2019, "prefixItems": [{"type": "string"}]},
            "/prefixItems",
            "keyword_other_draft",
        ),
        ({"$schema": D2019, "additionalItems": False, "items": [{}]}, None, None),
        (
            {"prefixItems": [{"type": "string", "minLenght": 1}]},
            "/prefixItems/0/minLenght",
            TYPO_KIND,
        ),
        # case only is a typo; so is a missing $ on $ref
        ({"type": "string", "MaxLength": 3}, "/MaxLength", TYPO_KIND),
        (
            {"properties": {"a": {"ref": "#/$defs/b"}}, "$defs": {"b": {}}},
            "/properties/a/ref",
            TYPO_KIND,
        ),
        # extensions and annotations are fine; other unknown keys are warnings
        ({"x-internal": {"proprties": 1}, "x-schemaops-name": "t", "title": "T"}, None, None),
        ({"description": "d", "examples": [{"proprties": 1}], "$comment": "c"}, None, None),
        (
            {"default": {"requried": 1}, "deprecated": True, "readOnly": True, "writeOnly": False},
            None,
            None,
        ),
        ({"type": "string", "nullable": True}, "/nullable", "unknown_keyword"),
        ({"type": "object", "descripton": "x"}, "/descripton", "unknown_keyword"),
        # a key of someone's own whose value no keyword of that spelling takes: no typo
        ({"type": "object", "multiple": True}, "/multiple", "unknown_keyword"),
        ({"type": "string", "_format": "date"}, "/_format", "unknown_keyword"),
        # data positions are never read as schemas
        ({"properties": {"requried": {"type": "string"}, "maxLenght": {}}}, None, None),
        ({"enum": [{"proprties": 1}], "const": {"requried": []}}, None, None),
        ({"patternProperties": {"^requried$": {"type": "integer"}}}, None, None),
    ],
)
def test_findings_per_draft(tmp_path, schema, pointer, kind):
    found = _kinds(tmp_path, schema)
    if pointer is None:
        assert found == {}, found
    else:
        assert found.get(pointer) == kind, found


def test_warnings_do_not_fail_validate(tmp_path):
    root = _registry(tmp_path, {"type": "string", "nullable": True})
    res = runner.invoke(app, ["registry", "validate", str(root), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert [w["kind"] for w in doc["warnings"]] == ["unknown_keyword"]
    assert "x-nullable" in doc["warnings"][0]["reason"]  # the way to say it is an extension


def test_keyword_sets_cover_each_metaschema():
    """Every keyword a draft's metaschema declares is a keyword of that draft here (so no
    real keyword can be called unknown); beyond them only the spec's $ref (draft-04 core) and
    draft-07's writeOnly (validation spec, section 10.3), which the metaschemas leave out."""
    from jsonschema_specifications import REGISTRY

    prefixes = {
        "draft-03": "http://json-schema.org/draft-03/schema",
        "draft-04": "http://json-schema.org/draft-04/schema",
        "draft-06": "http://json-schema.org/draft-06/schema",
        "draft-07": "http://json-schema.org/draft-07/schema",
        "2019-09": "https://json-schema.org/draft/2019-09/",
        "2020-12": "https://json-schema.org/draft/2020-12/",
    }
    for label, prefix in prefixes.items():
        declared = set()
        for uri in REGISTRY:
            if uri.startswith(prefix):
                declared |= set(REGISTRY[uri].contents.get("properties", {}))
        assert declared <= KEYWORDS[label], (label, declared - KEYWORDS[label])
        assert KEYWORDS[label] - declared <= {"$ref", "writeOnly"}, label


def test_shipped_schemas_have_no_keyword_findings():
    reg, problems = inspect_registry(REPO / "schemas")
    assert problems == []
    assert [w for w in reg.warnings if "keyword" in w["kind"]] == []


def _corpus_schemas():  # type: ignore[no-untyped-def]
    """(schema, draft label) of every JSONSchemaBench schema whose draft is known."""
    for f in sorted(JSB.glob("*.jsonl")):
        for line in f.open(encoding="utf-8"):
            schema = json.loads(json.loads(line)["json_schema"])
            try:
                draft = draft_label(schema.get("$schema") if isinstance(schema, dict) else None)
            except UnknownDraft:
                continue
            yield schema, draft


@pytest.mark.slow
@pytest.mark.corpus("jsonschemabench")
def test_jsonschemabench_typos_are_real_typos(record_property):
    """Over the 9,557 corpus schemas, how many get a typo problem (88 on the pinned corpus,
    each a real misspelling: ``additonalProperties``, ``type:``, ``emum``, ``$rel``...). The
    suggestion must be a keyword of the schema's draft the key really resembles."""
    schemas = 0
    by_key: Counter = Counter()
    for schema, draft in _corpus_schemas():
        typos = [x for x in keyword_findings(schema, draft) if x[1] == TYPO_KIND]
        schemas += bool(typos)
        by_key.update(ptr.rsplit("/", 1)[-1] for ptr, _, _ in typos)
    record_property("schemas_with_typo_problems", schemas)
    print(f"\n{schemas} corpus schemas with typo problems; keys: {by_key.most_common(12)}")
    # JSONSchemaBench's switched-off keywords (``_format``) and JSON-LD's ``@type`` are no typo
    assert not any(k.startswith(("_", "@")) for k in by_key), by_key
    assert "multiple" not in by_key  # ``"multiple": true`` is someone's flag, not multipleOf
    assert 0 < schemas <= 100, schemas


def test_validate_schema_object_reports_typo():
    kinds = {p["kind"] for p in validate_schema_object(ISSUE_SCHEMA)}
    assert kinds == {TYPO_KIND}


def test_an_unknown_keys_finding_depends_on_its_value_only_through_its_shape() -> None:
    """``_unknown`` is found once per (key, value shape, draft): for every keyword of every
    draft, ``fits`` answers for a value as it answers for its shape's stand-in, so the
    suggestion (and the finding) cached by shape is the one the value itself gets."""
    from schemaops.registry.keywords import ALL_KEYWORDS, SHAPES, fits, shape_of, suggestion

    values = [True, False, 0, 3, -1, 0.0, -0.0, 2.5, -2.5, 10**30, -(10**30), 1e308, "", "x"]
    values += [[], [1], {}, {"a": 1}, None]
    for value in values:
        stand_in = SHAPES[shape_of(value)]
        for kw in ALL_KEYWORDS:
            assert fits(kw, value) == fits(kw, stand_in), (kw, value)
        for draft in KEYWORDS:
            for key in ("requried", "maxLenght", "minimun", "itemz", "javaType", "Type"):
                assert suggestion(key, value, draft) == suggestion(key, stand_in, draft)


def _reference_findings(schema, draft):  # type: ignore[no-untyped-def]
    """``keyword_findings`` as first written (a path list per subschema): the reference the
    linked-place walk is held to."""
    from schemaops.registry import keywords as kw
    from schemaops.strings import pointer

    def children(key, value):  # type: ignore[no-untyped-def]
        if key in kw._SINGLE and isinstance(value, dict):
            yield value, []
        if key in kw._LISTS and isinstance(value, list):
            yield from ((sub, [i]) for i, sub in enumerate(value))
        if key in kw._MAPS and isinstance(value, dict):
            yield from ((sub, [k]) for k, sub in value.items())

    known = KEYWORDS[draft]
    out = []
    stack = [(schema, [])]
    while stack:
        node, parts = stack.pop()
        if not isinstance(node, dict):
            continue
        found_children = []
        for key, value in node.items():
            if not isinstance(key, str):
                continue
            as_kw = key
            if key not in known and key not in kw.CONTAINERS and key not in kw.ANNOTATIONS:
                if key[:2].casefold() == "x-":
                    continue
                found = kw._unknown(key, value, draft)
                out.append((pointer([*parts, key]), *found[:2]))
                if found[2] is None:
                    continue
                as_kw = found[2]
            found_children.extend(
                (sub, [*parts, key, *below]) for sub, below in children(as_kw, value)
            )
        stack.extend(reversed(found_children))
    return out


def test_the_findings_walk_matches_its_reference_on_the_issue_schema() -> None:
    nested = {"allOf": [ISSUE_SCHEMA, {"items": [{"proprties": {"a": {"maxLenght": 1}}}]}]}
    for schema in (ISSUE_SCHEMA, nested, {"$defs": {"x/y~z": {"requried": []}}}):
        for draft in KEYWORDS:
            assert keyword_findings(schema, draft) == _reference_findings(schema, draft)


@pytest.mark.slow
@pytest.mark.corpus("jsonschemabench")
def test_the_findings_walk_matches_its_reference_on_the_corpus() -> None:
    """Every corpus schema, and each with its ``type`` and ``items`` keys misspelt (``tpye``,
    ``itms``: typos walked as the keyword they mean), gives the same findings in the same
    order as the reference walk."""
    compared = found = 0
    for schema, draft in _corpus_schemas():
        mutated = json.loads(
            json.dumps(schema).replace('"type":', '"tpye":').replace('"items":', '"itms":')
        )
        for s in (schema, mutated):
            got = keyword_findings(s, draft)
            assert got == _reference_findings(s, draft)
            compared += 1
            found += len(got)
    assert compared > 15_000 and found > 1_000, (compared, found)
