"""A compiled yes/no check of a schema against its draft's metaschema, built once per draft.

Why: the metaschema check was most of a schema's first-use cost on a platform registry
(3-7 ms a schema with ``jsonschema``'s ``iter_errors``; issue 15). The metaschema is one
schema applied to thousands of schemas, so it pays to compile it once: each metaschema
subschema becomes a small Python closure (keyword tests as plain comparisons, property
tables as dict lookups, ``$ref`` resolved at compile time), and checking a schema costs tens
of microseconds.

The contract is one-sided, like ``audit/verdict/rscheck.py``'s: ``True`` means ``jsonschema``
finds no metaschema error. ``False`` only sends the schema to ``jsonschema``, which stays the
authority for every reported problem (pointer and message). A draft whose metaschema uses
something not handled here exactly (draft-03's ``type`` unions, for one) is not compiled
(``meta_check`` returns ``None``) and every schema of that draft goes to ``jsonschema``. A
differential test holds the verdicts equal to ``jsonschema``'s on the JSONSchemaBench corpus
and the JSON-Schema-Test-Suite schemas.

Semantics copied from ``jsonschema`` for the keywords the metaschemas use: drafts 4-7 ignore
the siblings of a ``$ref``; draft-04's ``integer`` refuses ``1.0`` and its ``exclusiveMinimum``
is a flag on ``minimum``; ``$dynamicRef: "#meta"`` (2020-12) and ``$recursiveRef: "#"``
(2019-09) resolve to the draft's top metaschema (the outermost dynamic scope when a schema is
checked against it); ``format`` is asserted with the same checker as the slow path.
"""

from __future__ import annotations

import re
from typing import Any

import referencing.jsonschema
from jsonschema._utils import equal, uniq
from jsonschema_specifications import REGISTRY as METASCHEMAS

from schemaops.closures import Check, accept, all_of, reject

#: keywords that only annotate or hold subschemas reached through ``$ref``
_IGNORED = {
    "$schema",
    "$id",
    "id",
    "$defs",
    "definitions",
    "title",
    "description",
    "default",
    "$comment",
    "$vocabulary",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "$anchor",
    "deprecated",
    "examples",
    "readOnly",
    "writeOnly",
}
_LEGACY_REF = {"draft-04", "draft-06", "draft-07"}  # $ref hides its siblings


class Unsupported(Exception):
    """The metaschema uses something this compiler does not answer exactly."""


def _types(names: list[str], strict_int: bool) -> Check:
    """``jsonschema``'s type test (bool is not a number; draft-04 integers are ints only).

    isinstance, as jsonschema's own checker, not audit/verdict/treecheck.py's ``type(x) is`` table:
    a schema may come from a Python caller (subclasses of dict, str, int included), an audited
    output only from ``json.loads``."""
    tests: list[Check] = []
    for name in names:
        if name == "object":
            tests.append(lambda x: isinstance(x, dict))
        elif name == "array":
            tests.append(lambda x: isinstance(x, list))
        elif name == "string":
            tests.append(lambda x: isinstance(x, str))
        elif name == "boolean":
            tests.append(lambda x: isinstance(x, bool))
        elif name == "null":
            tests.append(lambda x: x is None)
        elif name == "number":
            tests.append(lambda x: isinstance(x, (int, float)) and not isinstance(x, bool))
        elif name == "integer" and strict_int:
            tests.append(lambda x: isinstance(x, int) and not isinstance(x, bool))
        elif name == "integer":
            tests.append(
                lambda x: (
                    (isinstance(x, int) and not isinstance(x, bool))
                    or (isinstance(x, float) and x.is_integer())
                )
            )
        else:
            raise Unsupported(f"type {name!r}")
    if len(tests) == 1:
        return tests[0]
    return lambda x: any(t(x) for t in tests)


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


