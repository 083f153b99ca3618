"""The types and the schema walker every hosted-provider table shares.

A provider table (``openai.py``, ``anthropic.py``, ``gemini.py``) is data: its rules, each with
the URL it was read from and the date, plus one ``judge`` function that walks a schema and
returns ``Finding``s naming a rule and a JSON pointer. This module holds what they share: the
verdict types, the walk over every subschema, nesting depth, ``$ref`` cycles and the keyword
sets of JSON Schema, so that the three tables read alike and each stays the one place to update
when a provider changes its documentation.

Verdicts, per (schema, target):

- ``refused``: a rule whose effect is ``refused`` fired: the API answers 400 at request time;
- ``unproven``: no ``refused`` rule fired, but a ``restricted`` one did: the provider's page
  restricts what the schema does without saying what the API does with it (400, or served
  with the construct dropped or unrolled), and no observed behaviour settles it. The finding
  names the restriction; the gate does not fail on it (a false 400 is as wrong as a false
  accept), and the report lists it apart from the residual;
- ``accepted_ignored``: only ``ignored`` rules fired: the request is served, but the listed
  keywords are dropped or not documented as enforced, so outputs can break them (the residual
  to re-check after the call);
- ``accepted``: nothing fired.

Hostile input gets a bounded answer: the walk is iterative (no recursion limit), ``$ref``
chains are followed through a visited set, and the registry already bounds nesting depth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from schemaops.strings import pointer, ref_parts, resolve_pointer

Effect = Literal["refused", "restricted", "ignored"]
VerdictName = Literal["accepted", "accepted_ignored", "accepted_narrowed", "unproven", "refused"]
#: every verdict, in the order of the report's counts
VERDICTS: tuple[VerdictName, ...] = (
    "accepted",
    "accepted_ignored",
    "accepted_narrowed",
    "unproven",
    "refused",
)

#: Keywords whose value is a map of name -> subschema.
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
#: Keywords whose value is one subschema.
SCHEMA_ONE = (
    "items",
    "additionalProperties",
    "additionalItems",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)
#: Keywords whose value is a list of subschemas.
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems", "items")
#: Where definitions live: a subschema under these is reached only through a ``$ref``.
DEFS = ("$defs", "definitions")
#: Keywords that constrain nothing (annotations, extensions): dropping one loses nothing.
NON_CONSTRAINING = frozenset(
    {
        "title",
        "description",
        "$comment",
        "$schema",
        "$id",
        "$anchor",
        "examples",
        "default",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)


def constrains(keyword: str) -> bool:
    """Whether dropping ``keyword`` could let an output through that the schema refuses
    (``x-`` extensions and annotations constrain nothing)."""
    return keyword not in NON_CONSTRAINING and not keyword.startswith("x-")


@dataclass(frozen=True)
class Rule:
    """One documented rule of a provider: what it says, what the API does, where it is read."""

    id: str
    summary: str
    effect: Effect
    source: str
    read: str
    note: str = ""

    def to_dict(self) -> dict[str, str]:
        d = {
            "id": self.id,
            "summary": self.summary,
            "effect": self.effect,
            "source": self.source,
            "read": self.read,
        }
        if self.note:
            d["note"] = self.note
        return d


@dataclass(frozen=True)
class Finding:
    """A rule that fired on one schema, at one JSON pointer."""

    rule: Rule
    pointer: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {
            "rule": self.rule.id,
            "effect": self.rule.effect,
            "pointer": self.pointer,
            "message": self.message,
            "source": self.rule.source,
        }


@dataclass
class Table:
    """A provider's rules, versioned by the date its pages were read, and its judge."""

    target: str
    version: str
    api: str
    rules: dict[str, Rule]
    judge: Callable[[Any], list[Finding]] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "version": self.version,
            "api": self.api,
            "rules": [r.to_dict() for r in self.rules.values()],
        }


