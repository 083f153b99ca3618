"""What the optional-to-required rewrite (``lower --target openai``) does to keywords beside it.

OpenAI needs every property in ``required``, so an optional property ``P`` is served as
required with a null union, and the application reads ``P: null`` as "absent". That reading
is applied to the instance, not to the schema: a kept keyword that asks which keys are
present now sees ``P`` present whenever it is null. ``{"anyOf": [{"required": ["a"]},
{"required": ["b"]}]}`` beside optional ``a`` and ``b`` was served as it is and accepted
``{"a": null, "b": null}``, which is ``{}`` to the application, which the original refuses;
the rewrite still said only ``null-means-absent``.

``presence_reads`` finds such keywords by construction (not by the differential's luck):

- a ``required`` naming such a property inside a kept ``anyOf``/``oneOf``/``allOf`` at the
  same instance (branches, ``then``/``else``, local ``$ref``s followed): the served schema
  accepts more there, so the rewrite there ``widens`` and the whole keyword goes to the
  residual (the application checks it after dropping the nulls);
- any other keyword that counts or tests keys (``not``, ``if``, ``minProperties``,
  ``maxProperties``, ``dependentRequired``, ``dependentSchemas``, ``dependencies``), at the
  object or inside those applicators: the served schema may accept more or less there, which
  no single effect declares, so the schema is not lowerable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from schemaops.strings import ref_parts, resolve_pointer

#: applicators whose branches apply to the same instance
APPLICATORS = ("anyOf", "oneOf", "allOf")
#: keywords that count or test which keys are present, other than ``required``
COUNTS_KEYS = (
    "not",
    "if",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
)
#: bound on the nodes visited (a hostile schema's ``$ref`` fan-out)
MAX_NODES = 10_000


@dataclass
class PresenceReads:
    """``widen``: the applicator keywords of the object whose ``required`` names a property
    served as required-with-null; ``refuse``: the keywords that make it not lowerable."""

    widen: list[str] = field(default_factory=list)
    refuse: list[str] = field(default_factory=list)


def _same_instance(value: Any, root: Any) -> list[dict[str, Any]]:
    """The schema objects under an applicator's value that apply to the same instance."""
    out: list[dict[str, Any]] = []
    stack = list(value) if isinstance(value, list) else [value]
    seen: set[int] = set()
    while stack and len(out) < MAX_NODES:
        node = stack.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        out.append(node)
        for kw in APPLICATORS:
            if isinstance(node.get(kw), list):
                stack.extend(node[kw])
        stack.extend(node[kw] for kw in ("then", "else") if isinstance(node.get(kw), dict))
        ref = node.get("$ref")
        parts = ref_parts(ref) if isinstance(ref, str) else None
        if parts is not None:
            stack.append(resolve_pointer(root, parts))
    return out


def presence_reads(node: dict[str, Any], names: set[str], root: Any) -> PresenceReads:
    """What in the served object ``node`` reads whether one of ``names`` is present (see the
    module doc); ``root`` resolves local ``$ref``s."""
    out = PresenceReads()
    out.refuse += [kw for kw in COUNTS_KEYS if kw in node]
    for kw in APPLICATORS:
        if kw not in node:
            continue
        hit = False
        for sub in _same_instance(node[kw], root):
            req = sub.get("required")
            if isinstance(req, list) and names.intersection(r for r in req if isinstance(r, str)):
                hit = True
            out.refuse += [f"{kw}/…/{k}" for k in COUNTS_KEYS if k in sub]
        if hit:
            out.widen.append(kw)
    return out
