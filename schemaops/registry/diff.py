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
from pathlib import Path
from typing import Any

from schemaops.errors import InputError
from schemaops.registry.loader import format_problem, inspect_registry, inspect_schema_file
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
        if old == new or (_is_true(old) and _is_true(new)):  # true and {} accept the same
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
            if old.get(kw) == new.get(kw):
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
        if oe == ne:
            return
        at = [*parts, "enum"]
        if not isinstance(oe, list):
            self.add(at, "enum_added", f"values limited to {_show(ne)}", NARROWS)
        elif not isinstance(ne, list):
            self.add(at, "enum_removed", f"no longer limited to {_show(oe)}", WIDENS)
        else:
            gone = [v for v in oe if v not in ne]
            new_values = [v for v in ne if v not in oe]
            if gone:
                self.add(at, "enum_value_removed", f"removed {_show(gone)}", NARROWS)
            if new_values:
                self.add(at, "enum_value_added", f"added {_show(new_values)}", WIDENS)

    def _bounds(self, old: dict, new: dict, parts: list) -> None:
        for kws, tighter in ((_LOWER, lambda o, n: n > o), (_UPPER, lambda o, n: n < o)):
            for kw in kws:
                o, n = old.get(kw), new.get(kw)
                if o == n:
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
            if o == n:
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
        if oa != na and not (_is_true(oa) and _is_true(na)):
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
            if o == n:
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
        if old == new:
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


@dataclass
class DiffReport:
    """Changes between two versions, plus which schemas were added, removed or changed."""

    old: str
    new: str
    changes: list[Change]
    schemas: list[dict[str, Any]]  # name, status, old_hash, new_hash, library, via_library

    @property
    def breaking(self) -> list[Change]:
        return [c for c in self.changes if c.breaking]

    def to_json(self) -> dict[str, Any]:
        return {
            "old": self.old,
            "new": self.new,
            "breaking": len(self.breaking),
            "breaking_for": {who: sum(who in c.breaking_for for c in self.changes) for who in BOTH},
            "schemas": self.schemas,
            "changes": [c.to_json() for c in self.changes],
        }


#: problems that leave nothing to compare: the diff stops with exit 2 naming the file
_FATAL = frozenset({"unreadable", "not_json", "too_deep", "bad_unicode", "not_schema"})


def _fatal(problems: list[dict]) -> None:
    bad = [p for p in problems if p.get("kind") in _FATAL]
    if bad:
        raise InputError("cannot diff: " + "; ".join(format_problem(p) for p in bad))


def _load(path: Path) -> dict[str, Any]:
    """Name -> Schema of a registry folder (libraries too) or of one file, as the registry
    loads them (refs to other files bundled) but tolerating content problems, so that a
    registry can be diffed in the middle of a migration."""
    if path.is_dir():
        reg, problems = inspect_registry(path, examples=False)
        _fatal(problems)
        return {**reg.libraries, **reg.schemas}
    schema, problems = inspect_schema_file(path)
    _fatal(problems)
    if schema is None:  # pragma: no cover - every such case is a fatal problem
        raise InputError(f"cannot diff {path}: " + "; ".join(p["reason"] for p in problems))
    return {path.stem: schema}


def _inlined(s: Any) -> set[str]:
    """Defs keys the loader inlined from other registry files (absent from the file)."""
    bundled = s.bundled()
    if s.self_contained is None or not isinstance(bundled, dict):
        return set()
    own = s.schema if isinstance(s.schema, dict) else {}
    out: set[str] = set()
    for kw in ("$defs", "definitions"):
        if isinstance(bundled.get(kw), dict):
            mine = own.get(kw) if isinstance(own.get(kw), dict) else {}
            out |= {f"/{kw}/{k}" for k in bundled[kw] if k not in mine}
    return out


def _through_library(changes: list[Change], old: Any, new: Any) -> list[Change]:
    """Say which changes come from a library file (inlined defs), not the schema's own."""
    inlined = _inlined(old) | _inlined(new)
    out = []
    for c in changes:
        top = next((k for k in inlined if c.path == k or c.path.startswith(k + "/")), None)
        if top is not None:
            lib = top.rsplit("/", 1)[-1].split("__", 1)[0]
            detail = (
                f"through {lib}.json (a referenced registry file, inlined at {top}): {c.detail}"
            )
            c = Change(c.path, c.kind, detail, c.breaking_for, c.schema)
        out.append(c)
    return out


def diff_paths(old: str | Path, new: str | Path) -> DiffReport:
    """Diff two schema files or two registry folders (matched by registry name).

    Each schema is compared as it is served: its bundled form, with the ``$ref``s to other
    registry files (libraries such as ``common.json``) inlined, and hashed as the registry
    hashes it (sha256 of the native wire string, the cache key). So a change in a library
    shows on every schema that refers to it (``via_library``), classified like any other
    change and marked "through library". Content problems (a metaschema error, an
    unresolvable ref) do not stop a diff; input that cannot be read or is too deep to
    compare raises InputError (exit 2).
    """
    o, n = Path(old), Path(new)
    for p in (o, n):
        if not p.exists():
            raise InputError(f"not found: {p}")
    if o.is_dir() != n.is_dir():
        raise InputError(f"cannot diff a folder with a file: {o} vs {n}")
    olds, news = _load(o), _load(n)
    if not o.is_dir():  # two files: one schema, whatever the file names
        olds, news = {o.stem: olds[o.stem]}, {o.stem: news[n.stem]}
    changes: list[Change] = []
    schemas: list[dict[str, Any]] = []
    for name in sorted(set(olds) | set(news)):
        old_s, new_s = olds.get(name), news.get(name)
        either = new_s if new_s is not None else old_s
        row: dict[str, Any] = {
            "name": name,
            "old_hash": None if old_s is None else old_s.hash,
            "new_hash": None if new_s is None else new_s.hash,
            "library": _is_library(either),
        }
        if new_s is None:
            row["status"] = "removed"
            changes.append(Change("", "schema_removed", f"schema {name!r} removed", BOTH, name))
        elif old_s is None:
            row["status"] = "added"
            changes.append(Change("", "schema_added", f"schema {name!r} added", NONE, name))
        else:
            changed = row["old_hash"] != row["new_hash"]
            row["status"] = "changed" if changed else "unchanged"
            own_changed = old_s.source_hash != new_s.source_hash
            row["via_library"] = changed and not own_changed
            if row["library"]:
                if changed:  # its dependents carry the classified changes
                    changes.append(Change("", "library_changed", _LIB_DETAIL, NONE, name))
            else:
                try:
                    found = diff_schemas(old_s.bundled(), new_s.bundled(), name)
                except RecursionError:
                    raise InputError(f"cannot diff {name!r}: nested too deeply") from None
                changes.extend(_through_library(found, old_s, new_s))
                if changed and not found:  # only key order or spacing
                    detail = "same schema, different wire text (key order)"
                    if row["via_library"]:
                        detail = "same schema, different wire text through a library (key order)"
                    changes.append(Change("", "wire_changed", detail, NONE, name))
        schemas.append(row)
    return DiffReport(str(o), str(n), changes, schemas)


_LIB_DETAIL = (
    "library changed: every schema that refers to it has a new wire string (re-warm them); "
    "their changes are listed under their own names, through this library"
)


def _is_library(s: Any) -> bool:
    return isinstance(s.schema, dict) and s.schema.get("x-schemaops-library") is True
