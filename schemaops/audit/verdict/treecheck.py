"""A yes/no check built as a tree of closures, one per subschema (``subset.py``'s keywords).

Why kept beside jsonschema-rs (``rscheck.py``, the audit's yes/no verdict): each subschema
keeps its own check (``TreeCheck.sub``), so explaining a failure (``validate.py``,
``explain.py``) skips the subtrees of the output that these checks accept and ``jsonschema``
walks only the failing part, its ``best_match`` keyword, path and message staying exactly what
they were (a skipped subtree had no error to contribute); jsonschema-rs answers for the whole
output only. The tree also answers yes/no for the few schemas jsonschema-rs cannot answer
for exactly (``rscheck.compile_rs`` says why). Closures cost tens of microseconds to build.

The contract is one-sided (``True`` means ``jsonschema`` finds no error; anything not
answered exactly makes ``compile_tree`` return ``None``), held to ``jsonschema`` by the
differential tests.
"""

from __future__ import annotations

import re
from typing import Any

from jsonschema import Draft4Validator, Draft6Validator, Draft7Validator, Draft202012Validator
from jsonschema._utils import equal, uniq

from schemaops.audit.verdict import subset
from schemaops.audit.verdict.schemakeys import ID_KEYWORDS, draft4_ids
from schemaops.audit.verdict.subset import (
    HANDLED,
    IGNORED,
    KNOWN,
    MAX_NODES,
    Unsupported,
    format_test,
    int_keyword,
    mentions,
    other_dialect,
    resolve_pointer,
)
from schemaops.closures import Check, accept, all_of, reject

_NUM = (int, float)
_UNHANDLED = frozenset(KNOWN - IGNORED - HANDLED)
#: drafts 4, 6 and 7: the same subset with their rules (a ``$ref`` hides its siblings, ``items``
#: only as one schema, draft-04's integers and ``exclusiveMinimum``/``Maximum`` flags)
LEGACY = (Draft4Validator, Draft6Validator, Draft7Validator)
_HANDLED_LEGACY = (HANDLED - {"prefixItems"}) | {"additionalItems"}
OBJECT_KEYWORDS = frozenset(subset.OBJECT_KEYWORDS)
ARRAY_KEYWORDS = frozenset(subset.ARRAY_KEYWORDS)
STRING_KEYWORDS = frozenset(subset.STRING_KEYWORDS)
NUMBER_KEYWORDS = frozenset(subset.NUMBER_KEYWORDS)


def _pending(x: Any) -> bool:  # a node still compiling (a recursive $ref); never called
    raise AssertionError("tree check called while compiling")


# ``type(x) is`` tests, not jsonschema's isinstance ones: this checks ``json.loads`` output
# only, where they answer the same and are faster on the audit's hot path.
_TYPES: dict[str, Check] = {
    "null": lambda x: x is None,
    "boolean": lambda x: type(x) is bool,
    "integer": lambda x: type(x) is int or (type(x) is float and x.is_integer()),
    "number": lambda x: type(x) in _NUM,
    "string": lambda x: type(x) is str,
    "array": lambda x: type(x) is list,
    "object": lambda x: type(x) is dict,
}


