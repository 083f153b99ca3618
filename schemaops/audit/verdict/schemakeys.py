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

import orjson

from schemaops.registry.drafts import LEGACY_LABELS

#: keys that change a subschema's base URI or name it for a dynamic reference: where one is
#: present ``$ref``s may not be inlined, nor a closure tree built (``subset.py``,
#: ``treecheck.py``). Kept here, free of ``jsonschema`` imports: a warm audit reads a
#: checker's hints from its cache without importing it (issue 36, start-up).
ID_KEYWORDS = ("$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef")
#: each as a member in orjson's compact writing (``schema_hints``, ``rsexplain.root_id_only``)
ID_MEMBERS = tuple(b'"%s":' % k.encode() for k in ID_KEYWORDS)


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
    ``id``), ``regex`` (a ``pattern``: the watchdog).

    Read from orjson's compact writing of the schema where it can write it: there a key
    ``k`` anywhere (data objects included, as ``key_sets`` counts them) is the bytes
    ``"k":``, since every quote inside a string is escaped; a key holding an escaped quote
    (``a\\"$id``) can only add a key that is not there, which is the careful answer each
    time (ids: no inlining; a nested ``$schema``: looked at by walking; a draft-04 string
    ``id``: no closure tree; a pattern: watched). A walk of every node cost a Python step
    per node (issue 36, a cold schema's set-up). ``walk_hints`` answers by walking (the
    reference, and where orjson cannot write the schema)."""
    try:
        text = orjson.dumps(schema)
    except TypeError:  # not JSON-shaped (a non-string key, 256 levels deep): walk it
        return walk_hints(schema, label)
    own = 1 if isinstance(schema, dict) and "$schema" in schema else 0
    return _hints(
        no_ids=not any(k in text for k in ID_MEMBERS),
        label=label,
        nested_schema=text.count(b'"$schema":') > own,
        # a string ``id`` (draft 4's base-URI change) is ``"id":"`` (a property named ``id``
        # maps to a schema: ``"id":{``)
        string_id=b'"id":"' in text,
        regex=b'"pattern":' in text or b'"patternProperties":' in text,
        schema=schema,
    )


def walk_hints(schema: Any, label: str) -> dict[str, bool]:
    """``schema_hints`` by walking every node (``key_sets``)."""
    top, nested = key_sets(schema)  # one walk answers every question below
    every = top | nested
    return _hints(
        no_ids=every.isdisjoint(ID_KEYWORDS),
        label=label,
        nested_schema="$schema" in nested,
        string_id="id" in every and draft4_ids(schema),
        regex=not every.isdisjoint(("pattern", "patternProperties")),
        schema=schema,
    )


def _hints(
    *, no_ids: bool, label: str, nested_schema: bool, string_id: bool, regex: bool, schema: Any
) -> dict[str, bool]:
    # From the first output: the closure check (cheap to build) answers "valid?", and
    # explaining a failure skips the subtrees it accepts (``explain.py``), so jsonschema
    # resolves only the refs of a failing part: no need for the inlined copy then.
    treeable = (
        no_ids
        and (label == "2020-12" or label in LEGACY_LABELS)
        and not (nested_schema and _other_dialect(schema, label))
        and not (label == "draft-04" and string_id)
    )
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
