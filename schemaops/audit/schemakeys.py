"""What a schema mentions, answered once per schema for ``SchemaChecker`` (``validate.py``):
which keywords occur at its root and below it, whether a draft-04 ``id`` changes a base URI.

Two ways to answer: a walk of the parsed schema (``key_sets``, exact), or, when the JSON text
it was parsed from is at hand (the lazy registry's warm path), byte scans of that text
(``text_key_sets``, ``string_ids``). A scan answers a superset (a key spelled inside a string
value counts too), which only sends the checker down its exact, slower path; it never misses a
key, and the differential test holds it to the walk over every JSONSchemaBench schema. On the
platform workload the walk was the largest part of a warm schema's setup.
"""

from __future__ import annotations

import re
from typing import Any

from schemaops.audit.fastcheck import _ID_KEYWORDS
from schemaops.audit.treecheck import draft4_ids


def key_sets(root: Any) -> tuple[set[str], set[str]]:
    """(keys of ``root`` itself, keys of every other object inside it), in one walk: what
    ``_mentions`` answers key by key, for a caller with several questions."""
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


#: the keys ``SchemaChecker`` asks about (``text_key_sets`` answers for these only)
_ASKED = (*_ID_KEYWORDS, "id", "$schema", "pattern", "patternProperties")
_ASKED_QUOTED = tuple((k, b'"' + k.encode() + b'"') for k in _ASKED)


def text_key_sets(root: Any, text: bytes) -> tuple[set[str], set[str]]:
    """``key_sets(root)`` for the questions ``SchemaChecker`` asks, from the JSON text
    ``root`` was parsed from: ``nested`` holds each asked key whose quoted spelling occurs in
    the text beyond the root's own (a superset: a string value spelling it counts too, which
    only sends the checker down its exact, slower path). Keys of ``_ASKED`` are plain ASCII,
    so a key can spell one only through a ``\\u`` escape: then the walk answers.

    Why: the walk is the largest part of a warm schema's setup (0.1 ms of 0.13 ms on the
    platform workload); ``bytes in`` scans at memory speed."""
    if not isinstance(root, dict) or b"\\u" in text:
        return key_sets(root)
    top = set(root)
    nested = set()
    for key, quoted in _ASKED_QUOTED:
        if quoted in text and text.count(quoted) > (key in top):
            nested.add(key)
    return top, nested


_STRING_ID = re.compile(rb'"id"\s*:\s*"')


def string_ids(root: Any, text: bytes | None) -> bool:
    """``treecheck.draft4_ids(root)``: some object holds a string ``id``. Answered False from
    ``text`` (the JSON ``root`` was parsed from) when no ``"id"`` key is followed by a string
    there: a byte search instead of a walk of every draft-04 schema with an ``id`` property."""
    if text is not None and b"\\u" not in text and _STRING_ID.search(text) is None:
        return False
    return draft4_ids(root)
