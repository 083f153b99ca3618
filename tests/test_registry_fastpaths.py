"""The registry's first-use fast paths against the slow paths they skip, on every
JSONSchemaBench schema (issue 15: a platform registry's cold audit checks each schema once):

- ``refs.own_pointer_lookup`` (no ref registry) for a document whose refs all point into
  itself (``refs.pointer_refs_only``): the same ref problems and bundling flag as a lookup in
  the crawled registry;
- ``jsontext.parse`` skipping the shape walk for text without ``\\u`` escapes within the
  depth bound: the same problems as ``shape_problems`` always run.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from corpus_paths import jsb_schema_texts

from schemaops.registry import jsontext, listing, refcheck, refs
from schemaops.registry.drafts import UnknownDraft, draft_label

#: pointer refs with problems (the corpus has none among its eligible schemas) and odd ones
HARD = [
    {"$ref": "#/$defs/missing", "$defs": {}},
    {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"},
    {"properties": {"x": {"$ref": "#"}}},
    {
        "$defs": {"a b": {"type": "string"}, "c/d": {"type": "integer"}},
        "anyOf": [{"$ref": "#/$defs/a%20b"}, {"$ref": "#/$defs/c~1d"}, {"$ref": "#/$defs/c/d"}],
    },
    {"allOf": [{"type": "string"}, {"$ref": "#/allOf/0"}, {"$ref": "#/allOf/-1"}]},
    {"allOf": [{"$ref": "#/allOf/x"}]},
    {"type": "object", "$ref": "#/type/0"},
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"a": {}},
        "$ref": "#/definitions/a",
        "properties": {"b": {"$ref": "#/definitions/nope"}},
    },
    # referencing's own errors on the way: a non-string $id entered, a list or a string
    # target, a percent-escaped and a bare "/" pointer, an index with a sign or spaces
    {"$defs": {"a": {"$id": 5}}, "$ref": "#/$defs/a"},
    {"$defs": {"a": {"$id": ["x"]}}, "$ref": "#/$defs/a/$id/0"},
    {"$defs": {"a": [1, 2]}, "allOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a/+1"}]},
    {"$defs": {"a": "text"}, "anyOf": [{"$ref": "#/$defs/a/1"}, {"$ref": "#/$defs/a/9"}]},
    {"$defs": {"a": {}}, "anyOf": [{"$ref": "#/%24defs/a"}, {"$ref": "#/"}, {"$ref": "#/ 0"}]},
    {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "definitions": {"a": {"id": 1}},
        "$ref": "#/definitions/a",
    },
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"a": True},
        "not": {"$ref": "#/definitions/a"},
    },
    # a root $id (the document's base is then the id): absolute, relative, with an empty
    # fragment; beside a draft-07 root $ref (which makes it inert); draft-04's "id"; an
    # anchor-like "$id" (no base change in draft 7); a missing target and a cycle under one
    {"$id": "https://example.com/s.json", "$defs": {"a": {}}, "$ref": "#/$defs/a"},
    {"$id": "sub/s.json", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {}}, "$ref": "#/$defs/a"},
    {"$id": "https://example.com/s.json#", "properties": {"x": {"$ref": "#"}}},
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "https://example.com/s.json",
        "definitions": {"a": {}},
        "$ref": "#/definitions/a",
    },
    {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "id": "https://example.com/s.json",
        "definitions": {"a": {"type": "string"}},
        "properties": {"x": {"$ref": "#/definitions/a"}, "y": {"$ref": "#/definitions/b"}},
    },
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "#top",
        "definitions": {"a": {}},
        "properties": {"x": {"$ref": "#/definitions/a"}},
    },
    {
        "$id": "https://example.com/s.json",
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        "$ref": "#/$defs/a",
    },
    {"$id": "https://example.com/s.json", "$ref": "#/$defs/missing", "$defs": {}},
]


@pytest.mark.corpus("jsonschemabench")
def test_own_pointer_lookup_checks_pointer_refs_as_the_crawled_registry() -> None:
    eligible = with_refs = with_problems = 0
    texts = [*(json.dumps(h) for h in HARD), *jsb_schema_texts()]
    for i, text in enumerate(texts):
        try:
            data = json.loads(text)
            label = draft_label(data.get("$schema") if isinstance(data, dict) else None)
        except (ValueError, UnknownDraft, AttributeError, RecursionError):
            continue
        if not isinstance(data, dict):
            continue
        entry = refs.Entry(f"file:///reg/s{i}.json", data, label)
        nodes = refs.pointer_refs_only(entry)
        if nodes is None:
            continue
        eligible += 1
        with_refs += '"$ref"' in text
        slow = refcheck.check_refs(entry, refs.registry_lookup(refs.build([entry])[0]))
        fast = refcheck.check_refs(entry, refs.own_pointer_lookup(entry), nodes)
        assert (fast.problems, fast.external) == (slow.problems, slow.external), text[:300]
        with_problems += bool(slow.problems)
    # enough of each to mean something: refs resolved, and problems (cycles, dangling) found
    assert eligible > 5_000 and with_refs > 2_000 and with_problems >= 5


def test_pointer_refs_only_refuses_what_needs_a_crawl() -> None:
    def ok(schema: object) -> bool:
        return refs.pointer_refs_only(refs.Entry("file:///r/s.json", schema, "2020-12"))

    assert ok({"$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a"})
    assert ok({"properties": {"$ref": {"$ref": "#"}}})
    assert not ok({"$ref": "other.json"})  # another file
    assert not ok({"$ref": "#anchor"})  # an anchor: found by a crawl
    assert not ok({"$dynamicRef": "#/$defs/a"})
    assert not ok({"properties": {"a": {"$id": "http://x/a", "$ref": "#/b"}}})  # rebased
    assert ok({"$id": "http://x/s", "$defs": {"a": {}}, "$ref": "#/$defs/a"})  # the root's
    assert not ok({"$id": "http://x/s", "$defs": {"a": {"$id": "a"}}, "$ref": "#/$defs/a"})


def _shape_always(text: str) -> list:
    data, problems = jsontext.parse(text)
    if data is None:
        return problems
    full = jsontext.shape_problems(data)
    return full + [p for p in problems if p[1] == "duplicate_key"]


@pytest.mark.corpus("jsonschemabench")
def test_parse_skips_the_shape_walk_only_where_it_finds_nothing() -> None:
    deep = "[" * 129 + "]" * 129
    edge = "[" * 128 + "]" * 128
    cases = [
        deep,
        edge,
        '{"a": "\\ud800"}',
        '{"\\udc00": 1}',
        '{"a": "\\u00e9"}',
        '{"a": 1, "a": 2}',
        '{"a": [' * 70 + "1" + "]}" * 70,
    ]
    checked = 0
    for text in [*cases, *jsb_schema_texts()]:
        assert jsontext.parse(text)[1] == _shape_always(text), text[:200]
        checked += 1
    assert checked > 9_000
    assert jsontext.parse(deep)[1][0][1] == "too_deep" and jsontext.parse(edge)[1] == []


def _mutations(text: str, rng: random.Random) -> list[str]:
    """Texts near ``text`` that each problem ``parse`` names could hide in: a repeated key, a
    lone surrogate, an escaped colon, a long integer, a float orjson cannot hold, NaN."""
    out = []
    if text.startswith("{") and len(text) > 2:
        first = text[1 : text.find(",") if "," in text else -1]
        if ":" in first:
            out.append("{" + first + ", " + text[1:])  # the first member repeated
        out.append('{"x\\u003a": 1, ' + text[1:])
        out.append('{"n": ' + str(rng.choice([2**64, -(2**63) - 1, 2**63])) + ", " + text[1:])
        out.append('{"f": 1e400, ' + text[1:])
        out.append('{"f": NaN, ' + text[1:])
        out.append('{"s": "\\ud800", ' + text[1:])
    return out


@pytest.mark.corpus("jsonschemabench")
def test_parse_orjson_path_equals_the_stdlib_reading() -> None:
    """``parse`` (orjson where proven) against ``strict_parse`` (the stdlib with its hook):
    the same value, types included, and the same problems, on the corpus and on mutations
    that carry each problem ``parse`` reports."""
    rng = random.Random(24)
    compared = plain = 0
    for i, text in enumerate(jsb_schema_texts()):
        for t in [text, *(_mutations(text, rng) if i % 10 == 0 else [])]:
            got, want = jsontext.parse(t), jsontext.strict_parse(t)
            assert repr(got[0]) == repr(want[0]), t[:200]
            assert got[1] == want[1], t[:200]
            compared += 1
            plain += not want[1]
    assert compared > 10_000 and plain > 9_000


def _markers_parsed(raw: bytes) -> tuple | None:
    """The lazy index's markers read the slow way: always parsed."""
    import orjson

    from schemaops.registry.documents import is_library

    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None, False, None
    override = data.get("x-schemaops-name")
    rid = None
    if "$id" in data or "id" in data:
        try:
            rid = refs.SPECS[draft_label(data.get("$schema"))].create_resource(data).id()
        except (UnknownDraft, AttributeError, TypeError):
            rid = None
    return (
        override if isinstance(override, str) and override else None,
        is_library(data),
        rid if isinstance(rid, str) else None,
    )


