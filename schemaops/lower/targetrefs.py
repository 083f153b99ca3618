"""Where each ``$ref`` of a schema lowered for a hosted provider points, before and after.

A provider table removes keywords it does not list; ``$anchor`` and an embedded ``$id``
constrain nothing by themselves, but a ``$ref`` may find its target through them
(``"#item"``, ``"sub.json"``). Dropped as plain annotations, the ref resolved to nothing: the
CLI ended in a traceback (``NoSuchAnchor``) and, with ``--generate 0``, served the broken
schema as lowered. So ``lower --target``:

- resolves every ``$ref`` of the original as JSON Schema does (``referencing``, the base URI
  changing at each ``$id``; ``schemaops.registry.refs.iter_subschemas``) and rewrites the
  ones that are not a JSON pointer from the root into one (``ref_targets``; exact: the same
  target), so no ref depends on an ``$anchor`` or ``$id`` any more and those can go;
- after every rewrite, resolves every ``$ref`` of the served schema the same way and checks
  it lands on the served form of the original's target (``served_ref_problems``): a ref that
  resolves to nothing, or to another node (a property wrapped in a null union, a renamed
  keyword), makes the schema not lowerable, said before any verdict and never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import referencing

from schemaops.registry.drafts import UnknownDraft, draft_label
from schemaops.registry.refs import iter_subschemas, specs
from schemaops.strings import pointer, ref_parts

#: the base URI of a schema with no ``$id`` of its own (never fetched: nothing is retrieved)
BASE = "urn:schemaops:lower-target"


@dataclass
class RefTargets:
    """The original's refs: id(node holding ``$ref``) -> (its target node, the target's JSON
    pointer parts from the root); ``problems``: refs that resolve to nothing in the schema."""

    targets: dict[int, tuple[Any, tuple[str, ...]]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _label(root: Any) -> str:
    """The draft the refs are read in: the root's ``$schema``, else 2020-12 (the providers')."""
    try:
        label = draft_label(root.get("$schema")) if isinstance(root, dict) else None
    except UnknownDraft:
        label = None
    return label if label in specs() else "2020-12"


def _walk(root: Any) -> tuple[referencing.Registry, list[tuple[dict, tuple[str, ...], str]]]:
    """The offline registry of ``root`` (its subresources and anchors crawled) and every
    subschema with its pointer parts and base URI."""
    label = _label(root)
    resource = specs()[label].create_resource(root)
    registry = referencing.Registry().with_resource(BASE, resource).crawl()
    nodes = [
        (node, tuple(str(p) for p in parts), base)
        for node, parts, base in iter_subschemas(root, BASE, label)
    ]
    return registry, nodes


def _lookup(registry: referencing.Registry, base: str, ref: str) -> Any:
    """The target of ``ref`` made at ``base``; raises when it resolves to nothing."""
    return registry.resolver(base).lookup(ref).contents


def ref_targets(root: Any) -> RefTargets:
    """Every ``$ref`` of ``root`` resolved (see module doc); never raises."""
    out = RefTargets()
    if not isinstance(root, dict):
        return out
    try:
        registry, nodes = _walk(root)
    except Exception as exc:  # a malformed $id (the registry reports it): nothing resolves
        out.problems.append(f"the schema's $refs cannot be resolved ({exc}): not lowerable")
        return out
    where = {id(node): parts for node, parts, _ in nodes}
    for node, parts, base in nodes:
        ref = node.get("$ref")
        if not isinstance(ref, str):
            continue
        try:
            target = _lookup(registry, base, ref)
        except Exception:
            target = None
        at = where.get(id(target)) if isinstance(target, dict) else None
        if at is None and isinstance(target, bool) and base == nodes[0][2]:
            parts_ref = ref_parts(ref) if ref.startswith("#/") else None
            at = tuple(parts_ref) if parts_ref is not None else None  # a boolean subschema
        if at is None:
            out.problems.append(
                f"$ref {ref!r} at {pointer(parts) or '/'} does not resolve to a subschema of "
                "this schema: not lowerable"
            )
            continue
        out.targets[id(node)] = (target, at)
    return out


def as_pointer(parts: tuple[str, ...]) -> str:
    """The ``$ref`` text of a JSON pointer from the root."""
    return "#" + pointer(parts)


def served_ref_problems(
    served: Any,
    expect: dict[int, Any],
    counterparts: dict[int, list[Any]],
    nulled: set[int],
) -> list[str]:
    """Why a ``$ref`` of ``served`` does not point where the original's did (empty: every
    one does). ``expect``: id(served ref node) -> the original target; ``counterparts``:
    id(original node) -> its served forms; ``nulled``: served nodes changed to accept null."""
    if not isinstance(served, dict):
        return []
    try:
        registry, nodes = _walk(served)
    except Exception as exc:
        return [f"the served schema's $refs cannot be resolved ({exc}): not lowerable"]
    problems: list[str] = []
    for node, parts, base in nodes:
        ref = node.get("$ref")
        if not isinstance(ref, str):
            continue
        at = pointer(parts) or "/"
        try:
            got = _lookup(registry, base, ref)
        except Exception:
            problems.append(
                f"$ref {ref!r} at {at} of the served schema resolves to nothing: not lowerable"
            )
            continue
        want = expect.get(id(node))
        if want is None:
            continue  # a ref no rewrite touched and the walk did not meet: it resolves
        ok = any(c is got for c in counterparts.get(id(want), []))
        if not ok or id(got) in nulled:
            problems.append(
                f"$ref {ref!r} at {at} of the served schema points elsewhere than the "
                "original's (its target was rewritten: a null union, a renamed keyword): "
                "not lowerable"
            )
    return problems
