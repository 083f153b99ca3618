"""Names repeated in one object of an output: found, and proven absent cheaply.

A JSON text may name a key twice in one object (RFC 8259 §4: names "SHOULD be unique"); the
audit reads such an object as Python's json, orjson and JavaScript's ``JSON.parse`` do, the
last value winning, validates that, and names the repeats in its report (``duplicate_keys``).
Why apart from ``classify.py``: this is about the names of a text that parsed, not about why
a text did not; it is asked of every object output, so the test that no name repeats must
cost less than a parse (a count of colons against a count of names).
"""

from __future__ import annotations

import json
from typing import Any

MAX_DUPLICATES = 10  # pointers listed per output


class _Obj(dict):
    """A JSON object as the stdlib reads it (last value wins), remembering repeated names."""

    __slots__ = ("repeated",)


def _pairs(pairs: list[tuple[str, Any]]) -> _Obj:
    obj = _Obj()
    obj.repeated = []
    for k, v in pairs:
        if k in obj and k not in obj.repeated:
            obj.repeated.append(k)
        obj[k] = v
    return obj


_PAIRS_DECODER = json.JSONDecoder(object_pairs_hook=_pairs)


def _key_count(value: Any) -> int:
    """Names in all objects of a parsed value (recursive: ``parse_output`` already refused
    nesting deeper than ``MAX_DEPTH``, far below the recursion limit)."""
    n = 0
    if type(value) is dict:
        n = len(value)
        value = value.values()
    for v in value:
        t = type(v)
        if t is dict or t is list:
            n += _key_count(v)
    return n


def plain_key_count(value: Any) -> int:
    """``_key_count`` of a parsed object or array, or -1 when it holds a float anywhere (an
    integer orjson may have read as one: ``exactjson.may_have_long_int``). For the audit's
    lean loop: a text with exactly this many colons names each name once (every name is
    followed by a colon, so a text has at least as many colons as names, and at least as many
    names as its value), which costs a walk of the value instead of writing it back (1.3 µs
    a line of ~10 on the tool-call outputs of ``bench/audit_scale.py``). Nesting is bounded by
    the caller (``MAX_DEPTH``)."""
    n = 0
    if value.__class__ is dict:
        n = len(value)
        value = value.values()
    for v in value:
        c = v.__class__
        if c is str:  # most values of a tool call's arguments: one comparison, not three
            continue
        if c is dict or c is list:
            k = plain_key_count(v)
            if k < 0:
                return -1
            n += k
        elif c is float:
            return -1
    return n


def duplicate_keys(text: str, value: Any) -> list[str]:
    """JSON pointers of the names that occur twice in one object of ``text`` (``value`` is
    what ``parse_output`` read from it). The audit reads such an object as Python's json,
    orjson and JavaScript's ``JSON.parse`` do, the last value winning, and validates that;
    this only names the repeats so reports can show them.

    Cheap when there are none: every name in the text is followed by ``":`` or by whitespace
    and ``:``. The text holds at least as many names as the parsed value (more exactly when a
    name repeats), so when those two patterns occur no more often than the value has names,
    no name repeats. Only texts where the patterns also occur inside strings are re-read.
    """
    if type(value) not in (dict, list):
        return []
    bound = text.count('":')
    if bound != text.count(":"):  # some colon follows something else: maybe whitespace
        bound += text.count(" :") + text.count("\n:") + text.count("\t:") + text.count("\r:")
    if bound <= _key_count(value):
        return []
    try:
        doc = _PAIRS_DECODER.decode(text)
    except (ValueError, RecursionError):
        return []
    found: list[str] = []
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack and len(found) < MAX_DUPLICATES:
        node, at = stack.pop()
        if type(node) is _Obj:
            found += [f"{at}/{_escape(k)}" for k in node.repeated]
            stack.extend((v, f"{at}/{_escape(k)}") for k, v in reversed(node.items()))
        elif type(node) is list:
            stack.extend((v, f"{at}/{i}") for i, v in reversed(list(enumerate(node))))
    return sorted(found[:MAX_DUPLICATES])


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
