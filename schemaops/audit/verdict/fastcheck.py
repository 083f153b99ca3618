"""A generated yes/no validator for the common subset of JSON Schema 2020-12.

Why: most audited outputs are valid, and ``jsonschema``'s ``is_valid`` costs tens of
microseconds per small object (it dispatches every keyword through generic machinery). This
module turns a schema once into Python source (one function per ``$ref`` target and per
``anyOf``/``oneOf``/``not`` branch, everything else inlined as plain ``if`` statements),
compiles it, and uses it to answer only "valid?". The common case then costs about as much
as parsing. Anything it cannot answer exactly is not compiled (``compile_fast`` returns
``None``) and the caller uses ``jsonschema`` for every record of that schema.

The contract is one-sided and tested differentially against ``jsonschema`` (the
JSON-Schema-Test-Suite and hypothesis): ``True`` here must mean ``jsonschema`` finds no
error. ``False`` only sends the record to ``jsonschema``, which is the authority for the
category, the path and the message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema._utils import equal, uniq
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
ID_KEYWORDS = ("$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef")
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
_TYPE_EXPR = {
    "null": "{v} is None",
    "boolean": "type({v}) is bool",
    "integer": "(type({v}) is int or (type({v}) is float and {v}.is_integer()))",
    "number": "type({v}) in _NUM",
    "string": "type({v}) is str",
    "array": "type({v}) is list",
    "object": "type({v}) is dict",
}
MAX_NODES = 20_000  # subschemas emitted (inlined $refs count each time)
MAX_NESTING = 12  # Python refuses more than 20 nested blocks; branch into functions earlier


class Unsupported(Exception):
    """The schema uses something the fast path does not answer exactly."""


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


class _Gen:
    def __init__(self, root: Any, format_checker: Any) -> None:
        self.root = root
        self.fmt = format_checker
        self.ns: dict[str, Any] = {"_NUM": (int, float), "_equal": equal, "_uniq": uniq}
        self.funcs: list[list[str]] = []
        self.refs: dict[str, str] = {}
        self.n = 0
        self.size = 0
        self.expanding: set[str] = set()

    def const(self, value: Any) -> str:
        self.n += 1
        name = f"C{self.n}"
        self.ns[name] = value
        return name

    def var(self) -> str:
        self.n += 1
        return f"y{self.n}"

    def function(self, schema: Any) -> str:
        """Emit ``def fN(x)`` for ``schema``; returns its name."""
        self.n += 1
        name = f"f{self.n}"
        body: list[str] = []
        self.funcs.append(body)
        body.append(f"def {name}(x):")
        self.emit(schema, "x", 1, body)
        body.append("    return True")
        return name

    def ref(self, ref: str) -> str:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise Unsupported("non-local $ref")
        if ref not in self.refs:
            self.n += 1
            self.refs[ref] = f"r{self.n}"
            target = resolve_pointer(self.root, ref)
            name = self.function(target)
            self.funcs.append([f"{self.refs[ref]} = {name}"])
        return self.refs[ref]

    def emit(self, schema: Any, v: str, ind: int, out: list[str]) -> None:
        """Statements that ``return False`` when ``v`` is not valid against ``schema``."""
        pad = "    " * ind
        self.size += 1
        if self.size > MAX_NODES:
            raise Unsupported("schema too large for the fast path")
        if schema is True:
            return
        if schema is False:
            out.append(f"{pad}return False")
            return
        if not isinstance(schema, dict):
            raise Unsupported("schema is not an object")
        if ind > MAX_NESTING:
            out.append(f"{pad}if not {self.function(schema)}({v}): return False")
            return
        keys = [k for k in schema if k not in IGNORED and k in KNOWN]
        if any(k not in HANDLED for k in keys):
            raise Unsupported(", ".join(k for k in keys if k not in HANDLED))
        if "type" in schema:
            names = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
            if not isinstance(names, list) or any(n not in _TYPE_EXPR for n in names):
                raise Unsupported("bad type")
            expr = " or ".join(_TYPE_EXPR[n].format(v=v) for n in names) or "False"
            out.append(f"{pad}if not ({expr}): return False")
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list):
                raise Unsupported("bad enum")
            if values and all(type(e) is str for e in values):
                c = self.const(frozenset(values))
                out.append(f"{pad}if not (type({v}) is str and {v} in {c}): return False")
            else:
                c = self.const(values)
                out.append(f"{pad}if not any(_equal({v}, e) for e in {c}): return False")
        if "const" in schema:
            c = self.const(schema["const"])
            out.append(f"{pad}if not _equal({v}, {c}): return False")
        if "format" in schema and self.fmt is not None:
            c = self.const(format_test(self.fmt, schema["format"]))
            out.append(f"{pad}if not {c}({v}): return False")
        if "$ref" in schema:
            ref = schema["$ref"]
            if isinstance(ref, str) and ref.startswith("#") and ref not in self.expanding:
                self.expanding.add(ref)  # not recursive (yet): inline the target
                self.emit(resolve_pointer(self.root, ref), v, ind, out)
                self.expanding.discard(ref)
            else:
                out.append(f"{pad}if not {self.ref(ref)}({v}): return False")
        for sub in schema.get("allOf", []):
            self.emit(sub, v, ind, out)
        if "anyOf" in schema:
            calls = " or ".join(f"{self.function(s)}({v})" for s in schema["anyOf"]) or "False"
            out.append(f"{pad}if not ({calls}): return False")
        if "oneOf" in schema:
            calls = ", ".join(f"{self.function(s)}({v})" for s in schema["oneOf"])
            out.append(f"{pad}if sum(({calls},)) != 1: return False")
        if "not" in schema:
            out.append(f"{pad}if {self.function(schema['not'])}({v}): return False")
        if any(k in schema for k in OBJECT_KEYWORDS):
            self.emit_object(schema, v, ind, out)
        if any(k in schema for k in ARRAY_KEYWORDS):
            self.emit_array(schema, v, ind, out)
        if any(k in schema for k in STRING_KEYWORDS):
            self.emit_string(schema, v, ind, out)
        if any(k in schema for k in NUMBER_KEYWORDS):
            block = [f"{pad}if type({v}) in _NUM:"]
            for k, op in (
                ("minimum", "<"),
                ("maximum", ">"),
                ("exclusiveMinimum", "<="),
                ("exclusiveMaximum", ">="),
            ):
                if k in schema:
                    bound = schema[k]
                    if type(bound) not in (int, float):
                        raise Unsupported("non-numeric bound")
                    block.append(f"{pad}    if {v} {op} {self.const(bound)}: return False")
            out.extend(block)

    def emit_block(self, schema: Any, v: str, ind: int, out: list[str]) -> None:
        """``emit`` as the body of a block, which Python requires to be non-empty."""
        before = len(out)
        self.emit(schema, v, ind, out)
        if len(out) == before:
            out.append("    " * ind + "pass")

    def emit_object(self, schema: dict, v: str, ind: int, out: list[str]) -> None:
        pad = "    " * (ind + 1)
        out.append(f"{'    ' * ind}if type({v}) is dict:")
        out.append(f"{pad}pass")
        props = schema.get("properties", {})
        if not isinstance(props, dict):
            raise Unsupported("bad properties")
        for key in schema.get("required", []):
            out.append(f"{pad}if {key!r} not in {v}: return False")
        for key, op in (("minProperties", "<"), ("maxProperties", ">")):
            n = int_keyword(schema, key)
            if n is not None:
                out.append(f"{pad}if len({v}) {op} {n}: return False")
        extra = schema.get("additionalProperties", True)
        if extra is False:
            out.append(f"{pad}if not {self.const(frozenset(props))}.issuperset({v}): return False")
        elif extra is not True:
            known = self.const(frozenset(props))
            k, y = self.var(), self.var()
            out.append(f"{pad}for {k}, {y} in {v}.items():")
            out.append(f"{pad}    if {k} not in {known}:")
            self.emit_block(extra, y, ind + 3, out)
        for key, sub in props.items():
            if sub is True or sub == {}:
                continue
            y = self.var()
            out.append(f"{pad}if {key!r} in {v}:")
            out.append(f"{pad}    {y} = {v}[{key!r}]")
            self.emit(sub, y, ind + 2, out)

    def emit_sized(
        self, schema: dict, v: str, ind: int, out: list[str], pytype: str, lo: str, hi: str
    ) -> str:
        """Open ``if type(v) is pytype:`` with its ``len`` bounds (keywords ``lo``/``hi``);
        returns the indentation of the block's body."""
        pad = "    " * (ind + 1)
        out.append(f"{'    ' * ind}if type({v}) is {pytype}:")
        out.append(f"{pad}pass")
        for key, op in ((lo, "<"), (hi, ">")):
            n = int_keyword(schema, key)
            if n is not None:
                out.append(f"{pad}if len({v}) {op} {n}: return False")
        return pad

    def emit_array(self, schema: dict, v: str, ind: int, out: list[str]) -> None:
        pad = self.emit_sized(schema, v, ind, out, "list", "minItems", "maxItems")
        if schema.get("uniqueItems") is True:
            out.append(f"{pad}if not _uniq({v}): return False")
        prefix = schema.get("prefixItems", [])
        for i, sub in enumerate(prefix):
            y = self.var()
            out.append(f"{pad}if len({v}) > {i}:")
            out.append(f"{pad}    {y} = {v}[{i}]")
            self.emit(sub, y, ind + 2, out)
        if "items" in schema and schema["items"] is not True:
            y = self.var()
            source = v if not prefix else f"{v}[{len(prefix)}:]"
            out.append(f"{pad}for {y} in {source}:")
            self.emit_block(schema["items"], y, ind + 2, out)

    def emit_string(self, schema: dict, v: str, ind: int, out: list[str]) -> None:
        pad = self.emit_sized(schema, v, ind, out, "str", "minLength", "maxLength")
        if "pattern" in schema:
            try:
                search = re.compile(schema["pattern"]).search
            except (re.error, TypeError) as exc:
                raise Unsupported("bad pattern") from exc
            out.append(f"{pad}if {self.const(search)}({v}) is None: return False")


