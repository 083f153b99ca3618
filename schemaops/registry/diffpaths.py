"""``registry diff`` over files and folders: two registries (or two schema files) matched by
name, each pair of served schemas compared by ``diff.diff_schemas``.

Why apart from ``diff``: ``diff`` classifies the change between two schema values; this
module decides which values to compare (each schema with its library refs inlined, as it is
served; a library's change shown on every schema that refers to it) and reports which
schemas were added, removed or changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemaops.errors import InputError
from schemaops.registry.diff import BOTH, NONE, Change, diff_schemas
from schemaops.registry.loader import format_problem, inspect_registry, inspect_schema_file


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
_FATAL = frozenset(
    {"unreadable", "not_json", "too_deep", "bad_unicode", "not_schema", "number_too_long"}
)


def _fatal(problems: list[dict]) -> None:
    bad = [p for p in problems if p.get("kind") in _FATAL]
    if bad:
        raise InputError("cannot diff: " + "; ".join(format_problem(p) for p in bad))


def _load(path: Path, toolsets: dict[str, Any] | None = None) -> dict[str, Any]:
    """Name -> Schema of a registry folder (libraries too) or of one file, as the registry
    loads them (refs to other files bundled) but tolerating content problems, so that a
    registry can be diffed in the middle of a migration."""
    if path.is_dir():
        reg, problems = inspect_registry(path, examples=False)
        _fatal(problems)
        if toolsets is not None:  # NAME.tools.json (toolsets.py), compared by ``tooldiff``
            toolsets.update(reg.toolsets)
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
    old_sets: dict[str, Any] = {}
    new_sets: dict[str, Any] = {}
    olds, news = _load(o, old_sets), _load(n, new_sets)
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
                if changed and not found:  # key order, or a number spelled otherwise (1.0)
                    how = "key order or number spelling"
                    detail = f"same schema, different wire text ({how})"
                    if row["via_library"]:
                        detail = f"same schema, different wire text through a library ({how})"
                    changes.append(Change("", "wire_changed", detail, NONE, name))
        schemas.append(row)
    if old_sets or new_sets:
        from schemaops.registry.tooldiff import diff_toolsets

        set_changes, set_rows = diff_toolsets(old_sets, new_sets)
        changes.extend(set_changes)
        schemas.extend(set_rows)
    return DiffReport(str(o), str(n), changes, schemas)


_LIB_DETAIL = (
    "library changed: every schema that refers to it has a new wire string (re-warm them); "
    "their changes are listed under their own names, through this library"
)


def _is_library(s: Any) -> bool:
    return isinstance(s.schema, dict) and s.schema.get("x-schemaops-library") is True
