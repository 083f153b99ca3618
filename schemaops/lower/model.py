"""The exactness model of ``lower``: every rewrite declares its effect, the label follows.

Each ``Rewrite`` says what it does to the set of accepted instances at its pointer (a JSON
pointer in the original schema):

- ``exact``: the served schema accepts there exactly what the original accepts;
- ``widens``: the served schema accepts more there; a residual rule covering the pointer is
  mandatory (``Lowered`` refuses to exist without one: ``UncoveredWidening``), because the
  application must then check what the served schema no longer carries;
- ``narrows``: the served schema accepts less there (some valid outputs cannot be produced);
  ``narrows_to`` names the keyword and value the rewrite wrote into the served schema, so the
  proof (``schemaops.lower.prove``) excuses a valid instance the served schema refuses only
  when every refusal is at such a keyword, never anywhere else.

The case's label is derived from these, never set by hand: ``exact`` when every rewrite is
exact, ``relaxed`` with a widening, ``narrowed`` with a narrowing, ``relaxed+narrowed`` with
both. Why: an application that reads ``exact`` with an empty residual skips its own check,
so a label that a rewrite did not earn lets invalid outputs into production.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from schemaops.lower.residual import ResidualRule
from schemaops.registry.model import canonical_text, content_hash

EXACT, WIDENS, NARROWS = "exact", "widens", "narrows"
EFFECTS = (EXACT, WIDENS, NARROWS)


class UncoveredWidening(ValueError):
    """A widening rewrite without a residual rule that covers it (a lowering bug)."""


@dataclass
class Rewrite:
    """One rewrite applied to the served schema, with its effect at ``pointer``."""

    pointer: str
    rule: str
    effect: str
    detail: str
    #: for a narrowing: {keyword: value} it wrote into the served schema
    narrows_to: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.effect not in EFFECTS:
            raise ValueError(f"rewrite effect must be one of {EFFECTS}, not {self.effect!r}")
        if self.effect == NARROWS and not self.narrows_to:
            raise ValueError(f"a narrowing rewrite ({self.rule}) names what it wrote")

    @property
    def exact(self) -> bool:
        return self.effect == EXACT

    def to_dict(self) -> dict[str, Any]:
        return {
            "pointer": self.pointer,
            "rule": self.rule,
            "exact": self.exact,
            "effect": self.effect,
            "detail": self.detail,
        }


def under(loc: str, prefix: str) -> bool:
    """Whether JSON pointer ``loc`` is ``prefix`` or inside it."""
    return loc == prefix or loc.startswith(prefix + "/")


def check_model(rewrites: list[Rewrite], residual: list[ResidualRule]) -> None:
    """Raise ``UncoveredWidening`` for a widening no residual rule covers, or a residual
    rule no widening rewrite declares (the label would not say ``relaxed``)."""
    for r in rewrites:
        if r.effect == WIDENS and not any(
            under(r.pointer, c) for rule in residual for c in rule.covers
        ):
            raise UncoveredWidening(f"{r.rule} at {r.pointer or '/'} widens without a residual")
    widened = {r.pointer for r in rewrites if r.effect == WIDENS}
    for rule in residual:
        if rule.pointer not in widened:
            raise UncoveredWidening(f"residual rule at {rule.pointer} without a widening rewrite")


@dataclass
class Lowered:
    """A served schema for one backend, what was rewritten, and what the app must check.

    Construction checks the model (``check_model``): every widening is covered."""

    backend: str
    original: Any
    served: Any
    rewrites: list[Rewrite] = field(default_factory=list)
    residual: list[ResidualRule] = field(default_factory=list)
    #: what the application should know that is no rewrite (a misspelled keyword, a schema
    #: served as it is and why)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_model(self.rewrites, self.residual)

    @property
    def exact(self) -> bool:
        """The served schema accepts exactly what the original accepts."""
        return all(r.exact for r in self.rewrites)

    @property
    def exactness(self) -> str:
        """Derived from the rewrites' effects: ``exact``, ``relaxed``, ``narrowed`` or
        ``relaxed+narrowed``."""
        effects = {r.effect for r in self.rewrites}
        parts = [p for p, e in (("relaxed", WIDENS), ("narrowed", NARROWS)) if e in effects]
        return "+".join(parts) or "exact"

    @property
    def narrowings(self) -> list[Rewrite]:
        return [r for r in self.rewrites if r.effect == NARROWS]

    @property
    def wire(self) -> str:
        """The served schema's wire string (the registry's canonical text: the cache key)."""
        return canonical_text(self.served)

    @property
    def hash(self) -> str:
        return content_hash(self.served)
