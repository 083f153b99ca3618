"""The differential half of the proof: generated and mutated instances on both schemas.

For a ``Lowered`` schema, ``differential`` checks with jsonschema (formats asserted by
``schemaops.formats``):

- every instance hypothesis-jsonschema generates from the *original* is valid under the
  served schema (the served schema does not steer away from valid outputs), unless every
  reason it is refused is a keyword a narrowing rewrite wrote (``refused_only_by``: a
  narrowing excuses refusals at its own pointers, never elsewhere in the schema);
- every instance generated from the *served* schema, and every mutation of either set and of
  the registry examples, that the served schema accepts is accepted by the original or
  flagged by the residual (``check_residual``), with no failure left uncovered.

Mutations are small edits a model could make: drop or add a key, duplicate or drop an array
item, nudge a number, change a string, swap a value's type.
"""

from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from schemaops.compare.instances import validator
from schemaops.lower.model import Lowered
from schemaops.lower.residual import check_residual
from schemaops.strings import truncate
from schemaops.watchdog import WatchdogTimeout, armed, watched

# Seconds one instance's checks (served, original, residual) may take: a pattern that
# backtracks catastrophically on a generated or mutated string must not hang ``lower``.
INSTANCE_TIMEOUT_S = 2.0
#: the most ``enum`` values generation draws from (see ``generable``)
MAX_GENERATION_ENUM = 1000


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
    #: why the run is no evidence (no instance on a side, out of time): not ok, not failed
    unproven: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No failure, and instances on both sides: a run with nothing in it proves nothing."""
        return not self.failures and not self.unproven

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
            "unproven": self.unproven,
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
    generate from. An ``enum`` longer than ``MAX_GENERATION_ENUM`` is cut to its first values:
    hypothesis-jsonschema canonicalises a schema before its time budget starts, and on a
    300k-value enum that alone ran for minutes. Every generated instance is still checked
    against the real schema.
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
    if isinstance(out.get("enum"), list) and len(out["enum"]) > MAX_GENERATION_ENUM:
        out["enum"] = out["enum"][:MAX_GENERATION_ENUM]
    fmt = out.get("format")
    if isinstance(fmt, str) and fmt in FORMAT_PATTERNS and "pattern" not in out:
        out = {("pattern" if k == "format" else k): v for k, v in out.items()}
        out["pattern"] = FORMAT_PATTERNS[fmt]
    return out


def narrowing_marks(lowered: Lowered) -> set[tuple[str, str]]:
    """(keyword, canonical value) of what each narrowing rewrite wrote into the served
    schema (``Rewrite.narrows_to``)."""
    return {
        (k, json.dumps(v, sort_keys=True))
        for r in lowered.narrowings
        for k, v in (r.narrows_to or {}).items()
    }


def refused_only_by(check: Any, x: Any, marks: set[tuple[str, str]]) -> bool:
    """Whether every reason ``check`` (the served validator) refuses ``x`` is a keyword a
    narrowing rewrite wrote (``marks``): narrowing excuses a refusal at its own pointers
    only. A union's failure is excused when some branch fails only there."""

    def excused(err: Any) -> bool:
        if (str(err.validator), json.dumps(err.validator_value, sort_keys=True)) in marks:
            return True
        if err.validator == "anyOf" and err.context:
            branches: dict[Any, list[Any]] = {}
            for sub in err.context:
                branches.setdefault(sub.relative_schema_path[0], []).append(sub)
            return any(all(excused(e) for e in errs) for errs in branches.values())
        return False

    errors = list(check.iter_errors(x))
    return bool(errors) and all(excused(e) for e in errors)


def differential(
    lowered: Lowered,
    n: int = 25,
    examples: list[Any] = (),  # type: ignore[assignment]
    max_time_s: float = 10.0,
    deadline_s: float | None = None,
) -> Differential:
    """Run the differential check (see module doc); generation needs hypothesis-jsonschema.

    ``deadline_s`` bounds the whole run (generation, every instance and mutant): past it the
    run stops and is ``unproven`` (a 300k-value enum once ran unbounded past 500 s). A side
    that yields no instance (a ``GenerationError``, or none valid) leaves the run
    ``unproven``, never ok: zero instances are no evidence."""
    from schemaops.compare.generate import GenerationError, generate_valid

    out = Differential()
    t_end = None if deadline_s is None else time.monotonic() + deadline_s

    def left() -> float:
        return math.inf if t_end is None else t_end - time.monotonic()

    original, served = lowered.original, lowered.served
    v_orig, v_served = validator(original), validator(served)
    marks = narrowing_marks(lowered)

    def narrowed(x: Any) -> bool:
        return bool(marks) and refused_only_by(v_served, x, marks)

    gen_orig: list[Any] = []
    gen_served: list[Any] = []
    for schema, sink, label in ((original, gen_orig, "original"), (served, gen_served, "served")):
        budget = min(max_time_s, left())
        if budget <= 0:
            break
        try:
            check = validator(schema)
            found = generate_valid(generable(schema), n, max_time_s=budget)
            sink += [x for x in found if check.is_valid(x)]
        except GenerationError as exc:
            out.notes.append(f"no instances generated from the {label}: {exc}"[:300])
    out.from_original, out.from_served = len(gen_orig), len(gen_served)
    if not (lowered.served == original and not lowered.rewrites):  # identity needs no proof
        for count, label in ((out.from_original, "original"), (out.from_served, "served")):
            if not count:
                out.unproven.append(f"no instance generated from the {label} schema")

    def refused_by_served(x: Any) -> None:
        if not v_served.is_valid(x) and not narrowed(x):
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
            if v_orig.is_valid(x) and not narrowed(x):
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

    def jobs() -> Iterator[tuple[Any, Any, tuple[Any, ...]]]:
        for x in gen_orig:
            yield refused_by_served, x, ()
        for x in gen_served:
            yield judge, x, ("generated",)
        for base in [*gen_orig, *gen_served, *examples]:
            for m in mutations(base):
                out.mutants += 1
                yield judge, m, ("mutant",)

    # armed only after generation: generate_valid keeps its own SIGALRM budget
    with armed(INSTANCE_TIMEOUT_S):
        for fn, x, args in jobs():
            if left() <= 0:
                out.unproven.append(
                    f"the differential ran past its deadline ({deadline_s:g} s, --timeout) "
                    "before every instance was checked"
                )
                break
            bounded(fn, x, *args)
    return out
