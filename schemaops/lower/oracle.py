"""The oracle of ``lower``'s exactness claims, for tests and benches over whole corpora.

``Oracle(lowered).problem(x)`` says whether a lowering disagrees with its original on one
instance: ``(served accepts AND residual passes) == (original accepts)``, every ``exact``
claim holds exactly, and a valid instance the served schema refuses is excused only where a
narrowing rewrite wrote the refusing keyword (``prove.refused_only_by``).
``variants(caps, schema)`` forces capabilities each way, as data: the measured table, every
probe ``ignored``, every probe ``refused``, and each probe that concerns a keyword of the
schema ``ignored`` and then ``refused`` on its own, so every pass and merge path runs, not
only those today's libraries reach.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from schemaops.compare.instances import validator
from schemaops.lower.model import Lowered
from schemaops.lower.prove import narrowing_marks, refused_only_by
from schemaops.lower.residual import check_residual

#: probe keys that concern keywords their name does not spell
_ALSO = {
    "object.required_unlisted": {"required"},
    "anyOf.siblings": {"anyOf", "oneOf"},
    "pattern.anychar": {"pattern", "format"},
    "pattern.jsonchar": {"pattern", "format"},
}


class Unjudgeable(Exception):
    """jsonschema cannot evaluate the original on the instance (e.g. a ``\\p`` escape
    Python's ``re`` does not know): no verdict either way."""


class Oracle:
    """One lowering's judge; validators built once."""

    def __init__(self, lw: Lowered) -> None:
        self.lw = lw
        self.orig = validator(lw.original)
        self.served = validator(lw.served)
        self.marks = narrowing_marks(lw)

    def problem(self, x: Any) -> str | None:
        """Why the lowering disagrees with the original on ``x`` (None: it agrees). Raises
        ``Unjudgeable`` when the original cannot be evaluated on ``x``."""
        lw = self.lw
        try:
            orig = self.orig.is_valid(x)
        except Exception as exc:
            raise Unjudgeable(str(exc)[:200]) from None
        shown = json.dumps(x, default=str)[:120]
        try:
            served = self.served.is_valid(x)
        except Exception as exc:  # a broken served schema (a dangling $ref) is a finding
            return f"the served schema cannot be evaluated ({type(exc).__name__}): {shown}"
        if lw.exact and orig != served:
            return f"claimed exact, original {orig}, served {served}: {shown}"
        if orig and not served and not refused_only_by(self.served, x, self.marks):
            return f"valid, refused by the served schema (no narrowing there): {shown}"
        if served and not orig:
            res = check_residual(lw.original, lw.residual, x)
            if res.uncovered or not res.flagged:
                where = ", ".join(f"{u.keyword} at {u.schema_pointer}" for u in res.uncovered[:2])
                return f"invalid, accepted by served, residual misses it ({where}): {shown}"
        return None


def keywords(node: Any, out: set[str] | None = None, depth: int = 0) -> set[str]:
    """Every object key in ``node`` (a superset of its keywords; bounded depth)."""
    out = set() if out is None else out
    if depth > 100:
        return out
    if isinstance(node, dict):
        out.update(node)
        for v in node.values():
            keywords(v, out, depth + 1)
    elif isinstance(node, list):
        for v in node:
            keywords(v, out, depth + 1)
    return out


def concerns(key: str, kws: set[str]) -> bool:
    """Whether probe ``key`` concerns one of the keywords ``kws`` (``schema.*``: any)."""
    if key.startswith("schema."):
        return True
    return bool((set(key.split(".")) | _ALSO.get(key, set())) & kws)


def variants(
    caps: dict[str, str], schema: Any, each: bool = True
) -> Iterator[tuple[str, dict[str, str]]]:
    """(label, capabilities) to lower ``schema`` with (see module doc); ``each=False``
    leaves out the per-probe forcing."""
    yield "measured", caps
    yield "all ignored", dict.fromkeys(caps, "ignored")
    yield "all refused", dict.fromkeys(caps, "refused")
    if not each:
        return
    kws = keywords(schema)
    for key in caps:
        if concerns(key, kws):
            for cap in ("ignored", "refused"):
                if caps[key] != cap:
                    yield f"{key}={cap}", {**caps, key: cap}


class Tally:
    """Counts over many lowerings and the first disagreements (what a bench prints)."""

    def __init__(self) -> None:
        self.schemas = 0
        self.lowerings = 0
        self.instances = 0
        self.unjudgeable = 0
        self.labels: dict[str, int] = {}
        self.problems: list[str] = []

    def to_dict(self) -> dict[str, Any]:
        return {
            "schemas": self.schemas,
            "lowerings": self.lowerings,
            "instances": self.instances,
            "unjudgeable": self.unjudgeable,
            "labels": dict(sorted(self.labels.items())),
            "disagreements": len(self.problems),
            "first": self.problems[:20],
        }


def judge(
    tally: Tally,
    name: str,
    schema: Any,
    instances: list[Any],
    caps: dict[str, str],
    backend: str,
    each: bool = True,
) -> None:
    """Lower ``schema`` under every capability variant and judge each instance (see module
    doc); an exception while lowering is a disagreement, never skipped."""
    from schemaops.lower.passes import lower_schema

    tally.schemas += 1
    for label, c in variants(caps, schema, each):
        tally.lowerings += 1
        where = f"{name} [{backend}, {label}]"
        try:
            lw = lower_schema(schema, c, backend)
            oracle = Oracle(lw)
        except Exception as exc:  # a crash is a finding, not a skip
            tally.problems.append(f"{where}: {type(exc).__name__}: {exc}"[:300])
            continue
        tally.labels[lw.exactness] = tally.labels.get(lw.exactness, 0) + 1
        for x in instances:
            try:
                why = oracle.problem(x)
            except Unjudgeable:
                tally.unjudgeable += 1
                continue
            tally.instances += 1
            if why:
                tally.problems.append(f"{where}: {why}")


def instances_for(schema: Any, n: int, mutants: int, max_time_s: float) -> list[Any]:
    """Up to ``n`` instances generated from ``schema`` (hypothesis-jsonschema, bounded by
    ``max_time_s``) and ``mutants`` small edits of each; empty when none can be generated."""
    from schemaops.compare.generate import GenerationError, generate_valid
    from schemaops.lower.prove import generable, mutations

    try:
        found = generate_valid(generable(schema), n, max_time_s=max_time_s)
    except (GenerationError, RecursionError):
        return []
    out = list(found)
    for x in found:
        out += list(mutations(x, mutants))
    return out
