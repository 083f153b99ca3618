"""``registry diff`` on tool sets: which tool was added, removed or changed, and for whom.

Why apart from ``diff.py``: a tool set is a union of calls the model may make, so its
changes read in the same two audiences (``diff.py``): a tool added lets the model make a
call it could not before (breaks consumers, who must handle it); a tool removed rejects a
call that was valid (breaks clients: code that forces it with ``tool_choice``, fixtures). A
tool's ``parameters`` change is classified by the schema diff itself, under
``/tools/NAME/parameters``; a description or ``strict`` change breaks neither, but changes the
wire fragment (the tool set's hash), so a warmed tool set must be warmed again.
"""

from __future__ import annotations

from typing import Any

from schemaops.registry.diff import NARROWS, NONE, WIDENS, Change, diff_schemas


def _tool_changes(set_name: str, old: Any, new: Any) -> list[Change]:
    """Changes between two versions of one tool set (``toolsets.ToolSet``)."""
    out: list[Change] = []
    old_by = {t.name: (t, e) for t, e in zip(old.tools, old.source, strict=True)}
    new_by = {t.name: (t, e) for t, e in zip(new.tools, new.source, strict=True)}
    for name in old_by.keys() - new_by.keys():
        detail = f"tool {name!r} removed: a call to it is now refused"
        out.append(Change(f"/tools/{name}", "tool_removed", detail, NARROWS, set_name))
    for name in new_by.keys() - old_by.keys():
        detail = f"tool {name!r} added: the model may now call it"
        out.append(Change(f"/tools/{name}", "tool_added", detail, WIDENS, set_name))
    for name in old_by.keys() & new_by.keys():
        (ot, oe), (nt, ne) = old_by[name], new_by[name]
        found = diff_schemas(ot.bundled, nt.bundled, set_name)
        for c in found:
            path = f"/tools/{name}/parameters{c.path}"
            out.append(Change(path, c.kind, f"tool {name!r}: {c.detail}", c.breaking_for, set_name))
        other = {k: v for k, v in oe["function"].items() if k != "parameters"}
        other_new = {k: v for k, v in ne["function"].items() if k != "parameters"}
        if other != other_new:
            keys = sorted(
                k for k in other.keys() | other_new.keys() if other.get(k) != other_new.get(k)
            )
            detail = f"tool {name!r}: {', '.join(keys)} changed (the wire fragment changes)"
            out.append(Change(f"/tools/{name}", "tool_changed", detail, NONE, set_name))
    return sorted(out, key=lambda c: c.path)


def diff_toolsets(olds: dict[str, Any], news: dict[str, Any]) -> tuple[list[Change], list[dict]]:
    """(changes, rows) between two registries' tool sets, rows as ``DiffReport.schemas``'."""
    changes: list[Change] = []
    rows: list[dict] = []
    for name in sorted(olds.keys() | news.keys()):
        old, new = olds.get(name), news.get(name)
        row = {
            "name": name,
            "kind": "toolset",
            "old_hash": None if old is None else old.hash,
            "new_hash": None if new is None else new.hash,
            "library": False,
        }
        if new is None:
            row["status"] = "removed"
            detail = f"tool set {name!r} removed"
            changes.append(Change("", "toolset_removed", detail, NARROWS, name))
        elif old is None:
            row["status"] = "added"
            changes.append(Change("", "toolset_added", f"tool set {name!r} added", NONE, name))
        else:
            row["status"] = "changed" if row["old_hash"] != row["new_hash"] else "unchanged"
            changes.extend(_tool_changes(name, old, new))
        rows.append(row)
    return changes, rows