class TreeCheck:
    """The check of a whole schema (``__call__``) and of each subschema by identity.

    A lazy tree (``compile_tree(lazy=True)``) compiles the subschemas under ``properties``,
    ``additionalProperties``, ``items`` and ``prefixItems`` on their first call: a platform
    registry's schema sees a few outputs, which touch a fraction of its subtrees. A subtree
    that turns out not to be answerable exactly raises ``Unsupported`` from that call and
    marks the whole tree ``broken`` (its partly built nodes may be referenced from others):
    the caller then answers with ``jsonschema`` alone, as when ``compile_tree`` returns None.
    """

    def __init__(
        self, root: Check, sub: dict[int, Any], lazies: dict[int, tuple[Any, Check]] | None = None
    ) -> None:
        self.root = root
        # id(subschema) -> (subschema, check): the object kept for `is`; a lazy tree's live
        # table of [subschema, check] cells, where a check may still be ``_pending``
        self.sub = sub
        # a lazy tree's children not compiled yet: id -> (subschema, check compiling on call)
        self.lazies = lazies or {}
        self.broken = False

    def __call__(self, value: Any) -> bool:
        return self.root(value)

    def of(self, schema: Any) -> Check | None:
        """The check of ``schema`` when it is one of this schema's own compiled subschemas."""
        if self.broken:
            return None
        found = self.sub.get(id(schema))
        if found is not None and found[0] is schema and found[1] is not _pending:
            return found[1]
        lazy = self.lazies.get(id(schema))
        return lazy[1] if lazy is not None and lazy[0] is schema else None