def compile_fast(schema: Any, validator_cls: type, format_checker: Any) -> Check | None:
    """Compile ``schema`` to a yes/no check, or ``None`` when the fast path cannot be exact.

    Only draft 2020-12 is compiled (``items`` and bounds differ in older drafts), and only
    schemas without base-URI changes (``$id``, anchors, dynamic refs), so every ``$ref`` is a
    JSON pointer into the one document. A subschema that names another dialect with its own
    ``$schema`` (jsonschema validates it with that draft's rules: draft-04 ``type: integer``
    refuses ``1.0``, draft-07 ``dependencies``, draft-03 ``divisibleBy``) makes the whole schema
    go to jsonschema.
    """
    if validator_cls is not Draft202012Validator or mentions(schema, ID_KEYWORDS):
        return None
    if other_dialect(schema, validator_cls):
        return None
    gen = _Gen(schema, format_checker)
    try:
        entry = gen.function(schema)
        source = "\n".join(line for body in gen.funcs for line in body)
        exec(compile(source, "<schemaops-fastcheck>", "exec"), gen.ns)  # noqa: S102
    except (
        Unsupported,
        RecursionError,
        ValueError,
        IndexError,
        TypeError,
        SyntaxError,
        MemoryError,
    ):
        return None
    check = gen.ns[entry]
    check.source = source  # type: ignore[attr-defined]
    return check
