"""The residual: the constraints of the original schema that the served schema no longer
carries, which the application must check after decoding.

Each rule is JSON-Schema-like: ``pointer`` is the JSON pointer of the constraint in the
original (bundled) schema, ``keyword`` the keyword, ``value`` its value, ``reason`` why the
served schema cannot carry it on the backend, and ``covers`` the schema locations whose
failures the rule accounts for (its own pointer; for ``if``, the ``then``/``else`` branches).

``check_residual(original, rules, instance)`` validates ``instance`` against the original
with jsonschema (formats asserted by ``schemaops.formats``) and attributes every error to the
residual rule whose location it falls under. An ``anyOf``/``oneOf`` failure is attributed
when some branch fails only on residual rules (that branch is the one the served schema let
the instance through). Errors no rule covers are returned apart as ``uncovered``: they mean
the served schema let through something it should have refused, i.e. a lowering bug, which
the proof in ``schemaops.lower.prove`` turns into a failure.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from schemaops.compare.instances import validator
from schemaops.strings import MISSING, pointer, ref_parts, resolve_pointer


@dataclass
class ResidualRule:
    """One constraint the application checks after decoding."""

    pointer: str
    keyword: str
    value: Any
    reason: str
    covers: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.covers:
            self.covers = [self.pointer]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ResidualRule:
        return cls(d["pointer"], d["keyword"], d.get("value"), d.get("reason", ""), d["covers"])


@dataclass
class Violation:
    """One residual failure of an instance (or one uncovered error)."""

    instance_path: str
    keyword: str
    schema_pointer: str
    message: str
    rule: str | None = None  # the covering rule's pointer

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ResidualCheck:
    """``flagged``: failures residual rules account for; ``uncovered``: failures they do not."""

    flagged: list[Violation] = field(default_factory=list)
    uncovered: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The instance satisfies the original schema."""
        return not self.flagged and not self.uncovered


def _node(root: Any, parts: list[str]) -> Any:
    return resolve_pointer(root, parts)


def schema_location(root: Any, path: Any) -> str:
    """The JSON pointer in ``root`` of an error's ``absolute_schema_path``.

    jsonschema leaves ``$ref`` out of the path and continues inside the referenced schema,
    so the path is replayed over the schema itself: a step the current node does not have,
    taken at a node with a local ``#/...`` ``$ref``, continues at the ref's target.
    """
    return schema_trail(root, path)[-1]


def schema_trail(root: Any, path: Any) -> list[str]:
    """The pointers of every node holding a ``$ref`` the path went through, then the error's
    location (``schema_location``): a residual rule covering a node that holds a ``$ref``
    covers what fails in the ref's target when reached through it."""
    parts: list[str] = []
    via: list[str] = []
    node = root
    for seg in path:
        key = str(seg)
        for _ in range(32):  # follow chains of refs, boundedly
            has = resolve_pointer(node, [key], MISSING) is not MISSING
            ref = node.get("$ref") if isinstance(node, dict) else None
            local = ref_parts(ref) if isinstance(ref, str) else None
            if has or local is None:
                break
            via.append(pointer(parts))
            node = _node(root, local)
            parts = list(local)  # the location continues at the ref's target
        parts.append(key)
        node = _node(node, [key]) if node is not None else None
    return [*via, pointer(parts)]


def _under(loc: str, prefix: str) -> bool:
    return loc == prefix or loc.startswith(prefix + "/")


def _covering(loc: str, rules: list[ResidualRule]) -> ResidualRule | None:
    for rule in rules:
        if any(_under(loc, c) for c in rule.covers):
            return rule
    return None


def _false_below(root: Any, loc: str) -> list[str]:
    """The literal ``false`` subschemas at or just below ``loc``: jsonschema reports a false
    subschema's error without its last path step (``then: false`` at ``""``, ``allOf: [...,
    false]`` at ``/allOf``)."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in loc.split("/")[1:]]
    node = resolve_pointer(root, parts, MISSING)
    if node is False:
        return [loc]
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    return [pointer([*parts, k]) for k, v in items if v is False]


def _classify(
    root: Any, err: Any, rules: list[ResidualRule]
) -> tuple[list[Violation], list[Violation]]:
    """(flagged, uncovered) violations behind one jsonschema error."""
    trail = schema_trail(root, err.absolute_schema_path)
    loc = trail[-1]
    inst = pointer(err.absolute_path)
    rule = next((r for p in reversed(trail) if (r := _covering(p, rules))), None)
    if rule is None and err.validator is None:  # a false subschema somewhere below loc
        rule = next((r for f in _false_below(root, loc) if (r := _covering(f, rules))), None)
    if rule is not None:
        v = Violation(inst, str(err.validator), loc, err.message[:300], rule.pointer)
        return [v], []
    if err.validator in ("anyOf", "oneOf") and err.context:
        by_branch: dict[Any, list[Any]] = {}
        for sub in err.context:
            by_branch.setdefault(sub.relative_schema_path[0], []).append(sub)
        for subs in by_branch.values():
            flagged: list[Violation] = []
            clean = True
            for sub in subs:
                f, u = _classify(root, sub, rules)
                flagged += f
                if u:
                    clean = False
                    break
            if clean:
                return flagged, []
    return [], [Violation(inst, str(err.validator), loc, err.message[:300])]


def check_residual(original: Any, rules: list[ResidualRule], instance: Any) -> ResidualCheck:
    """Check ``instance`` against the residual of ``original`` (see module doc)."""
    out = ResidualCheck()
    for err in validator(original).iter_errors(instance):
        flagged, uncovered = _classify(original, err, rules)
        out.flagged += flagged
        out.uncovered += uncovered
    return out
