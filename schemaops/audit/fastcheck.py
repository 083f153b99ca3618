"""A compiled yes/no validator for the common subset of JSON Schema 2020-12.

Why: most audited outputs are valid, and ``jsonschema``'s ``is_valid`` costs tens of
microseconds per small object (it dispatches every keyword through generic machinery). This
module compiles a schema once into nested closures that answer only "valid?", so the common
case costs about as much as parsing. Anything it cannot answer exactly is not compiled
(``compile_fast`` returns ``None``) and the caller uses ``jsonschema`` for every record.

The contract is one-sided and tested differentially against ``jsonschema`` (the
JSON-Schema-Test-Suite and hypothesis): a ``True`` here must mean ``jsonschema`` finds no
error. A ``False`` only sends the record to ``jsonschema``, which is the authority for the
category, the path and the message.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema._utils import equal, uniq

Check = Callable[[Any], bool]

# Keywords that only annotate (or only hold subschemas for $ref): jsonschema ignores them.
_IGNORED = {
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
# Keywords the fast path does not implement: a schema using any of them is not compiled.
_KNOWN = set(Draft202012Validator.VALIDATORS)
_ID_KEYWORDS = ("$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef")


class Unsupported(Exception):
    """The schema uses something the fast path does not answer exactly."""


def _is_integer(x: Any) -> bool:
    t = type(x)
    return t is int or (t is float and x.is_integer())


def _is_number(x: Any) -> bool:
    t = type(x)
    return t is int or t is float


_TYPE_TESTS: dict[str, Check] = {
    "null": lambda x: x is None,
    "boolean": lambda x: type(x) is bool,
    "integer": _is_integer,
    "number": _is_number,
    "string": lambda x: type(x) is str,
    "array": lambda x: type(x) is list,
    "object": lambda x: type(x) is dict,
}
# Exact Python types per JSON type, for the common single-type case.
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "number": (int, float),
    "string": (str,),
    "array": (list,),
    "object": (dict,),
}


def _mentions(node: Any, keys: tuple[str, ...]) -> bool:
    """True when any of ``keys`` appears as a property of any object inside ``node``."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            if any(k in cur for k in keys):
                return True
            stack.extend(cur.values())
        elif isinstance(cur, list):
            stack.extend(cur)
    return False


def _pointer(root: Any, ref: str) -> Any:
    """Resolve a local ``#/a/b`` reference against the root document."""
    node = root
    for part in ref[2:].split("/") if ref != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if "%" in part:
            raise Unsupported("percent-encoded pointer")
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise Unsupported(f"unresolvable $ref {ref}")
    return node