@dataclass
class TargetVerdict:
    """The verdict on one schema for one provider, with what decided it."""

    schema: str
    target: str
    findings: list[Finding]
    #: ``ignored`` findings whose drop refuses valid outputs (``providers.narrowing``, the
    #: judgement ``lower --target`` makes too): no output can break them, so not residual
    narrowed: list[Finding] = field(default_factory=list)

    @property
    def refused(self) -> list[Finding]:
        return [f for f in self.findings if f.rule.effect == "refused"]

    @property
    def residual(self) -> list[Finding]:
        return [f for f in self.findings if f.rule.effect == "ignored" and f not in self.narrowed]

    @property
    def unproven(self) -> list[Finding]:
        """Findings of ``restricted`` rules: what the API does with them is not known."""
        return [f for f in self.findings if f.rule.effect == "restricted"]

    @property
    def verdict(self) -> VerdictName:
        if self.refused:
            return "refused"
        if self.unproven:
            return "unproven"
        if self.narrowed:
            return "accepted_narrowed"
        return "accepted_ignored" if self.residual else "accepted"

    @property
    def passed(self) -> bool:
        return self.verdict != "refused"

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "target": self.target,
            "verdict": self.verdict,
            "passed": self.passed,
            "refused": [f.to_dict() for f in self.refused],
            "unproven": [f.to_dict() for f in self.unproven],
            "narrowed": [f.to_dict() for f in self.narrowed],
            "residual": [f.to_dict() for f in self.residual],
        }


@dataclass
class Node:
    """One subschema met by ``walk``: where it is and what it is."""

    parts: tuple[str, ...]
    schema: dict[str, Any]
    #: positions in ``parts`` that are a ``$defs``/``definitions`` keyword
    defs_at: tuple[int, ...] = ()

    @property
    def pointer(self) -> str:
        return pointer(self.parts)

    def at(self, *more: Any) -> str:
        """The pointer of a keyword (or deeper) under this node."""
        return pointer((*self.parts, *more))


def children(node: Node) -> Iterator[Node]:
    """The subschemas directly under ``node`` (objects only; boolean schemas have none)."""
    s = node.schema
    for kw in SCHEMA_MAPS:
        m = s.get(kw)
        if isinstance(m, dict):
            marks = (*node.defs_at, len(node.parts)) if kw in DEFS else node.defs_at
            for name, sub in m.items():
                if isinstance(sub, dict):
                    yield Node((*node.parts, kw, str(name)), sub, marks)
    for kw in SCHEMA_ONE:
        sub = s.get(kw)
        if isinstance(sub, dict):
            yield Node((*node.parts, kw), sub, node.defs_at)
    for kw in SCHEMA_LISTS:
        seq = s.get(kw)
        if isinstance(seq, list):
            for i, sub in enumerate(seq):
                if isinstance(sub, dict):
                    yield Node((*node.parts, kw, str(i)), sub, node.defs_at)


def walk(root: Any) -> list[Node]:
    """Every object subschema of ``root`` in document order, each once (iterative)."""
    if not isinstance(root, dict):
        return []
    out: list[Node] = []
    stack = [Node((), root)]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(reversed(list(children(node))))
    return out


def is_object_schema(s: dict[str, Any]) -> bool:
    """An object schema: ``type`` names ``object`` or it lists ``properties``."""
    t = s.get("type")
    named = t == "object" or (isinstance(t, list) and "object" in t)
    return named or isinstance(s.get("properties"), dict)


def open_object(rule: Rule, node: Any, s: dict[str, Any]) -> Finding | None:
    """A ``rule`` finding when ``s`` is an object schema without ``additionalProperties:
    false`` (OpenAI and Anthropic both require it on every object), at the keyword when it
    is there with another value, at the object when it is missing."""
    if not is_object_schema(s) or s.get("additionalProperties") is False:
        return None
    if "additionalProperties" in s:
        return Finding(rule, node.at("additionalProperties"), "additionalProperties is not false")
    return Finding(rule, node.pointer, "no additionalProperties")


def is_array_schema(s: dict[str, Any]) -> bool:
    t = s.get("type")
    return t == "array" or (isinstance(t, list) and "array" in t) or "items" in s