class _Tree:
    def __init__(self, root: Any, format_checker: Any, cls: type = Draft202012Validator) -> None:
        self.root = root
        self.fmt = format_checker
        self.legacy = cls in LEGACY
        self.draft4 = cls is Draft4Validator
        self.known = frozenset(cls.VALIDATORS) if self.legacy else KNOWN
        handled = _HANDLED_LEGACY if self.legacy else HANDLED
        self.unhandled = frozenset(self.known - IGNORED - handled)
        self.types = {**_TYPES, "integer": _INT4} if self.draft4 else _TYPES
        self.cells: dict[int, list] = {}
        self.refs: dict[str, Check] = {}
        self.size = 0
        self.lazy_children = False
        self.lazies: dict[int, tuple[Any, Check]] = {}
        self.owner: TreeCheck | None = None  # set once the root is built (lazy trees)

    def node(self, schema: Any) -> Check:
        """The check of ``schema`` (each subschema object compiled once)."""
        key = id(schema)
        cell = self.cells.get(key)
        if cell is not None:
            return cell[1] if cell[1] is not _pending else (lambda x: cell[1](x))
        cell = [schema, _pending]
        self.cells[key] = cell
        cell[1] = self.build(schema)
        return cell[1]

    def child(self, schema: Any) -> Check:
        """``node(schema)`` now, or (lazy trees) on the first call of the returned check."""
        if not self.lazy_children or schema is True:
            return self.node(schema)
        cell = self.cells.get(id(schema))
        if cell is not None and cell[1] is not _pending:
            return cell[1]
        box: list[Check] = []

        def first(x: Any) -> bool:
            if box:
                return box[0](x)
            owner = self.owner
            if owner is None or owner.broken:
                raise Unsupported("tree check broken")
            try:
                check = self.node(schema)
            except _COMPILE_ERRORS as exc:
                owner.broken = True
                raise Unsupported(f"subschema not answerable exactly: {exc!r}") from None
            except BaseException:  # a watchdog timeout mid-build: cells may be half done
                owner.broken = True
                raise
            box.append(check)
            return check(x)

        self.lazies[id(schema)] = (schema, first)
        return first

    def ref(self, ref: Any) -> Check:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise Unsupported("non-local $ref")
        return self.node(resolve_pointer(self.root, ref))

    def build(self, schema: Any) -> Check:  # noqa: C901 (one branch per keyword, as emit)
        self.size += 1
        if self.size > MAX_NODES:
            raise Unsupported("schema too large for the fast path")
        if isinstance(schema, bool):
            return accept if schema else reject
        if not isinstance(schema, dict):
            raise Unsupported("schema is not an object")
        if self.legacy:
            if "$ref" in schema:  # drafts 4-7: the siblings of a $ref are ignored
                target = self.ref(schema["$ref"])
                return lambda x: target(x)
            # keywords the draft does not know are ignored by jsonschema (draft-04 ``const``)
            schema = {
                k: v
                for k, v in schema.items()
                if k in self.known or k == "exclusiveMinimum" or k == "exclusiveMaximum"
            }
        if not self.unhandled.isdisjoint(schema):
            raise Unsupported(", ".join(k for k in schema if k in self.unhandled))
        checks: list[Check] = []
        if "type" in schema:
            names = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
            if not isinstance(names, list) or any(n not in self.types for n in names):
                raise Unsupported("bad type")
            tests = tuple(self.types[n] for n in names)
            checks.append(tests[0] if len(tests) == 1 else lambda x: any(t(x) for t in tests))
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list):
                raise Unsupported("bad enum")
            if values and all(type(e) is str for e in values):
                strings = frozenset(values)
                checks.append(lambda x: type(x) is str and x in strings)
            else:
                options = tuple(values)
                checks.append(lambda x: any(equal(x, e) for e in options))
        if "const" in schema:
            const = schema["const"]
            checks.append(lambda x: equal(x, const))
        if "format" in schema and self.fmt is not None:
            checks.append(format_test(self.fmt, schema["format"]))
        if "$ref" in schema:
            target = self.ref(schema["$ref"])
            checks.append(lambda x: target(x))  # late-bound through node() when recursive
        for sub in schema.get("allOf", []):
            checks.append(self.node(sub))
        if "anyOf" in schema:
            branches = tuple(self.node(s) for s in schema["anyOf"])
            checks.append(lambda x: any(b(x) for b in branches))
        if "oneOf" in schema:
            ones = tuple(self.node(s) for s in schema["oneOf"])
            checks.append(lambda x: sum(1 for b in ones if b(x)) == 1)
        if "not" in schema:
            negated = self.node(schema["not"])
            checks.append(lambda x: not negated(x))
        if not OBJECT_KEYWORDS.isdisjoint(schema):
            checks.append(self.object(schema))
        if not ARRAY_KEYWORDS.isdisjoint(schema):
            checks.append(self.array(schema))
        if not STRING_KEYWORDS.isdisjoint(schema):
            checks.append(self.string(schema))
        if not NUMBER_KEYWORDS.isdisjoint(schema):
            checks.append(self.number(schema))
        return all_of(checks)

    # object, array and string each test their own length bounds inline (same shape, three
    # sites): a shared helper would add a call per value on the audit's hot path.
    def object(self, schema: dict) -> Check:
        props = schema.get("properties", {})
        if not isinstance(props, dict):
            raise Unsupported("bad properties")
        required = tuple(schema.get("required", []))
        low, high = int_keyword(schema, "minProperties"), int_keyword(schema, "maxProperties")
        extra = schema.get("additionalProperties", True)
        known = frozenset(props)
        closed = extra is False
        extra_check = None if extra is True or closed else self.child(extra)
        table = tuple(
            (key, self.child(sub)) for key, sub in props.items() if not (sub is True or sub == {})
        )

        def check(x: Any) -> bool:
            if type(x) is not dict:
                return True
            for key in required:
                if key not in x:
                    return False
            if low is not None and len(x) < low:
                return False
            if high is not None and len(x) > high:
                return False
            if closed and not known.issuperset(x):
                return False
            if extra_check is not None:
                for k, y in x.items():
                    if k not in known and not extra_check(y):
                        return False
            for key, sub in table:
                if key in x and not sub(x[key]):
                    return False
            return True

        return check

    def array(self, schema: dict) -> Check:
        if self.legacy:
            items = schema.get("items", {})
            if not isinstance(items, (dict, bool)) or (
                "additionalItems" in schema and not isinstance(items, dict)
            ):
                raise Unsupported("items as an array")  # (additionalItems is a no-op then)
        low, high = int_keyword(schema, "minItems"), int_keyword(schema, "maxItems")
        unique = schema.get("uniqueItems") is True
        prefix = tuple(self.child(s) for s in schema.get("prefixItems", []))
        items = schema["items"] if "items" in schema else True
        each = None if items is True else self.child(items)
        start = len(prefix)

        def check(x: Any) -> bool:
            if type(x) is not list:
                return True
            if low is not None and len(x) < low:
                return False
            if high is not None and len(x) > high:
                return False
            if unique and not uniq(x):
                return False
            for i, sub in enumerate(prefix):
                if len(x) > i and not sub(x[i]):
                    return False
            if each is not None:
                for y in x[start:] if start else x:
                    if not each(y):
                        return False
            return True

        return check

    def string(self, schema: dict) -> Check:
        low, high = int_keyword(schema, "minLength"), int_keyword(schema, "maxLength")
        search = None
        if "pattern" in schema:
            try:
                search = re.compile(schema["pattern"]).search
            except (re.error, TypeError) as exc:
                raise Unsupported("bad pattern") from exc

        def check(x: Any) -> bool:
            if type(x) is not str:
                return True
            if low is not None and len(x) < low:
                return False
            if high is not None and len(x) > high:
                return False
            return search is None or search(x) is not None

        return check

    def number(self, schema: dict) -> Check:
        if self.draft4:  # exclusiveMinimum/Maximum: flags on minimum/maximum
            return self.number4(schema)
        bounds = []
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if key in schema:
                if type(schema[key]) not in _NUM:
                    raise Unsupported("non-numeric bound")
                bounds.append((key, schema[key]))
        lo = dict(bounds)

        def check(x: Any) -> bool:
            if type(x) not in _NUM:
                return True
            if "minimum" in lo and x < lo["minimum"]:
                return False
            if "maximum" in lo and x > lo["maximum"]:
                return False
            if "exclusiveMinimum" in lo and x <= lo["exclusiveMinimum"]:
                return False
            return not ("exclusiveMaximum" in lo and x >= lo["exclusiveMaximum"])

        return check

    def number4(self, schema: dict) -> Check:
        """Draft-04: ``exclusiveMinimum``/``exclusiveMaximum`` are flags on the bounds."""
        low, high = _number4_bound(schema, "minimum"), _number4_bound(schema, "maximum")
        low_ex = bool(schema.get("exclusiveMinimum", False))
        high_ex = bool(schema.get("exclusiveMaximum", False))

        def check(x: Any) -> bool:
            if type(x) not in _NUM:
                return True
            if low is not None and (x <= low if low_ex else x < low):
                return False
            return not (high is not None and (x >= high if high_ex else x > high))

        return check