class _Compiler:
    def __init__(self, root: Any, format_checker: Any) -> None:
        self.root = root
        self.format_checker = format_checker
        self.refs: dict[str, list[Check]] = {}

    def ref(self, ref: str) -> Check:
        if not ref.startswith("#"):
            raise Unsupported("non-local $ref")
        if ref not in self.refs:
            cell: list[Check] = []
            self.refs[ref] = cell
            cell.append(self.compile(_pointer(self.root, ref)))
        cell = self.refs[ref]
        return lambda x: cell[0](x)

    def compile(self, schema: Any) -> Check:
        if schema is True or schema == {}:
            return lambda x: True
        if schema is False:
            return lambda x: False
        if not isinstance(schema, dict):
            raise Unsupported("schema is not an object")
        checks: list[Check] = []
        for key, value in schema.items():
            if key in _IGNORED or key not in _KNOWN:
                continue
            maker = getattr(self, "k_" + key.lstrip("$"), None)
            if maker is None:
                raise Unsupported(key)
            checks.append(maker(value, schema))
        if not checks:
            return lambda x: True
        if len(checks) == 1:
            return checks[0]
        if len(checks) == 2:
            a, b = checks
            return lambda x: a(x) and b(x)
        tup = tuple(checks)
        return lambda x: all(c(x) for c in tup)

    # -- keywords ---------------------------------------------------------------------------
    def k_ref(self, value: Any, schema: dict) -> Check:
        return self.ref(value)

    def k_type(self, value: Any, schema: dict) -> Check:
        names = [value] if isinstance(value, str) else list(value)
        if any(n not in _TYPE_TESTS for n in names):
            raise Unsupported("unknown type")
        if "integer" not in names:
            pytypes = tuple(t for n in names for t in _PY_TYPES[n])
            if bool not in pytypes and int in pytypes:
                return lambda x: type(x) in pytypes and type(x) is not bool
            return lambda x: type(x) in pytypes
        tests = tuple(_TYPE_TESTS[n] for n in names)
        return lambda x: any(t(x) for t in tests)

    def k_enum(self, value: Any, schema: dict) -> Check:
        if isinstance(value, list) and value and all(type(v) is str for v in value):
            members = frozenset(value)
            return lambda x: type(x) is str and x in members
        return lambda x: any(equal(x, v) for v in value)

    def k_const(self, value: Any, schema: dict) -> Check:
        if type(value) is str:
            return lambda x: type(x) is str and x == value
        return lambda x: equal(x, value)

    def k_properties(self, value: dict, schema: dict) -> Check:
        subs = tuple((k, self.compile(s)) for k, s in value.items())
        return lambda x: type(x) is not dict or all(c(x[k]) for k, c in subs if k in x)

    def k_required(self, value: list, schema: dict) -> Check:
        keys = tuple(value)
        return lambda x: type(x) is not dict or all(k in x for k in keys)

    def k_additionalProperties(self, value: Any, schema: dict) -> Check:
        if "patternProperties" in schema:
            raise Unsupported("patternProperties")
        known = frozenset(schema.get("properties", {}))
        if value is False:
            return lambda x: type(x) is not dict or known.issuperset(x)
        sub = self.compile(value)
        return lambda x: type(x) is not dict or all(sub(v) for k, v in x.items() if k not in known)

    def k_prefixItems(self, value: list, schema: dict) -> Check:
        subs = tuple(self.compile(s) for s in value)
        return lambda x: type(x) is not list or all(c(v) for c, v in zip(subs, x, strict=False))

    def k_items(self, value: Any, schema: dict) -> Check:
        start = len(schema.get("prefixItems", []))
        sub = self.compile(value)
        if start == 0:
            return lambda x: type(x) is not list or all(sub(v) for v in x)
        return lambda x: type(x) is not list or all(sub(v) for v in x[start:])

    def k_uniqueItems(self, value: Any, schema: dict) -> Check:
        if not value:
            return lambda x: True
        return lambda x: type(x) is not list or uniq(x)

    def _size(self, value: Any, kind: type, op: str) -> Check:
        if type(value) is not int:
            raise Unsupported("non-integer size")
        if op == "min":
            return lambda x: type(x) is not kind or len(x) >= value
        return lambda x: type(x) is not kind or len(x) <= value

    def k_minLength(self, v: Any, s: dict) -> Check:
        return self._size(v, str, "min")

    def k_maxLength(self, v: Any, s: dict) -> Check:
        return self._size(v, str, "max")

    def k_minItems(self, v: Any, s: dict) -> Check:
        return self._size(v, list, "min")

    def k_maxItems(self, v: Any, s: dict) -> Check:
        return self._size(v, list, "max")

    def k_minProperties(self, v: Any, s: dict) -> Check:
        return self._size(v, dict, "min")

    def k_maxProperties(self, v: Any, s: dict) -> Check:
        return self._size(v, dict, "max")

    def _bound(self, value: Any, test: Callable[[Any, Any], bool]) -> Check:
        if not _is_number(value):
            raise Unsupported("non-numeric bound")
        return lambda x: not _is_number(x) or test(x, value)

    def k_minimum(self, v: Any, s: dict) -> Check:
        return self._bound(v, lambda x, b: not x < b)

    def k_maximum(self, v: Any, s: dict) -> Check:
        return self._bound(v, lambda x, b: not x > b)

    def k_exclusiveMinimum(self, v: Any, s: dict) -> Check:
        return self._bound(v, lambda x, b: not x <= b)

    def k_exclusiveMaximum(self, v: Any, s: dict) -> Check:
        return self._bound(v, lambda x, b: not x >= b)

    def k_pattern(self, value: str, schema: dict) -> Check:
        try:
            search = re.compile(value).search
        except re.error as exc:
            raise Unsupported("bad pattern") from exc
        return lambda x: type(x) is not str or search(x) is not None

    def k_format(self, value: str, schema: dict) -> Check:
        checker = self.format_checker
        if checker is None:
            return lambda x: True
        return lambda x: checker.conforms(x, value)

    def k_allOf(self, value: list, schema: dict) -> Check:
        subs = tuple(self.compile(s) for s in value)
        return lambda x: all(c(x) for c in subs)

    def k_anyOf(self, value: list, schema: dict) -> Check:
        subs = tuple(self.compile(s) for s in value)
        return lambda x: any(c(x) for c in subs)

    def k_oneOf(self, value: list, schema: dict) -> Check:
        subs = tuple(self.compile(s) for s in value)
        return lambda x: sum(1 for c in subs if c(x)) == 1

    def k_not(self, value: Any, schema: dict) -> Check:
        sub = self.compile(value)
        return lambda x: not sub(x)


def compile_fast(schema: Any, validator_cls: type, format_checker: Any) -> Check | None:
    """Compile ``schema`` to a yes/no check, or ``None`` when the fast path cannot be exact.

    Only draft 2020-12 is compiled (``items`` and bounds differ in older drafts), and only
    schemas without base-URI changes (``$id``, anchors, dynamic refs), so every ``$ref`` is a
    JSON pointer into the one document.
    """
    if validator_cls is not Draft202012Validator or _mentions(schema, _ID_KEYWORDS):
        return None
    try:
        return _Compiler(schema, format_checker).compile(schema)
    except (Unsupported, RecursionError, ValueError, IndexError, TypeError):
        return None
