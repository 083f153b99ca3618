"""The subset of JSON Schema the closure check (``treecheck.py``) answers exactly: its
keyword sets, local ``$ref`` resolution and inlining, dialect and format helpers.

Why kept apart: the closure tree, ``explain.py`` (which skips the subtrees the tree accepts
when it explains a failure) and ``schemakeys.py`` share these rules. The audit's yes/no
verdict itself is jsonschema-rs's (``rscheck.py``); this subset serves the schemas it cannot
answer for and the explanation of failures. (Until issue 24 this module also generated and
compiled Python source for the yes/no check; jsonschema-rs replaced that.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for

from schemaops.strings import pointer_token

Check = Callable[[Any], bool]

# Keywords that only annotate (or only hold subschemas for $ref): jsonschema ignores them.
IGNORED = {
    "$schema",
    "$comment",
    "$defs",
    "definitions",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
}
# Keys jsonschema does not know are ignored by it, hence here; known ones must be handled.
KNOWN = set(Draft202012Validator.VALIDATORS)
_DATA_KEYWORDS = {"enum", "const", "default", "examples", "description", "title", "$comment"}
OBJECT_KEYWORDS = (
    "properties",
    "required",
    "additionalProperties",
    "minProperties",
    "maxProperties",
)
ARRAY_KEYWORDS = ("prefixItems", "items", "minItems", "maxItems", "uniqueItems")
STRING_KEYWORDS = ("minLength", "maxLength", "pattern")
NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
HANDLED = {"type", "enum", "const", "format", "allOf", "anyOf", "oneOf", "not", "$ref"}
HANDLED.update(OBJECT_KEYWORDS, ARRAY_KEYWORDS, STRING_KEYWORDS, NUMBER_KEYWORDS)
MAX_NODES = 20_000  # subschemas emitted (inlined $refs count each time)


class Unsupported(Exception):
    """The schema uses something the closure check does not answer exactly."""


def int_keyword(schema: dict, key: str) -> int | None:
    """A length or count keyword's value (an ``int``), ``None`` when absent; anything else is
    ``Unsupported``. Shared with ``treecheck.py``: the same subset for both forms."""
    value = schema.get(key)
    if value is None:
        return None
    if type(value) is not int:
        raise Unsupported(f"non-integer {key}")
    return value


def mentions(node: Any, keys: tuple[str, ...]) -> bool:
    """True when any of ``keys`` appears as a property of any object inside ``node``."""
    return any(any(k in d for k in keys) for d in _objects(node))


def _objects(node: Any) -> Iterator[dict]:
    """Every JSON object inside ``node`` (itself included), walked without recursion."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            yield cur
            stack.extend(cur.values())
        elif isinstance(cur, list):
            stack.extend(cur)


def other_dialect(root: Any, validator_cls: type) -> bool:
    """True when a subschema's ``$schema`` selects another validator class than the root's
    (conservative: any object holding a ``$schema`` key counts, even inside data keywords)."""
    return any(
        d is not root
        and isinstance(d.get("$schema"), str)
        and validator_for(d, default=validator_cls) is not validator_cls
        for d in _objects(root)
    )


def resolve_pointer(root: Any, ref: str) -> Any:
    """Resolve a local ``#/a/b`` reference against the root document."""
    node = root
    for part in ref[2:].split("/") if ref != "#" else []:
        part = pointer_token(part)
        if "%" in part:
            raise Unsupported("percent-encoded pointer")
        if isinstance(node, list) and part.isdigit():
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise Unsupported(f"unresolvable $ref {ref}")
    return node


def inline_refs(root: Any) -> Any:
    """A copy of ``root`` with every ``{"$ref": "#/..."}``-only object replaced by its target,
    except where that would recurse. Equivalent under 2020-12 when nothing changes the base
    URI (the caller checks), and about twice as fast for jsonschema, whose ``$ref``
    resolution dominates the cost of explaining a failure. Keyword values that are data
    (``enum``, ``const``, annotations) are left alone.
    """

    def walk(node: Any, stack: frozenset, budget: list[int]) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise Unsupported("too large to inline")
        if isinstance(node, dict):
            ref = node.get("$ref")
            if len(node) == 1 and isinstance(ref, str) and ref.startswith("#") and ref not in stack:
                return walk(resolve_pointer(root, ref), stack | {ref}, budget)
            return {
                k: v if k in _DATA_KEYWORDS else walk(v, stack, budget) for k, v in node.items()
            }
        if isinstance(node, list):
            return [walk(v, stack, budget) for v in node]
        return node

    try:
        return walk(root, frozenset(), [MAX_NODES * 5])
    except (Unsupported, RecursionError):
        return root


# Canonical spellings that jsonschema's format checkers certainly accept (one-sided: a string
# that does not match is still judged by the real checker). The real uuid and date-time
# checkers cost ~10 us each (UUID(), calendar.monthrange); these cost ~1 us. Days 01-28 exist in
# every month; year 0000 is excluded like the real checkers do. Tested with hypothesis.
_DAY = r"(?!0000)[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])"
FORMAT_PREFILTERS = {
    "uuid": re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}").fullmatch,
    "date": re.compile(_DAY).fullmatch,
    "date-time": re.compile(
        _DAY + r"[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?"
        r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
    ).fullmatch,
}


def format_test(checker: Any, fmt: str) -> Check:
    """The same verdict as ``FormatChecker.conforms`` without building a FormatError."""
    if fmt not in checker.checkers:
        return lambda x: True
    func, raises = checker.checkers[fmt]
    pre = FORMAT_PREFILTERS.get(fmt)

    def test(x: Any) -> bool:
        if pre is not None and type(x) is str and pre(x) is not None:
            return True
        try:
            return bool(func(x))
        except raises:
            return False

    return test