HARD_MARKERS = [
    {"$schema": "http://json-schema.org/draft-04/schema#", "id": "http://x.test/a"},
    {"$schema": "http://json-schema.org/draft-03/schema#", "id": "http://x.test/b"},
    {"$schema": "http://json-schema.org/draft-07/schema#", "id": "http://x.test/c"},
    {"id": "http://x.test/d", "properties": {"id": {"type": "string"}}},
    {"$id": "http://x.test/e"},
    {"x-schemaops-name": "f", "properties": {"id": {}}},
    {"\u0024id": "http://x.test/g"},
]


@pytest.mark.corpus("jsonschemabench")
def test_index_markers_skip_only_files_without_any(tmp_path) -> None:
    """The lazy index parses a file only when its bytes hold a marker (a name override, a
    library flag, a ``$id``, an ``id`` with a draft 3 or 4 ``$schema``, a ``\\u`` escape):
    every JSONSchemaBench schema and the hard cases read the same as always parsed."""
    from schemaops.registry import lazy

    texts = [*jsb_schema_texts(), *(json.dumps(d) for d in HARD_MARKERS)]
    texts.append(
        '{"\\u0069d": "http://x.test/h", "$schema": "http://json-schema.org/draft-04/schema#"}'
    )
    f = tmp_path / "s.json"
    checked = 0
    for text in texts:
        raw = text.encode()
        want = _markers_parsed(raw)
        if want is None:
            continue  # not JSON: read strictly (and reported) when a record names it
        f.write_bytes(raw)
        assert lazy._markers(f) == want, text[:200]
        checked += 1
    assert checked > 9_000


