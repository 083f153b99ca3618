"""The lowering passes over composition: ``allOf`` merged or flattened, ``if``/``then``/
``else`` to a union, ``oneOf`` to ``anyOf``, siblings distributed into union branches.

A mixin of ``passes._Lowerer`` (the walk, the residual and the rewrite log live there); split
from it so that each family of passes reads on its own.
"""

from __future__ import annotations

from typing import Any

from schemaops.compare.instances import validator
from schemaops.lower.keywords import (
    SIBLINGS,
)
from schemaops.lower.merge import ANNOTATIONS, NotExact, merge
from schemaops.lower.model import EXACT, under
from schemaops.lower.residual import pointer
from schemaops.lower.values import (
    disjoint,
    finite_domain,
)


class CompositionPasses:
    """Passes over allOf, if/then/else, oneOf and union siblings (see the module doc)."""

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
        keep = {k: v for k, v in base.items() if k not in SIBLINGS}
        # every branch is an object schema (``_split`` requires it): the node says so too, so
        # that a lowered root stays what a tool's parameters must be (``type: object``)
        keep["type"] = "object"
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
        domain = finite_domain(domain_schema)
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
            core = {k: v for k, v in base.items() if k in SIBLINGS}
            joined = merge(merge(core, branch), disc)
            if joined is not False:  # a branch that accepts nothing is left out
                out.append(joined)
        if not out:
            raise NotExact("no branch can apply")
        return out

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
        if disjoint(branches):
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
        siblings = {k: v for k, v in out.items() if k != key and k in SIBLINGS}
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
        keep = {k: v for k, v in out.items() if k != key and k not in SIBLINGS}
        kind = siblings.get("type")
        if kind is not None and all(type(m) is dict and m.get("type") == kind for m in merged):
            # merged into every branch, and kept here as well: redundant for a backend that
            # ignores it beside the union, and it keeps an object root an object schema
            # (what a tool's parameters must be) after the rewrite
            keep["type"] = kind
        out.clear()
        out.update(keep)
        out[key] = merged
        self.note(parts, f"distribute into {key}", f"{', '.join(siblings)} into each branch")
