"""``warm --from-log``: the grammar keys a request log really uses, as warm items.

The log is read by ``schemaops.requestlog`` (shared with ``registry drift``); this module turns
what it found into ``WarmItem``s, one per distinct key, with how many requests used it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from schemaops.requestlog import Found, LogScan, scan, value_key
from schemaops.warm.plan import WarmItem, dedupe


def iter_items(
    found: list[Found], registry_names: dict[str, str] | None = None
) -> Iterator[WarmItem]:
    """One WarmItem per use; ``registry_names`` maps a JSON value key to a registry name."""
    for f in found:
        match = None
        if registry_names and f.schema_text is not None:
            match = registry_names.get(value_key(f.schema_text))
        api = "native" if f.api == "native" else "openai"
        tools = "tools" in f.fragment  # key derived by us; a tool parser would change it
        yield WarmItem(
            name=match or f.label or f.key_type,
            api=api,  # type: ignore[arg-type]
            key_type=f.key_type,
            fragment=f.fragment,
            key=None if tools else f.key,
            source="log",
            matches=match,
            extra={"derived_key": f.key} if tools else {},
        )


def plan_from_log(
    path: str | Path, registry_names: dict[str, str] | None = None
) -> tuple[list[WarmItem], LogScan]:
    """The distinct items of a request log, each with how many requests used it.

    Variants of one schema (same JSON, other bytes) stay separate items: each is its own
    cache entry, so each must be warmed; their names get the key's hash to tell them apart.
    """
    sc = scan(path)
    items = dedupe(list(iter_items(sc.found, registry_names)))
    by_name: dict[str, int] = {}
    for it in items:
        by_name[it.name] = by_name.get(it.name, 0) + 1
    for it in items:
        if by_name[it.name] > 1:
            it.name = f"{it.name}@{it.short_hash[:8]}"
    return items, sc