def _rglob_listing(root: Path) -> list[Path]:
    """What the registry listed before ``listing.json_files``: the reference."""
    return sorted(
        f
        for f in root.rglob("*.json")
        if not any(part.startswith(".") for part in f.relative_to(root).parts)
    )


def test_json_files_lists_what_rglob_lists(tmp_path: Path) -> None:
    """Nested and hidden folders, hidden files, a folder named like a schema, a symlinked
    folder (not entered) and a symlink loop, a symlinked file, sidecars, names that sort
    differently by parts than as strings."""
    root = tmp_path / "reg"
    for rel in [
        "a.json",
        "B.json",
        "a-b.json",
        "a/b.json",
        "a/.hidden.json",
        ".git/x.json",
        "deep/er/still/c.json",
        "x.examples.json",
        "notes.txt",
        "a.b/c.json",
    ]:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("{}")
    (root / "folder.json").mkdir()
    (root / "linked").symlink_to(root / "deep")
    (root / "deep" / "loop").symlink_to(root)
    (root / "alias.json").symlink_to(root / "a.json")
    (root / "dangling.json").symlink_to(root / "nowhere.json")
    got = listing.json_files(root)
    assert got == _rglob_listing(root)
    assert root / "folder.json" in got and root / "alias.json" in got
    rel = Path(os.path.relpath(root))  # a relative root gives the same relative paths
    assert listing.json_files(rel) == _rglob_listing(rel)


@pytest.mark.corpus("jsonschemabench")
def test_a_ref_target_skipped_as_checked_is_valid_for_its_metaschema() -> None:
    """``check_refs(targets=True)`` skips a target at a place the document's metaschema check
    covers (``refcheck.checked_position``); over the corpus, every such target of a document the
    metaschema finds clean is itself a valid schema, so skipping it loses nothing."""
    from schemaops.registry.drafts import metaschema_problems

    skipped = 0
    for i, text in enumerate(jsb_schema_texts()):
        if '"$ref"' not in text:
            continue
        try:
            data = json.loads(text)
            label = draft_label(data.get("$schema") if isinstance(data, dict) else None)
        except (ValueError, UnknownDraft, AttributeError, RecursionError):
            continue
        if not isinstance(data, dict) or metaschema_problems(data, label):
            continue
        entry = refs.Entry(f"file:///reg/s{i}.json", data, label)
        lookup = refs.own_pointer_lookup(entry)
        for node, _, _ in refs.iter_subschemas(data, entry.base, label):
            ref = node.get("$ref")
            if not isinstance(ref, str) or not refcheck.checked_position(entry, ref):
                continue
            target = lookup(entry.base, ref)
            assert metaschema_problems(target, label) == [], (ref, text[:300])
            skipped += 1
    assert skipped > 5_000


def testchecked_position_reads_pointers_as_referencing_does() -> None:
    doc = {
        "definitions": {"a/b": {}, "": {"x": {}}, "c": {"items": [{}, {"type": "string"}]}},
        "properties": {"p": {"not": {}}},
        "allOf": [{}],
        "x-defs": {"a": {}},
    }
    entry = refs.Entry("file:///r/s.json", doc, "draft-07")
    yes = ["#", "#/definitions/a~1b", "#/definitions/c/items/1", "#/properties/p/not", "#/allOf/0"]
    no = [
        "#/definitions//x",  # definitions[""]["x"]: "x" is not a keyword
        "#/x-defs/a",
        "#/definitions",  # the map itself, not a schema in it
        "#/allOf/+0",
        "#/allOf/9",
        "#/$defs/a",  # $defs is not a draft-07 keyword
        "#a",
    ]
    assert [r for r in yes if not refcheck.checked_position(entry, r)] == []
    assert [r for r in no if refcheck.checked_position(entry, r)] == []
    assert refcheck.checked_position(
        refs.Entry("file:///r/s.json", {"$defs": {"a": {}}}, "2020-12"), "#/$defs/a"
    )
