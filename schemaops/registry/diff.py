"""Compare two versions of a schema (or two registries) and classify every change.

Two audiences see a schema change differently:

- **consumers** read what the model produced. A change breaks them when the model may now
  produce something it could not before (the schema *widened*: an enum value added, a type
  widened, a requirement dropped, a bound loosened, a new property under
  ``additionalProperties: false``).
- **clients** send or validate instances against the schema (tool implementations, stored
  data, test fixtures). A change breaks them when something valid before is now rejected
  (the schema *narrowed*: a property becomes required, an enum value removed, a type
  narrowed, a bound tightened, a ``format`` added, a property removed under
  ``additionalProperties: false``).

A change that neither widens nor narrows cleanly (a pattern or const replaced) breaks both.
Annotations (title, description, default, examples) break neither, but any change at all
changes the wire string, hence the grammar cache key: changed schemas must be re-warmed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from schemaops.jsonequal import json_equal, json_in
from schemaops.strings import pointer

CONSUMERS = "consumers"
CLIENTS = "clients"
NARROWS = (CLIENTS,)  # new rejects what old accepted
WIDENS = (CONSUMERS,)  # new accepts what old rejected
BOTH = (CONSUMERS, CLIENTS)
NONE: tuple[str, ...] = ()

_LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains")
_UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains")
_ADDABLE = ("pattern", "format", "multipleOf", "const")  # added narrows, removed widens
_ANNOTATIONS = {
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$schema",
    "$id",
    "id",
    "version",
}
_HANDLED = {
    "type",
    "enum",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "prefixItems",
    "$defs",
    "definitions",
    "patternProperties",
    "uniqueItems",
    "anyOf",
    "oneOf",
    "allOf",
    *_LOWER,
    *_UPPER,
    *_ADDABLE,
}
_ALL_TYPES = frozenset({"null", "boolean", "object", "array", "number", "integer", "string"})


@dataclass(frozen=True)
class Change:
    """One classified change. ``breaking_for`` names the audiences it breaks (maybe none)."""

    path: str
    kind: str
    detail: str
    breaking_for: tuple[str, ...]
    schema: str = ""

    @property
    def breaking(self) -> bool:
        return bool(self.breaking_for)

    # key by key, each key this command's --json contract (the to_dict look-alikes: probe/run.py)
    def to_json(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "path": self.path,
            "kind": self.kind,
            "detail": self.detail,
            "breaking": self.breaking,
            "breaking_for": list(self.breaking_for),
        }


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _types(schema: dict) -> frozenset[str] | None:
    t = schema.get("type")
    if t is None:
        return None
    return frozenset([t] if isinstance(t, str) else [x for x in t if isinstance(x, str)])


def _subset(a: frozenset[str] | None, b: frozenset[str] | None) -> bool:
    """Every instance type allowed by ``a`` is allowed by ``b`` (integer is a number)."""
    if b is None:
        return True
    if a is None:
        return _ALL_TYPES <= b | ({"integer"} if "number" in b else set())
    return all(t in b or (t == "integer" and "number" in b) for t in a)


def _is_true(s: Any) -> bool:
    return s is True or s == {}


class _Differ:
    def __init__(self, name: str) -> None:
        self.name = name
        self.out: list[Change] = []

    def add(self, parts: list, kind: str, detail: str, breaking_for: tuple[str, ...]) -> None:
        self.out.append(Change(pointer(parts), kind, detail, breaking_for, self.name))

    def diff(self, old: Any, new: Any, parts: list) -> None:
        if json_equal(old, new) or (_is_true(old) and _is_true(new)):  # true, {}: the same
            return
        if not isinstance(old, dict) or not isinstance(new, dict):
            self._boolean(old, new, parts)
            return
        self._types(old, new, parts)
        self._enum(old, new, parts)
        self._bounds(old, new, parts)
        self._addable(old, new, parts)
        self._object(old, new, parts)
        self._arrays(old, new, parts)
        for kw in ("$defs", "definitions"):
            self._mapping(old.get(kw) or {}, new.get(kw) or {}, [*parts, kw], kw)
        for kw in ("anyOf", "oneOf", "allOf"):
            self._branches(old.get(kw), new.get(kw), [*parts, kw])
        for kw in sorted((set(old) | set(new)) - _HANDLED):
            if json_equal(old.get(kw), new.get(kw)):
                continue
            if kw in _ANNOTATIONS or kw.startswith("x-"):
                self.add([*parts, kw], "annotation_changed", f"{kw} changed", NONE)
            else:
                detail = f"{kw}: {_show(old.get(kw))} -> {_show(new.get(kw))}"
                self.add([*parts, kw], "keyword_changed", detail, BOTH)

    def _boolean(self, old: Any, new: Any, parts: list) -> None:
        if _is_true(old) or new is False:
            self.add(parts, "schema_narrowed", f"{_show(old)} -> {_show(new)}", NARROWS)
        elif _is_true(new) or old is False:
            self.add(parts, "schema_widened", f"{_show(old)} -> {_show(new)}", WIDENS)
        else:
            self.add(parts, "schema_replaced", f"{_show(old)} -> {_show(new)}", BOTH)

    def _types(self, old: dict, new: dict, parts: list) -> None:
        ot, nt = _types(old), _types(new)
        if ot == nt:
            return
        show = lambda t: "any" if t is None else "|".join(sorted(t))  # noqa: E731
        detail = f"type {show(ot)} -> {show(nt)}"
        if _subset(nt, ot):
            self.add([*parts, "type"], "type_narrowed", detail, NARROWS)
        elif _subset(ot, nt):
            self.add([*parts, "type"], "type_widened", detail, WIDENS)
        else:
            self.add([*parts, "type"], "type_changed", detail, BOTH)

    def _enum(self, old: dict, new: dict, parts: list) -> None:
        oe, ne = old.get("enum"), new.get("enum")
        if json_equal(oe, ne):
            return
        at = [*parts, "enum"]
        if not isinstance(oe, list):
            self.add(at, "enum_added", f"values limited to {_show(ne)}", NARROWS)
        elif not isinstance(ne, list):
            self.add(at, "enum_removed", f"no longer limited to {_show(oe)}", WIDENS)
        else:
            gone = [v for v in oe if not json_in(v, ne)]
            new_values = [v for v in ne if not json_in(v, oe)]
            if gone:
                self.add(at, "enum_value_removed", f"removed {_show(gone)}", NARROWS)
            if new_values:
                self.add(at, "enum_value_added", f"added {_show(new_values)}", WIDENS)

    def _bounds(self, old: dict, new: dict, parts: list) -> None:
        for kws, tighter in ((_LOWER, lambda o, n: n > o), (_UPPER, lambda o, n: n < o)):
            for kw in kws:
                o, n = old.get(kw), new.get(kw)
                if json_equal(o, n):
                    continue
                at, detail = [*parts, kw], f"{kw} {_show(o)} -> {_show(n)}"
                if isinstance(o, bool) or isinstance(n, bool):  # draft-04 exclusive flags
                    if n is True and not o:
                        self.add(at, "bound_tightened", detail, NARROWS)
                    elif o is True and not n:
                        self.add(at, "bound_loosened", detail, WIDENS)
                    else:
                        self.add(at, "bound_changed", detail, BOTH)
                elif o is None or (n is not None and tighter(o, n)):
                    self.add(at, "bound_tightened", detail, NARROWS)
                else:
                    self.add(at, "bound_loosened", detail, WIDENS)
        ou, nu = bool(old.get("uniqueItems")), bool(new.get("uniqueItems"))
        if ou != nu:
            kind, who = ("bound_tightened", NARROWS) if nu else ("bound_loosened", WIDENS)
            self.add([*parts, "uniqueItems"], kind, f"uniqueItems {ou} -> {nu}", who)

    def _addable(self, old: dict, new: dict, parts: list) -> None:
        for kw in _ADDABLE:
            o, n = old.get(kw), new.get(kw)
            if json_equal(o, n):
                continue
            at, detail = [*parts, kw], f"{kw} {_show(o)} -> {_show(n)}"
            if kw not in old:
                self.add(at, f"{kw}_added", detail, NARROWS)
            elif kw not in new:
                self.add(at, f"{kw}_removed", detail, WIDENS)
            else:
                self.add(at, f"{kw}_changed", detail, BOTH)

    def _object(self, old: dict, new: dict, parts: list) -> None:
        oreq, nreq = old.get("required") or [], new.get("required") or []
        if isinstance(oreq, list) and isinstance(nreq, list):
            for p in (p for p in nreq if p not in oreq):
                self.add(
                    [*parts, "required"], "property_required", f"{p!r} is now required", NARROWS
                )
            for p in (p for p in oreq if p not in nreq):
                self.add(
                    [*parts, "required"], "required_removed", f"{p!r} is no longer required", WIDENS
                )
        oprops, nprops = old.get("properties") or {}, new.get("properties") or {}
        old_closed = old.get("additionalProperties") is False
        new_closed = new.get("additionalProperties") is False
        for p in oprops:
            at = [*parts, "properties", p]
            if p in nprops:
                self.diff(oprops[p], nprops[p], at)
            elif new_closed:
                who = BOTH if p in oreq else NARROWS
                self.add(
                    at, "property_removed", f"{p!r} removed; additionalProperties is false", who
                )
            else:
                self.add(at, "property_removed", f"{p!r} removed: now unconstrained", WIDENS)
        for p in (p for p in nprops if p not in oprops):
            at = [*parts, "properties", p]
            if old_closed:
                self.add(at, "property_added", f"{p!r} added: the model may now emit it", WIDENS)
            else:
                self.add(
                    at, "property_added", f"{p!r} added: constrains a key that was free", NARROWS
                )
        self._pattern_properties(old, new, parts, old_closed, new_closed)
        oa, na = old.get("additionalProperties", True), new.get("additionalProperties", True)
        if not json_equal(oa, na) and not (_is_true(oa) and _is_true(na)):
            at = [*parts, "additionalProperties"]
            if na is False:
                self.add(
                    at, "additional_properties_closed", "additionalProperties -> false", NARROWS
                )
            elif oa is False:
                self.add(
                    at,
                    "additional_properties_opened",
                    f"additionalProperties false -> {_show(na)}",
                    WIDENS,
                )
            else:
                self.diff(oa, na, at)

    def _pattern_properties(
        self, old: dict, new: dict, parts: list, old_closed: bool, new_closed: bool
    ) -> None:
        """Like named properties: the direction depends on ``additionalProperties: false``.

        Under a closed object a pattern is the only way a key matching it is allowed, so
        adding one widens (the model may emit those keys) and removing one narrows; in an
        open object a pattern only constrains keys that were free, so the reverse.
        """
        opp, npp = old.get("patternProperties"), new.get("patternProperties")
        opp = opp if isinstance(opp, dict) else {}
        npp = npp if isinstance(npp, dict) else {}
        at = [*parts, "patternProperties"]
        for key in opp:
            if key in npp:
                self.diff(opp[key], npp[key], [*at, key])
            elif new_closed:
                detail = f"{key!r} removed; additionalProperties is false: matching keys refused"
                self.add([*at, key], "pattern_property_removed", detail, NARROWS)
            else:
                detail = f"{key!r} removed: matching keys now unconstrained"
                self.add([*at, key], "pattern_property_removed", detail, WIDENS)
        # added mirrors removed above with the direction swapped; one table would hide that.
        for key in (k for k in npp if k not in opp):
            if old_closed:
                detail = f"{key!r} added: the model may now emit keys matching it"
                self.add([*at, key], "pattern_property_added", detail, WIDENS)
            else:
                detail = f"{key!r} added: constrains keys that were free"
                self.add([*at, key], "pattern_property_added", detail, NARROWS)

    def _arrays(self, old: dict, new: dict, parts: list) -> None:
        for kw in ("items", "prefixItems"):
            o, n = old.get(kw), new.get(kw)
            if json_equal(o, n):
                continue
            if isinstance(o, list) and isinstance(n, list):
                self._branches(o, n, [*parts, kw])
            else:
                self.diff(True if o is None else o, True if n is None else n, [*parts, kw])

    def _mapping(self, old: dict, new: dict, parts: list, kw: str) -> None:
        if not isinstance(old, dict) or not isinstance(new, dict):
            return
        for key in old:
            if key in new:
                self.diff(old[key], new[key], [*parts, key])
            else:
                self.add([*parts, key], "definition_removed", f"{key!r} removed", NONE)
        for key in (k for k in new if k not in old):
            self.add([*parts, key], "definition_added", f"{key!r} added", NONE)

    def _branches(self, old: Any, new: Any, parts: list) -> None:
        if json_equal(old, new):
            return
        if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
            for i, (o, n) in enumerate(zip(old, new, strict=True)):
                self.diff(o, n, [*parts, i])
            return
        n_old = len(old) if isinstance(old, list) else 0
        n_new = len(new) if isinstance(new, list) else 0
        self.add(parts, "branches_changed", f"{parts[-1]}: {n_old} -> {n_new} subschemas", BOTH)


def diff_schemas(old: Any, new: Any, name: str = "") -> list[Change]:
    """Every change from ``old`` to ``new`` (parsed schemas), classified per audience."""
    d = _Differ(name)
    d.diff(old, new, [])
    return d.out
