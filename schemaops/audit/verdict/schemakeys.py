"""What a schema's keys decide about its checker (``SchemaChecker`` in ``validate.py``):
whether it has ``$id``-family keys (its ``$ref``s may then not be inlined), whether a closure
check may answer for it (``treecheck.py``), whether it has a regex to watch.

One walk answers all three (``schema_hints``). The answer is a pure function of the schema's
bytes, so the audit keeps it in the schema file's facts cache entry (``cache.py``): a warm
run sets up thousands of schemas without walking them (on the platform workload the walk was
the largest part of a warm schema's setup).
"""

from __future__ import annotations

from typing import Any

from schemaops.registry.drafts import LEGACY_LABELS

#: keys that change a subschema's base URI or name it for a dynamic reference: where one is
#: present ``$ref``s may not be inlined, nor a closure tree built (``subset.py``,
#: ``treecheck.py``). Kept here, free of ``jsonschema`` imports: a warm audit reads a
#: checker's hints from its cache without importing it (issue 36, start-up).
ID_KEYWORDS = ("$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef")


def draft4_ids(schema: Any) -> bool:
    """True when some object holds a string ``id`` (draft-04's base-URI change; a property
    named ``id`` maps to a schema, not a string, and does not count)."""
    stack = [schema]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            if isinstance(cur.get("id"), str):
                return True
            stack.extend(cur.values())
        elif isinstance(cur, list):
            stack.extend(cur)
    return False


def key_sets(root: Any) -> tuple[set[str], set[str]]:
    """(keys of ``root`` itself, keys of every other object inside it), in one walk: what
    ``mentions`` answers key by key, for a caller with several questions."""
    top: set[str] = set(root) if isinstance(root, dict) else set()
    nested: set[str] = set()
    stack = list(root.values()) if isinstance(root, dict) else [root]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            nested.update(cur)
            stack.extend(cur.values())
        elif isinstance(cur, list):
            stack.extend(cur)
    return top, nested


def schema_hints(schema: Any, label: str) -> dict[str, bool]:
    """``no_ids`` (no ``$id``-family key: the ``$ref``s may be inlined), ``treeable`` (a
    closure check may answer: no ids, a dialect it knows throughout, no draft-04 string
    ``id``), ``regex`` (a ``pattern``: the watchdog)."""
    top, nested = key_sets(schema)  # one walk answers every question below
    every = top | nested
    no_ids = every.isdisjoint(ID_KEYWORDS)
    # From the first output: the closure check (cheap to build) answers "valid?", and
    # explaining a failure skips the subtrees it accepts (``explain.py``), so jsonschema
    # resolves only the refs of a failing part: no need for the inlined copy then.
    treeable = (
        no_ids
        and (label == "2020-12" or label in LEGACY_LABELS)
        and not ("$schema" in nested and _other_dialect(schema, label))
        and not (label == "draft-04" and "id" in every and draft4_ids(schema))
    )
    regex = not every.isdisjoint(("pattern", "patternProperties"))
    return {"no_ids": no_ids, "treeable": bool(treeable), "regex": regex}


def _other_dialect(schema: Any, label: str) -> bool:
    """``subset.other_dialect`` for a draft label (a nested ``$schema``: rare, and only when
    the hints are not cached, so ``jsonschema`` is imported here)."""
    from schemaops.audit.verdict.subset import other_dialect
    from schemaops.registry.drafts import validator_class

    return other_dialect(schema, validator_class(label))


def well_formed(hints: Any) -> bool:
    """``schema_hints``' shape: exactly its three keys, each a bool (anything else, from a
    damaged cache entry, is computed afresh)."""
    return (
        isinstance(hints, dict)
        and hints.keys() == {"no_ids", "treeable", "regex"}
        and all(type(v) is bool for v in hints.values())
    )


def regex_possible(raw: bytes) -> bool:
    """Whether schema bytes may hold a ``pattern``/``patternProperties`` key: both contain
    ``pattern``, and a key spelt with ``\\u`` escapes is caught by the second test. A byte
    scan (memory speed), so the watchdog decision is re-derived from the bytes on every run
    instead of trusted from a cache entry (issue 22 #17); False means there is none."""
    return b"pattern" in raw or b"\\u" in raw
