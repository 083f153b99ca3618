"""The rewrite passes of ``lower``: one schema in, a served schema plus a residual out.

``lower_schema(original, caps, backend)`` walks the original (registry-bundled) schema once,
depth first, keeping every node's JSON pointer in the original so that each keyword moved to
the residual names where it came from. Per node, after its children are lowered:

1. ``$ref`` with sibling keywords, where the backend ignores the siblings (xgrammar): the
   target is inlined and merged with the siblings (exact, ``schemaops.lower.merge``); where
   the backend cannot follow ``$ref`` at all, every non-recursive ref is inlined. A ref that
   cannot be inlined keeps only the ``$ref``: its siblings move to the residual (what the
   backend serves is the ``$ref`` alone, a widening).
2. ``allOf`` where the backend does not enforce it: the branches are merged into the node
   (exact); a branch that does not merge exactly becomes a residual rule.
3. ``if``/``then``/``else`` where the backend does not enforce it: when the condition tests
   one property against constants and the node lists that property's finite domain
   (``enum``/``const``/``boolean``) and is an object schema, the node becomes an ``anyOf`` of
   the two branches with the domain split (exact); otherwise a residual rule.
   Then required properties that ``properties`` does not list are listed (with the schema
   that applies to them anyway) where the backend only produces listed ones (exact).
4. ``enum``/``const`` present: values that fail the node's other keywords are removed, after
   which keywords the backend ignores are implied by the enum and dropped (exact).
5. ``integer`` bounds/``multipleOf`` the backend ignores (outlines): a range of at most
   ``MAX_ENUM`` integers becomes an ``enum`` in its place (exact); a larger or open range
   becomes a residual rule.
6. ``format`` the backend does not enforce at ``schemaops.formats``' strictness: the
   equivalent ``pattern`` from ``schemaops.lower.patterns`` (exact for date, time,
   date-time, email; narrower for uuid, reported); a format without a pattern, or a node
   that already has a ``pattern``, moves the format to the residual.
7. An unanchored ``pattern`` where the backend reads patterns as full matches: rewritten to
   the anchored pattern with JSON Schema's search meaning (exact; on a backend whose
   wildcard would match the closing quote, a JSON-string wildcard, reported as narrower).
   Where the backend keeps only one of a string's pattern and its length (outlines), the
   length moves to the residual.
8. ``oneOf`` the backend refuses: ``anyOf`` (exact when the branches are disjoint, else
   exclusivity is a residual rule).
   Keywords next to an ``anyOf``/``oneOf`` the backend ignores there are merged into every
   branch (exact).
9. Any remaining keyword whose probe says the backend ignores or refuses it (``uniqueItems``,
   ``contains``, ``minProperties``, ``not``, number bounds, ...): removed from the served
   schema and moved to the residual with the reason.
10. A subschema (not the root) that accepts any value, where the backend does not serve it
   as such (outlines refuses one with only annotations or keywords JSON Schema does not know,
   ``{"description": ...}``, ``{"instanceof": ...}`` or what the passes above left of
   ``{"format": "hostname"}``, and its ``{}`` produces no value in the walk): served as an
   ``anyOf`` of the six JSON types (exact). Kept when it holds an ``$id``, an anchor or
   another ``$`` keyword.

``relax`` (``schemaops.lower.relax``: the ladder ``lower_registry`` climbs when the served
schema does not compile within the cap) maps ladder steps to the reason they were taken: the
keywords of those steps are moved to the residual with that reason (length and item bounds and
patterns right after the enum filter; formats and integer ranges instead of being rewritten
into a pattern or an enum).

Each rewrite declares its effect (``schemaops.lower.model``: exact, widens with a residual
rule, narrows naming what it wrote); the label follows from them. ``lower_schema`` serves a
schema with embedded resources, anchors or dynamic references as it is (``unlowerable``),
and moves ``unevaluated*`` to the residual once it rewrites a schema that has them.

The insides of ``not``, ``if`` and ``contains`` are never rewritten: dropping a constraint
there would tighten the schema, not relax it. Key order is kept everywhere (property order is
generation order); a replacement keyword takes the place of the one it replaces.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from schemaops.lower.keywords import (
    LISTS,
    MAPS,
    PROBE_OF,
    SIBLINGS,
    SINGLE,
    VERB,
    capability,
)
from schemaops.lower.merge import ANNOTATIONS, NotExact, merge
from schemaops.lower.model import EXACT, NARROWS, WIDENS, Lowered, Rewrite
from schemaops.lower.passes_composition import CompositionPasses
from schemaops.lower.passes_values import ValuePasses
from schemaops.lower.probes import ENFORCED
from schemaops.lower.residual import ResidualRule, pointer
from schemaops.lower.shape import (
    UNEVALUATED,
    mentions,
    misspelled,
    old_draft_reading,
    unlowerable,
)
from schemaops.strings import MISSING, ref_parts, resolve_pointer

#: schema nodes an inlined $ref may add in total before inlining stops (no blow-up)
MAX_INLINE_NODES = 20_000


class _Lowerer(CompositionPasses, ValuePasses):
    def __init__(
        self, root: Any, caps: dict[str, str], backend: str, relax: dict[str, str] | None = None
    ) -> None:
        self.root = root
        self.caps = caps
        self.backend = backend
        self.relax = dict(relax or {})
        self.rewrites: list[Rewrite] = []
        self.residual: list[ResidualRule] = []
        self.memo: dict[str, Any] = {}
        self.inlining: list[str] = []
        self.inlined_nodes = 0
        #: node pointer -> keyword -> the original pointers a merge brought it from
        self.origin: dict[str, dict[str, list[str]]] = {}
        #: set when ``unevaluated*`` keywords move to the residual (see ``lower_schema``)
        self.unevaluated_why = ""
        # a wildcard in a pattern must not match a JSON quote on this backend (see patterns)
        self.json_safe = not self.enforced("pattern.anychar")

    # ---- bookkeeping -------------------------------------------------------------------
    def enforced(self, key: str) -> bool:
        return capability(self.caps, key) == ENFORCED

    def why(self, key: str, kw: str) -> str:
        cap = capability(self.caps, key)
        return f"{self.backend} {VERB.get(cap, cap)}: {kw} (probe {key})"

    def move(self, out: dict, parts: list, kw: str, reason: str, **extra: Any) -> None:
        """Remove ``kw`` from the served node and keep it as a residual rule."""
        value = out.pop(kw)
        ptr = pointer([*parts, kw])
        # a keyword merged in from an allOf branch or a $ref target covers where it came from
        came = self.origin.get(pointer(parts), {}).get(kw, [])
        covers = list(dict.fromkeys([*(extra.get("covers") or [ptr]), *came]))
        self.widen(ptr, kw, value, reason, covers)

    def widen(self, ptr: str, kw: str, value: Any, reason: str, covers: list | None = None) -> None:
        """A widening and the residual rule that covers it, always together (``model``)."""
        self.residual.append(ResidualRule(ptr, kw, value, reason, covers or []))
        self.rewrites.append(Rewrite(ptr, "residual", WIDENS, reason))

    def note(
        self, parts: list, rule: str, detail: str, narrows_to: dict[str, Any] | None = None
    ) -> None:
        """An exact rewrite, or (``narrows_to``: what it wrote) a narrowing one."""
        effect = NARROWS if narrows_to else EXACT
        self.rewrites.append(Rewrite(pointer(parts), rule, effect, detail, narrows_to))

    # ---- refs --------------------------------------------------------------------------
    def target(self, ref: str) -> tuple[Any, list[str]] | None:
        """The lowered schema a local ``$ref`` points to, and its pointer parts."""
        parts = ref_parts(ref)
        node = MISSING if parts is None else resolve_pointer(self.root, parts, MISSING)
        if parts is None or node is MISSING:
            return None
        key = pointer(parts)
        if key in self.inlining:
            return None  # recursive: cannot be inlined
        if key not in self.memo:
            self.inlining.append(key)
            try:
                self.memo[key] = self.node(node, list(parts))
            finally:
                self.inlining.pop()
        return self.memo[key], list(parts)

    def inline(self, ref: str) -> Any | None:
        """A copy of the lowered target of ``ref`` (None: recursive, remote or too big)."""
        found = self.target(ref)
        if found is None:
            return None
        text = json.dumps(found[0])
        self.inlined_nodes += text.count("{")
        if self.inlined_nodes > MAX_INLINE_NODES:
            return None
        return json.loads(text)

    # ---- the walk ----------------------------------------------------------------------
    def node(self, schema: Any, parts: list) -> Any:
        if not isinstance(schema, dict):
            return schema
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in MAPS and isinstance(value, dict):
                if key in ("$defs", "definitions"):
                    out[key] = {}
                    for name, sub in value.items():
                        out[key][name] = self.lowered_def([*parts, key, name], sub)
                else:
                    out[key] = {n: self.node(s, [*parts, key, n]) for n, s in value.items()}
            elif key in LISTS and isinstance(value, list):
                out[key] = [self.node(s, [*parts, key, i]) for i, s in enumerate(value)]
            elif key in SINGLE and isinstance(value, dict):
                out[key] = self.node(value, [*parts, key])
            else:
                out[key] = copy.deepcopy(value)  # not, if, contains, and plain values
        if self.unevaluated_why:
            for kw in UNEVALUATED:
                if kw in out:
                    self.move(out, parts, kw, self.unevaluated_why)
        for rewrite in (  # the passes in order (module docstring)
            self.refs,
            self.all_of,
            self.if_then_else,
            self.required_unlisted,
            self.enum_filter,
            self.relaxed,
            self.integer_range,
            self.format,
            self.pattern,
            self.length_with_pattern,
            self.one_of,
            self.distribute,
            self.drops,
            self.any_value,
        ):
            rewrite(out, parts)
        return out

    def lowered_def(self, parts: list, sub: Any) -> Any:
        key = pointer(parts)
        if key not in self.memo:
            self.inlining.append(key)
            try:
                self.memo[key] = self.node(sub, parts)
            finally:
                self.inlining.pop()
        return copy.deepcopy(self.memo[key])

    # ---- passes ------------------------------------------------------------------------
    def refs(self, out: dict, parts: list) -> None:
        ref = out.get("$ref")
        if not isinstance(ref, str):
            return
        siblings = {k: v for k, v in out.items() if k != "$ref" and k not in ANNOTATIONS}
        if self.enforced("$ref") and (not siblings or self.enforced("$ref.siblings")):
            return
        target = self.inline(ref)
        if target is None:
            self.ref_siblings(out, parts, f"{ref} cannot be inlined (recursive, remote or big)")
            return
        rest = {k: v for k, v in out.items() if k != "$ref"}
        try:
            merged = merge(rest, target) if rest else target
            if not isinstance(merged, dict):  # false: a backend has no spelling for it
                raise NotExact("accepts nothing")
        except NotExact as exc:
            self.ref_siblings(out, parts, f"{ref} does not merge with its siblings: {exc}")
            return
        came = self.origin.setdefault(pointer(parts), {})
        for k in target if isinstance(target, dict) else ():
            came.setdefault(k, []).append(pointer([*(ref_parts(ref) or []), k]))
        out.clear()
        out.update(merged)
        self.note(parts, "inline $ref", f"{ref} inlined (the backend ignores siblings)")

    def ref_siblings(self, out: dict, parts: list, why: str) -> None:
        """A kept ``$ref`` whose siblings the backend ignores: what the backend serves is the
        ``$ref`` alone, a widening, so each sibling keyword moves to the residual."""
        if self.enforced("$ref.siblings"):
            return
        for kw in [k for k in out if k in SIBLINGS and k != "$ref"]:
            self.move(out, parts, kw, f"{self.why('$ref.siblings', kw + ' beside $ref')}; {why}")


_NAMED = (
    re.compile(r"Unimplemented keys: \[([^\]]*)\]"),
    re.compile(r"(\w+) constraints are not supported"),
    re.compile(r"keyword ['\"]?(\w+)['\"]? is not supported"),
)


def refine(caps: dict[str, str], error: str) -> dict[str, str] | None:
    """``caps`` plus the keywords a compile error names as unsupported (``refused``), or None
    when the error names none that are not already marked. This is how a keyword no probe
    covers (llguidance's ``oneOf`` over overlapping branches, ``dependencies``) is learnt
    from the library itself."""
    found: list[str] = []
    for pat in _NAMED:
        for m in pat.finditer(error or ""):
            found += [p.strip().strip("\"'") for p in m.group(1).split(",") if p.strip()]
    new = dict(caps)
    for kw in found:
        key = PROBE_OF.get(kw, f"keyword.{kw}")
        if new.get(key) != "refused":
            new[key] = "refused"
    return new if new != caps else None


def lower_schema(
    original: Any, caps: dict[str, str], backend: str, relax: dict[str, str] | None = None
) -> Lowered:
    """Lower one (bundled) schema for ``backend`` given its probed capabilities.

    ``relax``: {ladder step key: reason} (``schemaops.lower.relax``), the steps taken because
    the served schema did not compile within the cap; empty for the first lowering.

    Two kinds of schema are served as they are (no rewrite; the compile and the walk decide):
    one with embedded resources or dynamic references (``unlowerable``: moving a node would
    change what a reference resolves to, and residual locations could not be traced). And
    ``unevaluatedProperties``/``unevaluatedItems`` see the annotations of every applicator
    around them, which any rewrite changes: once a schema that has them is rewritten at all,
    they move to the residual (a widening the application checks)."""
    notes = misspelled(original)
    why = unlowerable(original) or old_draft_reading(original)
    if why:
        notes.append(f"served as it is: {why}")
        return Lowered(backend, original, copy.deepcopy(original), notes=notes)
    root = copy.deepcopy(original)
    lw = _Lowerer(root, caps, backend, relax)
    served = lw.node(root, [])
    if lw.rewrites and mentions(original, UNEVALUATED):
        root = copy.deepcopy(original)
        lw = _Lowerer(root, caps, backend, relax)
        lw.unevaluated_why = (
            "unevaluated* sees the annotations of every keyword around it, and lower rewrote "
            "this schema: the application checks it"
        )
        served = lw.node(root, [])
    lost = sorted(set(dangling_refs(served)) - set(dangling_refs(original)))
    if lost:  # a rewrite removed what a $ref points into: the served schema would be broken
        notes.append(
            f"served as it is: a rewrite removed what {lost[0]} points to (a $ref into a"
            " subschema the passes replace)"
        )
        return Lowered(backend, original, copy.deepcopy(original), notes=notes)
    return Lowered(backend, original, served, lw.rewrites, lw.residual, notes)


def dangling_refs(root: Any) -> list[str]:
    """The local pointer refs (``#/...``) in ``root`` that resolve to nothing in it."""
    out: list[str] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#"):
                parts = ref_parts(ref)
                if parts is not None and resolve_pointer(root, parts, MISSING) is MISSING:
                    out.append(ref)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out
