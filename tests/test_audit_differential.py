"""Differential test: the audit's fast path never says ``ok`` where jsonschema says invalid.

The instances are real ones (the official JSON-Schema-Test-Suite, the shipped registry's
sidecar examples) and deterministic mutations of them (numbers nudged, made huge or
fractional, strings changed, keys dropped or added, nodes replaced by other JSON types). Each
mutated instance goes through the audit's own parser (``parse_output`` of its JSON text), so a
parser that reads a number differently from the stdlib is caught too.

Draft-7 suite groups are also run embedded under a 2020-12 root, with their own ``$schema``:
jsonschema switches to a subschema's dialect there, and the fast path must not answer with
2020-12 rules (issue 13.10).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from corpus_paths import JSB, JSTS, REPO
from jsonschema.exceptions import best_match

from schemaops.audit.verdict.classify import parse_output
from schemaops.audit.verdict.explain import explain
from schemaops.audit.verdict.subset import Unsupported
from schemaops.audit.verdict.treecheck import compile_tree
from schemaops.audit.verdict.validate import SchemaChecker
from schemaops.errors import InputError

SUITE = JSTS / "tests"
D2020 = "https://json-schema.org/draft/2020-12/schema"
D7 = "http://json-schema.org/draft-07/schema#"
D6 = "http://json-schema.org/draft-06/schema#"
D4 = "http://json-schema.org/draft-04/schema#"
D3 = "http://json-schema.org/draft-03/schema#"
BIG = 2**63


def _number_variants(n: int | float) -> list[Any]:
    out: list[Any] = [n + 1, n - 1, -n, n + 0.5, n * 2, 0, -1]
    if isinstance(n, int):
        out += [float(n), n - BIG - 1, n + 2 * BIG, -(BIG + 2), BIG + 1]
    elif n.is_integer() and abs(n) < 1e15:
        out.append(int(n))
    return out


def _string_variants(s: str) -> list[Any]:
    return [s + "x", s[:-1], "", s.upper(), " " + s, "12:00:00Z", "a{99999999999}"]


OTHERS: list[Any] = [None, True, 0, 1.0, -(BIG + 2), "", "1", [], {}]


def mutations(value: Any, depth: int = 0) -> Iterator[Any]:
    """The value itself and deterministic one-place changes of it."""
    yield value
    if depth > 4:
        return
    if isinstance(value, bool) or value is None:
        yield from OTHERS
    elif isinstance(value, (int, float)):
        yield from _number_variants(value)
        yield from OTHERS
    elif isinstance(value, str):
        yield from _string_variants(value)
        yield from OTHERS
    elif isinstance(value, list):
        yield from ([], value[:-1], value + value[:1], [*value, None], OTHERS[5])
        for i, item in enumerate(value[:6]):
            for m in list(mutations(item, depth + 1))[1:]:
                yield [*value[:i], m, *value[i + 1 :]]
    elif isinstance(value, dict):
        yield {**value, "extra": 1}
        yield {}
        for key in list(value)[:8]:
            yield {k: v for k, v in value.items() if k != key}
            for m in list(mutations(value[key], depth + 1))[1:]:
                yield {**value, key: m}


def _suite_groups(draft: str) -> list[dict]:
    folder = SUITE / draft
    groups = []
    for f in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        for g in json.loads(f.read_text()):
            if "localhost:1234" not in json.dumps(g["schema"]):
                groups.append(g)
    return groups


def _embedded(group: dict, uri: str) -> tuple[Any, list[Any]] | None:
    """A suite group placed under a 2020-12 root with its own dialect, or None when its refs
    would resolve against the new root."""
    schema = group["schema"]
    text = json.dumps(schema)
    if not isinstance(schema, dict) or "$ref" in text or "$id" in text or '"id"' in text:
        return None
    sub = {**schema, "$schema": uri}
    root = {"$schema": D2020, "properties": {"x": sub}}
    return root, [{"x": t["data"]} for t in group["tests"]]


def _as_draft(group: dict, uri: str) -> tuple[Any, list[Any]] | None:
    """A draft-7 suite group read as draft ``uri`` at the root (jsonschema is the oracle, so
    the suite's own verdicts need not hold under the other draft)."""
    schema = group["schema"]
    if not isinstance(schema, dict) or "$schema" in schema:
        return None
    return {"$schema": uri, **schema}, [t["data"] for t in group["tests"]]


def _registry_cases() -> list[tuple[str, Any, list[Any]]]:
    from schemaops.registry import load_registry

    out = []
    for s in load_registry(REPO / "schemas"):
        out.append((s.name, s.bundled(), list(s.valid) + list(s.invalid)))
    return out


BENCH = JSB
BENCH_SUBSETS = ("Glaiveai2K", "Github_easy", "Github_medium", "Kubernetes", "JsonSchemaStore")
BENCH_EVERY = 8  # a deterministic sample: every 8th schema of each subset


def _sample(node: Any, root: Any, depth: int = 0) -> Any:
    """One instance built from the schema authors' own values (``examples``, ``default``,
    ``const``, ``enum``) where they gave them, else a plain value of the declared type."""
    if depth > 8 or not isinstance(node, dict):
        return None
    for key in ("examples", "enum"):
        if isinstance(node.get(key), list) and node[key]:
            return node[key][0]
    for key in ("default", "const"):
        if key in node:
            return node[key]
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        return _sample(target, root, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(node.get(key), list) and node[key]:
            return _sample(node[key][0], root, depth + 1)
    kind = node.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    props = node.get("properties")
    if kind == "object" or isinstance(props, dict):
        props = props if isinstance(props, dict) else {}
        return {k: _sample(v, root, depth + 1) for k, v in list(props.items())[:12]}
    if kind == "array":
        return [_sample(node.get("items"), root, depth + 1)]
    return {"string": "text", "integer": 1, "number": 1.5, "boolean": True}.get(str(kind))


def _bench_cases() -> list[tuple[Any, list[Any]]]:
    out = []
    for subset in BENCH_SUBSETS:
        f = BENCH / f"{subset}.jsonl"
        if not f.is_file():
            continue
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines()):
            if i % BENCH_EVERY:
                continue
            try:
                schema = json.loads(json.loads(line)["json_schema"])
            except (ValueError, KeyError):
                continue
            if isinstance(schema, dict):
                out.append((schema, [_sample(schema, schema)]))
    return out


HAND = [
    # issue 13.10 (a): orjson reads 19-digit negatives below -2^63 as floats
    ({"type": "integer", "minimum": -9223372036854775809}, [-9223372036854775810]),
    ({"type": "integer", "maximum": -9223372036854775809}, [-9223372036854775808]),
    ({"const": -9223372036854775809}, [-9223372036854775810]),
    # issue 13.10 (b): a subschema in another dialect
    ({"$schema": D2020, "properties": {"a": {"$schema": D4, "type": "integer"}}}, [{"a": 1.0}]),
    (
        {
            "$schema": D2020,
            "properties": {"a": {"$schema": D7, "dependencies": {"x": ["y"]}}},
        },
        [{"a": {"x": 1}}],
    ),
    ({"$schema": D2020, "items": {"$schema": D3, "divisibleBy": 3}}, [[4]]),
    (
        {"$schema": D2020, "$defs": {"d": {"$schema": D4, "type": "integer"}}, "$ref": "#/$defs/d"},
        [1.0],
    ),
]


def _fields(err: Any) -> tuple | None:
    return None if err is None else (err.validator, list(err.absolute_path), err.message)


def _tree_says(tree: Any, value: Any) -> bool | None:
    """A lazy tree's answer, or None when a subtree compiled on this call cannot answer."""
    if tree is None or tree.broken:
        return None
    try:
        return tree(value)
    except Unsupported:
        assert tree.broken, "a lazy subtree that cannot answer marks its tree broken"
        return None


def _compare(schema: Any, instances: list[Any], stats: dict[str, int]) -> list[str]:
    try:
        checker = SchemaChecker("t", schema)
    except InputError:
        return []
    # the checker's tree compiles subtrees on first use: the eager one is the reference
    eager = compile_tree(*checker._fast_args)
    if eager is not None and checker.tree is None:
        return [f"lazy tree missing where the eager one compiles: {json.dumps(schema)[:200]}"]
    if checker.fast is None and checker.tree is None:
        return []
    stats["schemas"] += 1
    stats["legacy"] += checker.fast is None
    bad = []
    for inst in instances:
        for m in mutations(inst):
            value, failure = parse_output(json.dumps(m))
            if failure is not None:
                continue
            stats["comparisons"] += 1
            # The oracle is jsonschema on the stdlib's reading of the text (``m`` itself).
            valid = checker.validator.is_valid(m)
            if checker.fast is not None and checker.fast(value) and not valid:
                bad.append(f"{json.dumps(schema)[:200]} accepts {json.dumps(m)[:120]}")
            lazy = _tree_says(checker.tree, value)
            if lazy and not valid:
                bad.append(f"tree: {json.dumps(schema)[:200]} accepts {json.dumps(m)[:120]}")
            if eager is not None and lazy is not None:
                stats["lazy_vs_eager"] = stats.get("lazy_vs_eager", 0) + 1
                if eager(value) != lazy:
                    bad.append(
                        f"lazy {lazy} != eager: {json.dumps(schema)[:150]} {json.dumps(m)[:80]}"
                    )
            if checker.tree is not None and not checker.tree.broken and not valid:
                # explaining with valid subtrees skipped: the same best_match, field by field
                stats["explained"] += 1
                plain = _fields(best_match(checker.validator.iter_errors(value)))
                fast = _fields(explain(checker._explainer, checker.tree, value))
                if plain != fast:
                    bad.append(f"explain: {json.dumps(schema)[:150]} {plain} != {fast}")
    return bad


#: schemas jsonschema-rs does not answer for while the closure tree does, so that the
#: differential walks that path on purpose (JSONSchemaBench's nested ``$schema`` of the root's
#: own draft had been most such cases until jsonschema-rs took them: issue 36): a repeat
#: count with a space and ``\\<`` (read otherwise by Rust's regex), a backreference and the
#: ``i`` flag (outside the patterns it may run)
LEGACY = [
    ({"type": "string", "pattern": "^a{1, 2}$"}, ["a", "aa", "a{1, 2}", "", 3]),
    ({"properties": {"k": {"type": "string", "pattern": "^\\<a"}}}, [{"k": "<a"}, {"k": "a"}]),
    (
        {"type": "array", "items": {"type": "string", "pattern": "^(a)\\1$"}},
        [["aa"], ["a"], ["aa", "ab"], []],
    ),
    ({"type": "string", "pattern": "(?i)^abc$"}, ["abc", "ABC", "abd", None]),
    (
        {"type": "object", "required": ["n"], "properties": {"n": {"pattern": "^a{ 2}$"}}},
        [{"n": "aa"}, {"n": "a{ 2}"}, {}],
    ),
]


@pytest.mark.parametrize(("schema", "instances"), HAND)
def test_known_false_accepts(schema: Any, instances: list[Any]) -> None:
    for inst in instances:
        value, failure = parse_output(json.dumps(inst))
        assert failure is None
        checker = SchemaChecker("t", schema)
        assert not checker.validator.is_valid(inst), "the case must be invalid for jsonschema"
        assert checker.check(value).category.startswith("schema_violation:"), (schema, inst)


@pytest.mark.corpus("json-schema-test-suite", "jsonschemabench")
def test_fast_path_never_accepts_what_jsonschema_rejects() -> None:
    assert SUITE.is_dir(), f"JSON-Schema-Test-Suite not found at {SUITE}"
    stats = {"schemas": 0, "comparisons": 0, "explained": 0, "legacy": 0}
    bad: list[str] = []
    for g in _suite_groups("draft2020-12"):
        bad += _compare(g["schema"], [t["data"] for t in g["tests"]], stats)
    for g in _suite_groups("draft7"):
        got = _embedded(g, D7)
        if got is not None:
            bad += _compare(*got, stats)
    for g in _suite_groups("draft7"):  # treecheck's drafts 4, 6, 7 (one root dialect each)
        for uri in (D7, D6, D4):
            got = _as_draft(g, uri)
            if got is not None:
                bad += _compare(*got, stats)
    for _name, schema, examples in _registry_cases():
        bad += _compare(schema, examples, stats)
    for schema, instances in _bench_cases():
        bad += _compare(schema, instances, stats)
    for schema, instances in [*HAND, *LEGACY]:
        bad += _compare(schema, instances, stats)
    assert not bad, f"{len(bad)} false accepts, e.g. {bad[:5]}"
    assert stats["schemas"] > 500 and stats["comparisons"] > 60_000, stats
    # "legacy": schemas jsonschema-rs does not answer for (rscheck.compile_rs says why), where
    # the closure tree and jsonschema answer alone (``LEGACY`` keeps five such on purpose: the
    # ASCII gate, then the nested ``$schema`` of the root's own draft, put most of the
    # corpus's on jsonschema-rs: issue 36)
    assert stats["explained"] > 20_000 and stats["legacy"] >= 5, stats
    assert stats["lazy_vs_eager"] > 50_000, stats