def _number4_bound(schema: dict, key: str) -> Any:
    value = schema.get(key)
    if value is not None and type(value) not in _NUM:
        raise Unsupported("non-numeric bound")
    return value


def _int4(x: Any) -> bool:
    return type(x) is int


_INT4 = _int4


_COMPILE_ERRORS = (Unsupported, RecursionError, ValueError, IndexError, TypeError, MemoryError)


def compile_tree(
    schema: Any,
    validator_cls: type,
    format_checker: Any,
    screened: bool = False,
    lazy: bool = False,
) -> TreeCheck | None:
    """The closure check of ``schema`` (drafts 2020-12, 4, 6 and 7), or ``None``.

    ``screened``: the caller found no base-URI keyword and no subschema in another dialect
    (``validate.py`` walks the schema once for all its questions). ``lazy``: child subtrees
    compile on first use (``TreeCheck``); a call may then raise ``Unsupported``."""
    if validator_cls is not Draft202012Validator and validator_cls not in LEGACY:
        return None
    if not screened and (
        mentions(schema, ID_KEYWORDS)
        or other_dialect(schema, validator_cls)
        or (validator_cls is Draft4Validator and draft4_ids(schema))
    ):
        return None
    tree = _Tree(schema, format_checker, validator_cls)
    tree.lazy_children = lazy
    try:
        root = tree.node(schema)
    except _COMPILE_ERRORS:
        return None
    if lazy:
        tree.owner = TreeCheck(root, tree.cells, tree.lazies)
        return tree.owner
    return TreeCheck(root, {k: (c[0], c[1]) for k, c in tree.cells.items()})