def nesting(root: Any, *, arrays: bool = True) -> tuple[int, str]:
    """The deepest nesting of object (and, with ``arrays``, array) schemas, ``$ref``s followed
    (a cycle is not followed twice), and the pointer where it is reached.

    Iterative over (node, depth, refs on the path): each ``$ref`` target is entered at most
    once per path, so a recursive schema ends; the work is bounded by the path count the
    registry's size limits allow, and by ``limit`` visits as a backstop."""
    if not isinstance(root, dict):
        return 0, ""
    best, where = 0, ""
    stack: list[tuple[Node, int, frozenset[str]]] = [(Node((), root), 0, frozenset())]
    visits, limit = 0, 200_000
    while stack and visits < limit:
        visits += 1
        node, depth, seen = stack.pop()
        s = node.schema
        level = is_object_schema(s) or (arrays and is_array_schema(s))
        d = depth + 1 if level else depth
        if d > best:
            best, where = d, node.pointer
        ref = s.get("$ref")
        if isinstance(ref, str) and ref not in seen:
            target = resolve_ref_node(root, ref)
            if target is not None:
                stack.append((Node(target.parts, target.schema), d, seen | {ref}))
        for c in children(node):
            if c.parts[len(node.parts)] in DEFS:
                continue  # a definition counts where it is used, not where it is kept
            stack.append((c, d, seen))
    return best, where


def resolve_ref_node(root: Any, ref: str) -> Node | None:
    """The subschema a local ``$ref`` points to, as a Node; None for another resource, a
    missing target or a target that is not an object schema."""
    parts = ref_parts(ref)
    if parts is None:
        return None
    target = resolve_pointer(root, parts)
    return Node(tuple(parts), target) if isinstance(target, dict) else None


@dataclass(frozen=True)
class Cycle:
    """A ``$ref`` cycle: the ref that closes it, and every ref on it (pointers)."""

    closing: str
    members: tuple[tuple[str, ...], ...]


def ref_cycles(root: Any, nodes: list[Node] | None = None) -> list[Cycle]:
    """The ``$ref`` cycles reachable from the root: a recursive schema.

    A ref's target is entered; the refs reachable from it are those inside its subtree that
    are not kept under a nested ``$defs`` (reached only through another ref). Depth-first,
    iterative, each ref finished once."""
    nodes = walk(root) if nodes is None else nodes
    refs = [n for n in nodes if isinstance(n.schema.get("$ref"), str)]

    # prefix -> the refs reached on entering the subschema there: every ref under it that is
    # not kept in a nested $defs (index built once: linear in refs times their depth).
    index: dict[tuple[str, ...], list[Node]] = {}
    for r in refs:
        first = max(r.defs_at) + 1 if r.defs_at else 0
        for k in range(first, len(r.parts) + 1):
            index.setdefault(r.parts[:k], []).append(r)

    def reach(prefix: tuple[str, ...]) -> list[Node]:
        return index.get(prefix, [])

    def target_parts(r: Node) -> tuple[str, ...] | None:
        t = resolve_ref_node(root, r.schema["$ref"])
        return None if t is None else t.parts

    cycles: list[Cycle] = []
    state: dict[tuple[str, ...], int] = {}  # 1 on the path, 2 finished
    path: list[Node] = []
    stack: list[Iterator[Node]] = [iter(reach(()))]
    while stack:
        nxt = next(stack[-1], None)
        if nxt is None:
            stack.pop()
            if path:
                state[path.pop().parts] = 2
            continue
        st = state.get(nxt.parts, 0)
        if st == 2:
            continue
        if st == 1:
            start = next(i for i, p in enumerate(path) if p.parts == nxt.parts)
            members = tuple(p.parts for p in path[start:])
            cycles.append(Cycle(path[-1].pointer, members))
            continue
        tp = target_parts(nxt)
        state[nxt.parts] = 1
        path.append(nxt)
        stack.append(iter(reach(tp) if tp is not None else []))
    return cycles


def optional_step(root: Any, ref_pointer_parts: tuple[str, ...]) -> bool:
    """Whether the path to a ref passes through a property its object does not require."""
    for i in range(len(ref_pointer_parts) - 1):
        if ref_pointer_parts[i] != "properties":
            continue
        obj = resolve_pointer(root, ref_pointer_parts[:i])
        name = ref_pointer_parts[i + 1]
        req = obj.get("required") if isinstance(obj, dict) else None
        if not (isinstance(req, list) and name in req):
            return True
    return False


def verdicts(table: Table, schema_name: str, findings: list[Finding]) -> TargetVerdict:
    """A TargetVerdict with findings in the table's rule order, then pointer order: the
    structural rules (root, required, additionalProperties) come first in every table, and
    the report is stable from run to run."""
    order = {rid: i for i, rid in enumerate(table.rules)}
    ordered = sorted(findings, key=lambda f: (order.get(f.rule.id, len(order)), f.pointer))
    return TargetVerdict(schema_name, table.target, ordered)
