"""``strings.ref_parts`` and ``resolve_pointer``: the one local-ref walker, table-driven.

Each row is what the four walkers it replaced did (``compare/instances._resolve``,
``lower/residual._node``, ``lower/passes._Lowerer.target``, ``bench/audit_many_schemas._deref``):
``~1`` before ``~0``, empty tokens dropped, list indices as decimal digits in range, a missing
part is "missing". The one deliberate change: a non-ASCII digit token (``²``) used to raise
``ValueError`` from ``int()``; it is now missing.
"""

from __future__ import annotations

from typing import Any

import pytest

from schemaops.compare.instances import _resolve
from schemaops.lower.residual import _node
from schemaops.strings import follow_local_refs, ref_parts, resolve_pointer, resolve_ref

MISSING = object()
DOC: dict[str, Any] = {
    "a": {"b": 1, "": "empty key"},
    "a/b": 2,
    "a~b": 3,
    "~1": 4,
    "list": ["x", "y", {"z": 5}],
    "d": {"0": "dict zero"},
    "s": "scalar",
    "n": None,
}
ROWS = [
    ("#", DOC),
    ("#/a/b", 1),
    ("#/a~1b", 2),
    ("#/a~0b", 3),
    ("#/~01", 4),  # ~1 is unescaped first: "~01" is "~1", never "/"... or "~/"
    ("#/list/1", "y"),
    ("#/list/01", "y"),
    ("#/list/2/z", 5),
    ("#/list/3", MISSING),
    ("#/list/-1", MISSING),
    ("#/list/-", MISSING),
    ("#/d/0", "dict zero"),
    ("#/missing", MISSING),
    ("#/a//b", 1),  # empty tokens dropped
    ("#/a/", DOC["a"]),
    ("#a", DOC["a"]),  # "#name" reads as "#/name" (not as an anchor)
    ("#/s/x", MISSING),  # a step into a scalar
    ("#/n", None),
]


@pytest.mark.parametrize(("ref", "expected"), ROWS)
def test_resolve_pointer(ref: str, expected: Any) -> None:
    parts = ref_parts(ref)
    assert parts is not None
    got = resolve_pointer(DOC, parts, MISSING)
    assert got is expected or got == expected
    assert resolve_ref(DOC, ref, MISSING) is got


@pytest.mark.parametrize(("ref", "expected"), ROWS)
def test_callers_keep_their_edge_cases(ref: str, expected: Any) -> None:
    # residual: None for a missing part; instances: the unresolved ref node itself
    parts = ref_parts(ref)
    assert _node(DOC, parts) == (None if expected is MISSING else expected)
    node = {"$ref": ref}
    assert _resolve(node, DOC) == (node if expected is MISSING else expected)


def test_non_local_and_non_ascii_digits() -> None:
    assert ref_parts("other.json#/a") is None and ref_parts("") is None
    assert resolve_ref(DOC, "other.json#/a", MISSING) is MISSING
    assert resolve_pointer(["x"], ["²"], MISSING) is MISSING
    assert resolve_pointer(["x"], ["٠"], MISSING) is MISSING  # Arabic-Indic zero


def test_ref_cycles_and_chains_are_bounded() -> None:
    root = {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}, "c": {"k": 1}}}
    assert _resolve({"$ref": "#/$defs/a"}, root) in ({"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"})
    assert _resolve({"$ref": "#/$defs/c"}, root) == {"k": 1}
    assert _resolve({"$ref": "other.json"}, root) == {"$ref": "other.json"}


def test_follow_local_refs_merges_siblings_only_when_asked() -> None:
    root = {"$defs": {"x": {"type": "string"}, "loop": {"$ref": "#/$defs/loop"}}}
    node = {"$ref": "#/$defs/x", "title": "t"}
    assert follow_local_refs(node, root) == ({"type": "string"}, True)
    assert follow_local_refs(node, root, siblings=True) == ({"type": "string", "title": "t"}, True)
    assert follow_local_refs({"$ref": "#/$defs/loop"}, root) == ({"$ref": "#/$defs/loop"}, False)
    assert follow_local_refs({"$ref": "#/nope"}, root) == ({"$ref": "#/nope"}, False)
