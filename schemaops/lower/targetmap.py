"""The instance mapping of ``lower --target``: an original-shaped instance in the served shape
and back (``map_instance``), and the subschema validators it chooses branches with.

Why apart from ``targets.py``: the rewrite builds the served schema; this walks instances
along a schema (absent optional property <-> null, where the rewrite made one required with a
null union), bounded against hostile depth and ``$ref`` chains.
"""

from __future__ import annotations

from typing import Any

from schemaops.compare.instances import validator
from schemaops.providers.base import DEFS
from schemaops.registry.drafts import UnknownDraft, draft_label
from schemaops.strings import ref_parts, resolve_pointer

#: bound on following a chain of $refs without descending into the instance
MAX_REF_HOPS = 32
#: instance depth past which the mapping leaves a value as it is (no recursion error: the
#: original's check then sees any null left there, and the residual does not cover it)
MAX_MAP_DEPTH = 200


def draft_of(root: Any) -> str | None:
    """The draft label of ``root``'s ``$schema`` (None: none, or one the registry refuses)."""
    try:
        return draft_label(root.get("$schema")) if isinstance(root, dict) else None
    except UnknownDraft:
        return None


def defs_of(root: Any) -> dict[str, Any]:
    """What a subschema validator needs of ``root``: its definitions, and its ``$schema`` (the
    draft the subschema is written in)."""
    return {k: root[k] for k in (*DEFS, "$schema") if isinstance(root, dict) and k in root}


class Subvalidators:
    """Validators for subschemas of one root (its definitions attached), built once each."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.cache: dict[int, Any] = {}

    def valid(self, sub: Any, x: Any) -> bool:
        v = self.cache.get(id(sub))
        try:
            if v is None:
                # read in the root's draft (a subschema has no ``$schema`` of its own)
                schema = {**defs_of(self.root), **sub} if isinstance(sub, dict) else sub
                v = self.cache[id(sub)] = validator(schema)
            return bool(v.is_valid(x))
        except Exception:  # an unresolvable ref, a non-string $id in a hostile schema: not this
            return False  # branch


def map_instance(
    root: Any,
    x: Any,
    nullable: dict[int, set[str]],
    *,
    fill: bool,
    refs: dict[int, tuple[Any, tuple[str, ...]]] | None = None,
) -> Any:
    """Walk ``x`` along ``root``: at each object node with properties served as
    required-with-null, add null for an absent one (``fill``) or drop a null one. ``refs``:
    where each ``$ref`` of ``root`` resolves (``targetrefs.ref_targets``), else a ref is
    followed as a JSON pointer."""
    known = refs or {}
    subs = Subvalidators(root)

    def go(s: Any, v: Any, hops: int, depth: int = 0) -> Any:
        if not isinstance(s, dict) or hops > MAX_REF_HOPS or depth > MAX_MAP_DEPTH:
            return v
        if isinstance(v, dict):
            props = s.get("properties") if isinstance(s.get("properties"), dict) else {}
            out = {
                k: go(props[k], val, 0, depth + 1) if k in props else val for k, val in v.items()
            }
            for name in sorted(nullable.get(id(s), ())):
                if fill and name not in out:
                    out[name] = None
                elif not fill and name in out and out[name] is None:
                    del out[name]
            v = out
        elif isinstance(v, list) and isinstance(s.get("items"), dict):
            v = [go(s["items"], item, 0, depth + 1) for item in v]
        ref = s.get("$ref")
        if isinstance(ref, str):
            parts = ref_parts(ref)
            target = resolve_pointer(root, parts) if parts is not None else None
            target = known[id(s)][0] if id(s) in known else target
            v = go(target, v, hops + 1, depth)
        for kw in ("anyOf", "oneOf"):
            branches = s.get(kw)
            if isinstance(branches, list):
                for b in branches:
                    if subs.valid(b, v):
                        v = go(b, v, hops + 1, depth)
                        break
        if isinstance(s.get("allOf"), list):
            for b in s["allOf"]:
                v = go(b, v, hops + 1, depth)
        return v

    try:  # copy on write: every mapped dict and list is new, the rest is shared, unchanged
        return go(root, x, 0)
    except RecursionError:  # a validator deep inside a hostile instance: leave it as it is
        return x
