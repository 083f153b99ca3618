"""The differential half of the proof: generated and mutated instances on both schemas.

For a ``Lowered`` schema, ``differential`` checks with jsonschema (formats asserted by
``schemaops.formats``):

- every instance hypothesis-jsonschema generates from the *original* is valid under the
  served schema (the served schema does not steer away from valid outputs), unless a
  rewrite is reported as narrowing;
- every instance generated from the *served* schema, and every mutation of either set and of
  the registry examples, that the served schema accepts is accepted by the original or
  flagged by the residual (``check_residual``), with no failure left uncovered.

Mutations are small edits a model could make: drop or add a key, duplicate or drop an array
item, nudge a number, change a string, swap a value's type.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from schemaops.compare.instances import validator
from schemaops.lower.passes import Lowered
from schemaops.lower.residual import check_residual
from schemaops.strings import truncate
from schemaops.watchdog import WatchdogTimeout, armed, watched

# Seconds one instance's checks (served, original, residual) may take: a pattern that
# backtracks catastrophically on a generated or mutated string must not hang ``lower``.
INSTANCE_TIMEOUT_S = 2.0


@dataclass
class Differential:
    """Counts and the first failures of one differential run."""

    from_original: int = 0
    from_served: int = 0
    mutants: int = 0
    served_accepts: int = 0
    residual_flagged: int = 0
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    # key by key, each key this command's --json contract (the to_dict look-alikes: probe/run.py)
    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "from_original": self.from_original,
            "from_served": self.from_served,
            "mutants": self.mutants,
            "served_accepts": self.served_accepts,
            "residual_flagged": self.residual_flagged,
            "failures": self.failures[:10],
            "notes": self.notes,
        }


def _short(x: Any) -> str:
    s = json.dumps(x, ensure_ascii=False, default=str)
    return truncate(s, 160, "…")


def mutations(value: Any, limit: int = 40) -> Iterator[Any]:
    """Small edits of ``value`` at every level (bounded by ``limit``)."""
    count = 0

    def edits(v: Any) -> Iterator[Any]:
        if isinstance(v, dict):
            for k in list(v):
                d = dict(v)
                del d[k]
                yield d
            yield {**v, "zz_extra": 1}
            for k in list(v):
                for sub in edits(v[k]):
                    yield {**v, k: sub}
        elif isinstance(v, list):
            if v:
                yield [*v, copy.deepcopy(v[0])]
                yield v[1:]
            yield []
            for i, item in enumerate(v):
                for sub in edits(item):
                    yield [*v[:i], sub, *v[i + 1 :]]
        elif isinstance(v, bool):
            yield not v
        elif isinstance(v, int):
            yield from (v + 1, v - 1, v * 10 + 7, -v - 1, str(v))
        elif isinstance(v, float):
            yield from (v + 0.5, -v, v * 100, 0)
        elif isinstance(v, str):
            yield from (v + "x", v[:-1], "", v.upper(), v.replace("-", ""), "2026-02-30", 3)
        elif v is None:
            yield 0

    for m in edits(value):
        yield m
        count += 1
        if count >= limit:
            return


def generable(schema: Any) -> Any:
    """``schema`` with known formats spelled as their patterns, for generation only.

    hypothesis-jsonschema does not generate ``uuid`` or ``date`` strings (it fills them with
    random text, which jsonschema then rejects, leaving no instances); a pattern it can
    generate from. Every generated instance is still checked against the real schema.
    """
    from schemaops.lower.patterns import FORMAT_PATTERNS

    if isinstance(schema, list):
        return [generable(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    values = ("enum", "const", "default", "examples")
    out = {
        k: generable(v) if isinstance(v, (dict, list)) and k not in values else v
        for k, v in schema.items()
    }
    fmt = out.get("format")
    if isinstance(fmt, str) and fmt in FORMAT_PATTERNS and "pattern" not in out:
        out = {("pattern" if k == "format" else k): v for k, v in out.items()}
        out["pattern"] = FORMAT_PATTERNS[fmt]
    return out


def differential(
    lowered: Lowered, n: int = 25, examples: list[Any] = (), max_time_s: float = 10.0
) -> Differential:  # type: ignore[assignment]
    """Run the differential check (see module doc); generation needs hypothesis-jsonschema."""
    from schemaops.compare.generate import GenerationError, generate_valid

    out = Differential()
    original, served = lowered.original, lowered.served
    v_orig, v_served = validator(original), validator(served)
    narrowed = "narrowed" in lowered.exactness
    gen_orig: list[Any] = []
    gen_served: list[Any] = []
    for schema, sink, label in ((original, gen_orig, "original"), (served, gen_served, "served")):
        try:
            check = validator(schema)
            found = generate_valid(generable(schema), n, max_time_s=max_time_s)
            sink += [x for x in found if check.is_valid(x)]
        except GenerationError as exc:
            out.notes.append(f"no instances generated from the {label}: {exc}"[:300])
    out.from_original, out.from_served = len(gen_orig), len(gen_served)

    def refused_by_served(x: Any) -> None:
        if not v_served.is_valid(x) and not narrowed:
            out.failures.append(f"valid for the original, refused by the served: {_short(x)}")

    def judge(x: Any, what: str) -> None:
        try:
            accepted = v_served.is_valid(x)
        except WatchdogTimeout:
            raise  # out of time: ``bounded`` says so
        except Exception as exc:  # jsonschema failing on an instance: say so, do not hide it
            out.failures.append(f"{what}: served validator failed: {exc}"[:300])
            return
        if not accepted:
            if v_orig.is_valid(x) and not narrowed:
                out.failures.append(
                    f"{what} valid for the original, refused by served: {_short(x)}"
                )
            return
        out.served_accepts += 1
        if v_orig.is_valid(x):
            return
        rc = check_residual(original, lowered.residual, x)
        if rc.uncovered:
            where = ", ".join(f"{u.keyword} at {u.schema_pointer}" for u in rc.uncovered[:3])
            out.failures.append(
                f"{what} accepted by served, invalid ({where}), not in the residual: {_short(x)}"
            )
        else:
            out.residual_flagged += 1

    def bounded(fn: Any, x: Any, *args: Any) -> None:
        """One instance's checks under the watchdog: out of time is a failure (unproven)."""
        try:
            with watched():
                fn(x, *args)
        except WatchdogTimeout:
            out.failures.append(
                f"checking {_short(x)} ran past {INSTANCE_TIMEOUT_S:g} s "
                "(a backtracking pattern?): unproven"
            )

    # armed only after generation: generate_valid keeps its own SIGALRM budget
    with armed(INSTANCE_TIMEOUT_S):
        for x in gen_orig:
            bounded(refused_by_served, x)
        for x in gen_served:
            bounded(judge, x, "generated")
        for base in [*gen_orig, *gen_served, *examples]:
            for m in mutations(base):
                out.mutants += 1
                bounded(judge, m, "mutant")
    return out