class _Compiler:
    """Closures for one draft's metaschema; each subschema compiled once (by identity)."""

    def __init__(self, label: str, validator: Any) -> None:
        self.label = label
        self.known = set(type(validator).VALIDATORS)
        self.fmt = validator.format_checker
        self.legacy_ref = label in _LEGACY_REF
        self.strict_int = label == "draft-04"
        self.cells: dict[int, list[Check]] = {}
        meta = type(validator).META_SCHEMA
        uri = meta.get("$id", meta.get("id", ""))
        self.spec = referencing.jsonschema.specification_with(meta.get("$schema", uri))
        resolved = METASCHEMAS.resolver().lookup(uri)
        self.root = resolved.contents
        self.root_resolver = resolved.resolver

    def compile(self) -> Check:
        return self.node(self.root, self.root_resolver)

    def node(self, schema: Any, resolver: Any) -> Check:
        """The check for ``schema``; a late-bound call while it is still compiling (a
        metaschema refers back to itself)."""
        key = id(schema)
        if key in self.cells:
            cell = self.cells[key]
            return cell[0] if cell[0] is not _PENDING else (lambda x: cell[0](x))
        cell = [_PENDING]
        self.cells[key] = cell
        cell[0] = self._build(schema, resolver)
        return cell[0]

    def _build(self, schema: Any, resolver: Any) -> Check:
        if isinstance(schema, bool):
            return accept if schema else reject
        if not isinstance(schema, dict):
            raise Unsupported("schema is not an object")
        resolver = resolver.in_subresource(self.spec.create_resource(schema))
        items = (
            [("$ref", schema["$ref"])] if self.legacy_ref and "$ref" in schema else schema.items()
        )
        checks: list[Check] = []
        for kw, value in items:
            if kw in _IGNORED or kw not in self.known:
                continue
            checks.append(self.keyword(kw, value, schema, resolver))
        return all_of(checks)

    def keyword(self, kw: str, value: Any, schema: dict, resolver: Any) -> Check:  # noqa: C901
        if kw == "$ref":
            resolved = resolver.lookup(value)
            return self.node(resolved.contents, resolved.resolver)
        if kw in ("$dynamicRef", "$recursiveRef"):
            anchor = self.root.get("$dynamicAnchor") if kw == "$dynamicRef" else None
            if not (value == f"#{anchor}" or (kw == "$recursiveRef" and value == "#")):
                raise Unsupported(f"{kw} {value!r}")
            return self.node(self.root, self.root_resolver)
        if kw == "type":
            names = [value] if isinstance(value, str) else value
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise Unsupported("type with schemas")
            return _types(names, self.strict_int)
        if kw == "enum":
            values = tuple(value)
            return lambda x: any(equal(x, e) for e in values)
        if kw == "const":
            return lambda x: equal(x, value)
        if kw == "properties":
            table = {k: self.node(v, resolver) for k, v in value.items()}

            def properties(x: Any) -> bool:
                if isinstance(x, dict):
                    for k, v in x.items():
                        c = table.get(k)
                        if c is not None and not c(v):
                            return False
                return True

            return properties
        if kw == "additionalProperties":
            if "patternProperties" in schema:
                raise Unsupported("additionalProperties next to patternProperties")
            known = frozenset(schema.get("properties", ()))
            extra = self.node(value, resolver)

            def additional(x: Any) -> bool:
                if isinstance(x, dict):
                    for k, v in x.items():
                        if k not in known and not extra(v):
                            return False
                return True

            return additional
        if kw == "propertyNames":
            names = self.node(value, resolver)
            return lambda x: not isinstance(x, dict) or all(names(k) for k in x)
        if kw == "items":
            if not isinstance(value, (dict, bool)) or "prefixItems" in schema:
                raise Unsupported("items as an array")
            each = self.node(value, resolver)
            return lambda x: not isinstance(x, list) or all(each(v) for v in x)
        if kw in ("allOf", "anyOf"):
            subs = tuple(self.node(s, resolver) for s in value)
            if kw == "allOf":
                return all_of(list(subs))
            return lambda x: any(s(x) for s in subs)
        if kw == "minItems":
            n = value
            return lambda x: not isinstance(x, list) or len(x) >= n
        if kw == "uniqueItems":
            if not value:
                return accept
            return lambda x: not isinstance(x, list) or uniq(x)
        if kw == "minimum":
            bound = value
            if self.label == "draft-04" and schema.get("exclusiveMinimum", False):
                return lambda x: not _is_num(x) or x > bound
            return lambda x: not _is_num(x) or x >= bound
        if kw == "exclusiveMinimum":
            if self.label == "draft-04":
                return accept  # a flag on minimum (above)
            bound = value
            return lambda x: not _is_num(x) or x > bound
        if kw == "pattern":
            search = re.compile(value).search
            return lambda x: not isinstance(x, str) or search(x) is not None
        if kw == "format":
            return self.format(value)
        if kw == "dependencies":
            deps: list[tuple[str, Any]] = []
            for prop, dep in value.items():
                if isinstance(dep, list):
                    deps.append((prop, tuple(dep)))
                else:
                    deps.append((prop, self.node(dep, resolver)))

            def dependencies(x: Any) -> bool:
                if not isinstance(x, dict):
                    return True
                for prop, dep in deps:
                    if prop not in x:
                        continue
                    if isinstance(dep, tuple):
                        if any(each not in x for each in dep):
                            return False
                    elif not dep(x):
                        return False
                return True

            return dependencies
        raise Unsupported(kw)

    def format(self, name: str) -> Check:
        """``FormatChecker.check`` as a yes/no (an unknown format always conforms)."""
        if self.fmt is None or name not in self.fmt.checkers:
            return accept
        func, raises = self.fmt.checkers[name]

        def conforms(x: Any) -> bool:
            try:
                return bool(func(x))
            except raises:
                return False

        return conforms


def _PENDING(x: Any) -> bool:  # noqa: N802 (a sentinel while a node compiles; never called)
    raise AssertionError("metaschema check called while compiling")


_COMPILED: dict[str, Check | None] = {}


def meta_check(label: str, validator: Any) -> Check | None:
    """The compiled check for draft ``label`` (built from its ``jsonschema`` metaschema
    ``validator``, once per process), or ``None`` when it cannot be exact."""
    if label not in _COMPILED:
        try:
            _COMPILED[label] = _Compiler(label, validator).compile()
        except Exception:  # Unsupported, or a referencing error: no fast path, never wrong
            _COMPILED[label] = None
    return _COMPILED[label]
