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
import math
import re
from typing import Any

from schemaops.compare.instances import validator
from schemaops.lower.merge import ANNOTATIONS, VOCABULARY, NotExact, json_equal, merge
from schemaops.lower.model import EXACT, NARROWS, WIDENS, Lowered, Rewrite, under
from schemaops.lower.patterns import JSON_ANY_NARROWS, anchored_search, format_pattern, is_anchored
from schemaops.lower.probes import ENFORCED
from schemaops.lower.relax import LADDER
from schemaops.lower.residual import ResidualRule, pointer
from schemaops.lower.shape import UNEVALUATED, mentions, misspelled, unlowerable
from schemaops.strings import MISSING, ref_parts, resolve_pointer

#: the largest integer range (or multipleOf set) turned into an enum
MAX_ENUM = 256
#: schema nodes an inlined $ref may add in total before inlining stops (no blow-up)
MAX_INLINE_NODES = 20_000

# The subschemas the rewrite descends into: not registry/refs.py's list (every subschema
# keyword) on purpose, since the insides of not, if and contains are never rewritten.
_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SINGLE = (
    "items",
    "additionalProperties",
    "then",
    "else",
    "propertyNames",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
#: keywords that move into union branches (validation, not annotations or $defs)
_SIBLINGS = VOCABULARY - {"$defs", "definitions"}
_NUMERIC = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_PROBE_OF = {
    "minLength": "string.minLength",
    "maxLength": "string.maxLength",
    "pattern": "pattern.anchored",
    "minItems": "array.minItems",
    "maxItems": "array.maxItems",
    "uniqueItems": "array.uniqueItems",
    "contains": "array.contains",
    "minContains": "array.contains",
    "maxContains": "array.contains",
    "minProperties": "object.minProperties",
    "maxProperties": "object.maxProperties",
    "dependentRequired": "object.dependentRequired",
    "not": "not",
    "oneOf": "oneOf",
}
_VERB = {
    "ignored": "ignores it (an invalid probe instance walked to a stop)",
    "refused": "refuses it (the probe schema does not compile)",
    "narrower": "is stricter than JSON Schema (a valid probe instance cannot be produced)",
}


def _cap(caps: dict[str, str], key: str) -> str:
    return caps.get(key, "refused")


class _Lowerer:
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
        return _cap(self.caps, key) == ENFORCED

    def why(self, key: str, kw: str) -> str:
        cap = _cap(self.caps, key)
        return f"{self.backend} {_VERB.get(cap, cap)}: {kw} (probe {key})"

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
            if key in _MAPS and isinstance(value, dict):
                if key in ("$defs", "definitions"):
                    out[key] = {}
                    for name, sub in value.items():
                        out[key][name] = self.lowered_def([*parts, key, name], sub)
                else:
                    out[key] = {n: self.node(s, [*parts, key, n]) for n, s in value.items()}
            elif key in _LISTS and isinstance(value, list):
                out[key] = [self.node(s, [*parts, key, i]) for i, s in enumerate(value)]
            elif key in _SINGLE and isinstance(value, dict):
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
        for kw in [k for k in out if k in _SIBLINGS and k != "$ref"]:
            self.move(out, parts, kw, f"{self.why('$ref.siblings', kw + ' beside $ref')}; {why}")

    def all_of(self, out: dict, parts: list) -> None:
        branches = out.get("allOf")
        if not isinstance(branches, list) or self.enforced("allOf"):
            return
        base = {k: v for k, v in out.items() if k != "allOf"}
        merged_any = False
        if any(b is False for b in branches):  # accepts nothing: the allOf is the app's
            self.move(out, parts, "allOf", f"a branch is false; {self.why('allOf', 'allOf')}")
            return
        came = self.origin.setdefault(pointer(parts), {})
        for i, branch in enumerate(branches):
            for k in branch if isinstance(branch, dict) else ():
                came.setdefault(k, []).append(pointer([*parts, "allOf", i, k]))
            if isinstance(branch, dict) and isinstance(branch.get("$ref"), str):
                target = self.inline(branch["$ref"])
                if target is not None:
                    rest = {k: v for k, v in branch.items() if k != "$ref"}
                    try:
                        branch = merge(rest, target) if rest else target
                    except NotExact:
                        pass
            try:
                joined = merge(base, branch)
                if joined is False:
                    raise NotExact("the branches accept nothing together")
                base = joined
                merged_any = True
            except NotExact as exc:
                ptr = pointer([*parts, "allOf", i])
                reason = f"allOf branch not merged exactly ({exc}); {self.why('allOf', 'allOf')}"
                self.widen(ptr, "allOf", branch, reason)
        out.clear()
        out.update(base)
        if merged_any:
            self.note(parts, "flatten allOf", "branches merged into one schema")

    def if_then_else(self, out: dict, parts: list) -> None:
        if "if" not in out or self.enforced("if"):
            return
        cond = out.get("if")
        then = out.get("then", True)
        other = out.get("else", True)
        base = {k: v for k, v in out.items() if k not in ("if", "then", "else")}
        try:
            branches = self._split(base, cond, then, other)
        except NotExact as exc:
            reason = f"if/then/else not rewritten exactly ({exc}); {self.why('if', 'if')}"
            covers = [pointer([*parts, k]) for k in ("if", "then", "else") if k in out]
            value = {k: out[k] for k in ("if", "then", "else") if k in out}
            for k in ("then", "else"):
                out.pop(k, None)
            out.pop("if")
            ptr = pointer([*parts, "if"])
            self.widen(ptr, "if", value, reason, covers)
            return
        keep = {k: v for k, v in base.items() if k not in _SIBLINGS}
        out.clear()
        out.update(keep)
        out["anyOf"] = branches
        self.note(parts, "if/then/else -> anyOf", "condition split on a finite domain")

    def _split(self, base: dict, cond: Any, then: Any, other: Any) -> list[Any]:
        if not isinstance(cond, dict):
            raise NotExact("the condition is not a schema object")
        if base.get("type") != "object":
            raise NotExact("the node is not an object schema")
        extra = set(cond) - {"properties", "required", "type"} - ANNOTATIONS
        props = cond.get("properties")
        if extra or not isinstance(props, dict) or len(props) != 1:
            raise NotExact("the condition does not test exactly one property")
        if cond.get("type", "object") != "object":
            raise NotExact("the condition tests a type")
        ((k, sub),) = props.items()
        req = cond.get("required", [])
        if req not in ([], [k]):
            raise NotExact("the condition requires other properties")
        domain_schema = (base.get("properties") or {}).get(k)
        domain = _domain(domain_schema)
        if domain is None:
            raise NotExact(f"property {k!r} has no finite domain (enum, const or boolean)")
        try:
            check = validator(sub)
            holds = [bool(check.is_valid(v)) for v in domain]
        except Exception as exc:
            raise NotExact(f"the condition cannot be evaluated on its own ({exc})"[:200]) from None
        yes = [v for v, h in zip(domain, holds, strict=True) if h]
        no = [v for v, h in zip(domain, holds, strict=True) if not h]
        k_required = k in (base.get("required") or [])
        cond_req = k in req
        # the condition holds when k is present with a value in `yes`, or k is absent and the
        # condition does not require it
        then_disc: dict[str, Any] = {"properties": {k: {"enum": yes}}}
        else_disc: dict[str, Any] = {"properties": {k: {"enum": no}}}
        if cond_req:
            then_disc["required"] = [k]
        else:
            else_disc["required"] = [k]
        out = []
        for values, disc, branch in ((yes, then_disc, then), (no, else_disc, other)):
            absent_ok = "required" not in disc and not k_required
            if not values and not absent_ok:
                continue  # this branch can never apply
            if not values:
                raise NotExact(f"'{k} absent' cannot be expressed without not")
            core = {k: v for k, v in base.items() if k in _SIBLINGS}
            joined = merge(merge(core, branch), disc)
            if joined is not False:  # a branch that accepts nothing is left out
                out.append(joined)
        if not out:
            raise NotExact("no branch can apply")
        return out

    def required_unlisted(self, out: dict, parts: list) -> None:
        """List required properties that ``properties`` does not, with the schema that
        applies to them anyway (``additionalProperties``, else ``{}``): exact, and a
        backend that only produces listed properties (xgrammar) can then write them."""
        req = out.get("required")
        props = out.get("properties")
        if not isinstance(req, list) or self.enforced("object.required_unlisted"):
            return
        if props is not None and not isinstance(props, dict):
            return
        ap = out.get("additionalProperties", True)
        patterns = out.get("patternProperties") or {}
        missing = [k for k in req if isinstance(k, str) and k not in (props or {})]
        if not missing or ap is False:
            return
        added = []
        new_props = dict(props or {})
        for k in missing:
            if any(_search(p, k) for p in patterns):
                sub: Any = {}  # patternProperties still apply to a listed property
            elif isinstance(ap, dict):
                sub = copy.deepcopy(ap)
            else:
                sub = {}
            new_props[k] = sub
            added.append(k)
        if props is None:
            rebuilt: dict[str, Any] = {}
            for key, v in out.items():
                if key == "required":
                    rebuilt["properties"] = new_props
                rebuilt[key] = v
            out.clear()
            out.update(rebuilt)
        else:
            out["properties"] = new_props
        self.note(parts, "list required properties", f"added {', '.join(added)}")

    def enum_filter(self, out: dict, parts: list) -> None:
        """``enum`` and ``const`` alike (a ``const`` is a one-value ``enum``): values the
        node's other keywords forbid are removed, then keywords every remaining value
        satisfies are implied and dropped. Implied only when checked: a ``const`` that fails
        its ``format`` keeps the format (a node that accepts nothing is left as it is)."""
        key = "enum" if isinstance(out.get("enum"), list) else "const" if "const" in out else None
        if key is None:
            return
        values = list(out["enum"]) if key == "enum" else [out["const"]]
        others = {
            k: v for k, v in out.items() if k not in ("enum", "const") and k not in ANNOTATIONS
        }
        if not others:
            return
        try:
            check = validator(others)
            kept = [v for v in values if check.is_valid(v)]
        except Exception:  # e.g. a $ref that only resolves from the root: leave it
            return
        if not kept:
            return  # accepts nothing: nothing is implied, the other passes decide
        if len(kept) != len(values):
            out["enum"] = kept
            self.note(parts, "filter enum", "values the other keywords forbid removed")
        implied = [
            k for k in others if k not in _MAPS + _SINGLE + _LISTS and not self._enforced_kw(out, k)
        ]
        for kw in implied:
            if kw in ("type", "$ref", "$defs", "definitions"):
                continue
            out.pop(kw)
            self.note([*parts, kw], "implied by enum", f"every {key} value satisfies {kw}")

    def _enforced_kw(self, out: dict, kw: str) -> bool:
        probe = self._probe(out, kw)
        return probe is None or self.enforced(probe)

    def _probe(self, out: dict, kw: str) -> str | None:
        if kw in _NUMERIC:
            t = out.get("type")
            if t == "integer":
                return f"integer.{kw}"
            if t == "number":
                return f"number.{kw}"
            ti, tn = f"integer.{kw}", f"number.{kw}"
            return ti if not self.enforced(ti) else tn
        if kw == "format":
            return f"format.{out.get('format')}"
        if kw in _PROBE_OF:
            return _PROBE_OF[kw]
        # a keyword the backend named in a compile error (see ``refine``)
        return f"keyword.{kw}" if f"keyword.{kw}" in self.caps else None

    def relaxed(self, out: dict, parts: list) -> None:
        """The ladder steps that move plain keywords (``relax``): string length bounds, array
        item bounds, patterns; each moved keyword is a residual rule with the step's reason."""
        for step in _PLAIN_STEPS:
            why = self.relax.get(step.key)
            if why is None:
                continue
            for kw in step.keywords:
                if kw in out and (kw != "pattern" or isinstance(out[kw], str)):
                    self.move(out, parts, kw, why)

    def integer_range(self, out: dict, parts: list) -> None:
        if out.get("type") != "integer" or "enum" in out or "const" in out:
            return
        present = [k for k in _NUMERIC if k in out]
        if not present or all(self.enforced(f"integer.{k}") for k in present):
            return
        why = self.relax.get("integer.enum")
        if why is not None:  # ladder: the bounds the backend ignores go to the residual
            for k in present:
                if not self.enforced(f"integer.{k}"):
                    self.move(out, parts, k, why)
            return
        if not self.enforced("enum.integer"):
            return
        lo, hi = _int_bounds(out)
        if lo is None or hi is None:
            return  # open range: the drops pass moves the bounds to the residual
        mult = out.get("multipleOf")
        if hi - lo + 1 > MAX_ENUM * (int(mult) if isinstance(mult, int) and mult > 0 else 1):
            return
        check = validator({k: out[k] for k in present})
        values = [v for v in range(lo, hi + 1) if check.is_valid(v)]
        if len(values) > MAX_ENUM:
            return
        first = next(k for k in out if k in present)
        rebuilt: dict[str, Any] = {}
        for k, v in out.items():
            if k == first:
                rebuilt["enum"] = values
            elif k not in present:
                rebuilt[k] = v
        out.clear()
        out.update(rebuilt)
        self.note(parts, "integer range -> enum", f"{len(values)} integers from {lo} to {hi}")

    def format(self, out: dict, parts: list) -> None:
        fmt = out.get("format")
        if not isinstance(fmt, str) or self.enforced(f"format.{fmt}"):
            return
        found = format_pattern(fmt, self.json_safe)
        ptr = [*parts, "format"]
        if found is None:
            reason = (
                f"format {fmt!r}: no probe shows {self.backend} enforces it at "
                "schemaops.formats' strictness, and lower has no equivalent pattern"
            )
            self.move(out, parts, "format", reason)
            return
        pat, narrower = found
        if not self.enforced("pattern.anchored"):
            self.move(
                out,
                parts,
                "format",
                f"{self.why('format.' + fmt, 'format')}; "
                f"and {self.why('pattern.anchored', 'pattern')}",
            )
            return
        why = self.relax.get("format.pattern") or self.relax.get("pattern")
        if why is not None:  # ladder: the format is the application's to check
            self.move(out, parts, "format", why)
            return
        if "pattern" in out:
            reason = f"{self.why('format.' + fmt, 'format')}; the node already has a pattern"
            self.move(out, parts, "format", reason)
            return
        rebuilt = {
            ("pattern" if k == "format" else k): (pat if k == "format" else v)
            for k, v in out.items()
        }
        out.clear()
        out.update(rebuilt)
        detail = f"format {fmt!r} -> pattern ({self.why('format.' + fmt, 'format')})"
        if narrower:
            detail += f"; narrower than schemaops.formats: {narrower}"
        self.note(ptr, "format -> pattern", detail, {"pattern": pat} if narrower else None)

    def pattern(self, out: dict, parts: list) -> None:
        pat = out.get("pattern")
        if not isinstance(pat, str) or self.enforced("pattern.unanchored") or is_anchored(pat):
            return
        new = anchored_search(pat, self.json_safe)
        if new is None:
            self.move(
                out,
                parts,
                "pattern",
                f"{self.why('pattern.unanchored', 'pattern')}; "
                "the pattern cannot be scanned to anchor it",
            )
            return
        out["pattern"] = new
        if self.json_safe and new != pat:
            detail = f"search semantics kept, narrower: {JSON_ANY_NARROWS}: {new}"
            self.note([*parts, "pattern"], "anchor pattern", detail, {"pattern": new})
        else:
            self.note([*parts, "pattern"], "anchor pattern", "search semantics kept: " + new)

    def length_with_pattern(self, out: dict, parts: list) -> None:
        """A backend that keeps either the pattern or the length of a string (outlines):
        the length moves to the residual, the pattern (often a format) is served."""
        for key, probe in (("pattern", "pattern.with_length"), ("format", "format.with_length")):
            if key not in out or self.enforced(probe):
                continue
            for kw in ("minLength", "maxLength"):
                if kw in out:
                    self.move(out, parts, kw, self.why(probe, f"{kw} next to a {key}"))

    def one_of(self, out: dict, parts: list) -> None:
        """``oneOf`` the backend refuses: ``anyOf`` of the same branches. Exact when the
        branches are pairwise disjoint (distinct types, or distinct constants of a property
        every branch requires); otherwise exclusivity becomes a residual rule."""
        branches = out.get("oneOf")
        inside = pointer([*parts, "oneOf"])
        # exactly-one-of is not monotone: a branch made wider (or narrower) can make two
        # branches match where one did, so the original's exclusivity no longer holds
        changed = [r for r in self.rewrites if r.effect != EXACT and under(r.pointer, inside)]
        if not isinstance(branches, list) or (self.enforced("oneOf") and not changed):
            return
        rebuilt = {("anyOf" if k == "oneOf" else k): v for k, v in out.items()}
        why = (
            f"a oneOf branch was rewritten ({changed[0].rule} at {changed[0].pointer})"
            if changed
            else self.why("oneOf", "oneOf")
        )
        if "anyOf" in out:
            if changed:
                self.move(out, parts, "oneOf", f"{why}: exactly one branch can no longer be served")
            return  # both: leave it to the drops pass
        out.clear()
        out.update(rebuilt)
        if _disjoint(branches):
            self.note(parts, "oneOf -> anyOf", "the branches are pairwise disjoint")
            return
        ptr = pointer([*parts, "oneOf"])
        reason = (
            f"{why}: served as anyOf; that exactly one branch matches is the application's to check"
        )
        self.widen(ptr, "oneOf", "exactly one branch", reason)

    def distribute(self, out: dict, parts: list) -> None:
        """Keywords next to an ``anyOf``/``oneOf`` the backend ignores there (xgrammar drops a
        ``required`` beside a union): merged into every branch, which is exact
        (A and (B1 or B2) = (A and B1) or (A and B2); likewise for exactly-one-of). All
        branches or none: if one does not merge exactly, the siblings (which the backend
        would ignore) move to the residual."""
        if self.enforced("anyOf.siblings"):
            return
        key = "anyOf" if isinstance(out.get("anyOf"), list) else "oneOf"
        branches = out.get(key)
        if not isinstance(branches, list) or ("anyOf" in out and "oneOf" in out):
            return
        siblings = {k: v for k, v in out.items() if k != key and k in _SIBLINGS}
        if not siblings:
            return
        try:
            # a branch that accepts nothing with the siblings never matches: left out
            merged = [m for b in branches if (m := merge(siblings, b)) is not False]
            if not merged:
                raise NotExact("no branch accepts anything with the siblings")
        except NotExact as exc:  # the backend serves the union alone: a widening
            why = f"{self.why('anyOf.siblings', f'keywords beside {key}')}; not distributed: {exc}"
            for kw in siblings:
                self.move(out, parts, kw, why)
            return
        keep = {k: v for k, v in out.items() if k != key and k not in _SIBLINGS}
        out.clear()
        out.update(keep)
        out[key] = merged
        self.note(parts, f"distribute into {key}", f"{', '.join(siblings)} into each branch")

    def drops(self, out: dict, parts: list) -> None:
        for kw in list(out):
            probe = self._probe(out, kw)
            if probe is None or self.enforced(probe):
                continue
            if kw == "format":
                continue  # handled by the format pass
            self.move(out, parts, kw, self.why(probe, kw))

    def any_value(self, out: dict, parts: list) -> None:
        if not parts:
            return
        if out:
            if self.enforced("schema.annotations_only"):
                return
            if any(k in VOCABULARY or (k.startswith("$") and k not in _PLAIN_DOLLAR) for k in out):
                return
            why = (
                f"{self.backend} refuses a subschema without a validation keyword; JSON Schema "
                f"reads {', '.join(out)} as annotations: any value is valid"
            )
        elif self.enforced("schema.empty"):
            return
        else:
            why = f"{self.backend} {_VERB.get(_cap(self.caps, 'schema.empty'), '')}: {{}}"
        out.clear()
        out.update(copy.deepcopy(ANY_VALUE))
        self.note(parts, "any value -> union of the JSON types", why)


#: ``$`` keywords that neither name a location nor change a base URI (safe to drop)
_PLAIN_DOLLAR = frozenset({"$comment", "$schema"})
#: every JSON value, spelled with ``type`` only (what ``{}`` means in JSON Schema)
ANY_VALUE = {
    "anyOf": [{"type": t} for t in ("null", "boolean", "number", "string", "array", "object")]
}

_TYPES = ("null", "boolean", "object", "array", "number", "string")


def _type_set(schema: Any) -> set[str] | None:
    if not isinstance(schema, dict) or "type" not in schema:
        return None
    t = schema["type"]
    names = {t} if isinstance(t, str) else set(t) if isinstance(t, list) else None
    if names is None:
        return None
    return {"number" if n == "integer" else n for n in names}


def _constants(schema: Any) -> dict[str, list[Any]]:
    """Property -> allowed constants, for properties the schema requires with const/enum."""
    if not isinstance(schema, dict):
        return {}
    req = schema.get("required") or []
    out = {}
    for k, sub in (schema.get("properties") or {}).items():
        if k in req and isinstance(sub, dict):
            if "const" in sub:
                out[k] = [sub["const"]]
            elif isinstance(sub.get("enum"), list):
                out[k] = list(sub["enum"])
    return out


def _disjoint(branches: list[Any]) -> bool:
    """Whether no instance can match two of ``branches`` (a sufficient test)."""
    for i, a in enumerate(branches):
        for b in branches[i + 1 :]:
            ta, tb = _type_set(a), _type_set(b)
            if ta is not None and tb is not None and not (ta & tb):
                continue
            ca, cb = _constants(a), _constants(b)
            shared = [k for k in ca if k in cb]
            if any(not any(json_equal(x, y) for x in ca[k] for y in cb[k]) for k in shared) and (
                ta == {"object"} or tb == {"object"}
            ):
                continue
            return False
    return True


def _search(pattern: str, key: str) -> bool:
    import re

    try:
        return re.search(pattern, key) is not None
    except (re.error, TypeError):
        return True  # unknown: treat as matching (leave the property's schema empty)


def _domain(schema: Any) -> list[Any] | None:
    if not isinstance(schema, dict):
        return None
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    if schema.get("type") == "boolean":
        return [True, False]
    return None


def _int_bounds(out: dict) -> tuple[int | None, int | None]:
    lo: int | None = None
    hi: int | None = None
    for k in ("minimum", "exclusiveMinimum"):
        v = out.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            b = math.ceil(v) if k == "minimum" else math.floor(v) + 1
            lo = b if lo is None else max(lo, b)
    for k in ("maximum", "exclusiveMaximum"):
        v = out.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            b = math.floor(v) if k == "maximum" else math.ceil(v) - 1
            hi = b if hi is None else min(hi, b)
    return lo, hi


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
        key = _PROBE_OF.get(kw, f"keyword.{kw}")
        if new.get(key) != "refused":
            new[key] = "refused"
    return new if new != caps else None


#: the ladder steps the ``relaxed`` pass applies (formats and integer ranges have their own)
_PLAIN_STEPS = tuple(s for s in LADDER if s.key in ("string.length", "array.bounds", "pattern"))


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
    why = unlowerable(original)
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
    return Lowered(backend, original, served, lw.rewrites, lw.residual, notes)
