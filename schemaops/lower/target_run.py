"""``lower_registry_target``: lower a registry for a hosted provider, prove each schema, write.

Per schema: ``schemaops.lower.targets.lower_for_target`` (rewrite, then re-judge the served
schema with the provider's table: anything it still refuses or ignores is a problem, a
restriction it documents without saying what the API does is served labelled ``unproven``),
then the differential proof. The provider's own enforcement cannot be called offline, so the
served side is jsonschema on the served schema, read as the provider's contract (it refuses
what the served schema refuses). Instances and where they come from:

- valid ones generated from the original (hypothesis-jsonschema) and the registry's valid
  examples: mapped into the served shape (``to_served``: absent optional -> null, root
  wrapped), each must be accepted by the served schema (unless every refusal is a keyword a
  narrowing wrote) and map back (``to_original``) to itself unless a narrowing says it cannot;
- ones generated from the served schema, mutations of every set, and the invalid examples:
  each the served schema accepts, mapped back, is accepted by the original or flagged by the
  residual (``check_residual``), with no failure left uncovered.

So: served accepts and the residual passes <=> the original accepts. No instance on a side
(or past the deadline) is ``unproven``, never ok. Any failure is a problem: not lowered.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemaops.compare.instances import validator
from schemaops.errors import InputError
from schemaops.lower.outfiles import REPORT_DIR, out_paths
from schemaops.lower.prove import (
    INSTANCE_TIMEOUT_S,
    Differential,
    generable,
    mutations,
    narrowing_marks,
    refused_only_by,
)
from schemaops.lower.residual import check_residual
from schemaops.lower.run import check_out
from schemaops.lower.targets import TargetLowering, lower_for_target
from schemaops.providers import TABLES, parse_targets
from schemaops.registry.model import canonical_text, content_hash
from schemaops.strings import truncate
from schemaops.watchdog import WatchdogTimeout, armed, watched


def _short(x: Any) -> str:
    return truncate(json.dumps(x, ensure_ascii=False, default=str), 160, "…")


@dataclass
class TargetCase:
    """One schema lowered for one provider, and its proof."""

    name: str
    tl: TargetLowering
    original_hash: str
    diff: Differential | None = None
    problems: list[str] = field(default_factory=list)
    doc: Any = None

    @property
    def lowered_ok(self) -> bool:
        return not self.problems

    @property
    def unproven(self) -> list[str]:
        """Why the label has no evidence: a restriction the provider documents left in the
        served schema (what the API does with it is unknown, so the differential, which reads
        the served schema as enforced, proves nothing about it), no differential, or one
        without instances on a side or past its deadline."""
        lw = self.tl.lowered
        restricted = list(self.tl.unproven)
        if lw.served == lw.original and not lw.rewrites:
            return restricted
        if self.diff is None:
            return [*restricted, "no differential check (--generate 0)"]
        return [*restricted, *(f"differential: {u}" for u in self.diff.unproven)]

    @property
    def proven(self) -> bool:
        """Lowered, and its label has evidence (a differential, or nothing rewritten)."""
        return self.lowered_ok and not self.unproven

    @property
    def exactness(self) -> str:
        return "unproven" if self.unproven else self.tl.lowered.exactness

    def to_dict(self) -> dict[str, Any]:
        lw = self.tl.lowered
        sent = lw.served  # what the application sends: the served file
        return {
            "schema": self.name,
            "lowered": self.lowered_ok,
            "target": self.tl.target,
            "original_hash": self.original_hash,
            "served_hash": content_hash(sent),
            "served_wire": canonical_text(sent),
            "exactness": self.exactness,
            "claimed": lw.exactness,
            "unproven": self.unproven,
            "wrapped_in": "value" if self.tl.wrapped else None,
            "null_means_absent": self.tl.null_means_absent,
            "rewrites": [r.to_dict() for r in lw.rewrites],
            "residual": [r.to_dict() for r in lw.residual],
            "served_verdict": self.tl.verdict.to_dict() if self.tl.verdict else None,
            "differential": self.diff.to_dict() if self.diff else None,
            "problems": self.problems,
        }


@dataclass
class TargetReport:
    target: str
    registry: str
    cases: list[TargetCase]
    out: str | None = None
    #: ``lower.toolsets.ToolSetCase`` per registry tool set (all, or the one NAME named)
    toolsets: list[Any] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every schema and tool set lowered and proven: a lowered schema without evidence
        (``unproven``: ``--generate 0``, no instance generated, the deadline) is served but
        does not pass."""
        return all(c.proven for c in self.cases) and all(t.proven for t in self.toolsets)

    @property
    def toolsets_not_lowered(self) -> list[str]:
        return [t.toolset for t in self.toolsets if not t.lowered_ok]

    @property
    def not_lowered(self) -> list[str]:
        return [c.name for c in self.cases if not c.lowered_ok]

    @property
    def unproven(self) -> list[str]:
        """Names lowered (served) whose label has no evidence."""
        return [c.name for c in self.cases if c.lowered_ok and c.unproven]

    @property
    def restricted(self) -> list[str]:
        """Names served with a restriction the provider documents without saying what the API
        does with it (``TargetLowering.unproven``): no run of ``lower`` proves those."""
        return [c.name for c in self.cases if c.lowered_ok and c.tl.unproven]

    def to_dict(self) -> dict[str, Any]:
        t = TABLES[self.target]
        return {
            "target": self.target,
            "registry": self.registry,
            "out": self.out,
            "passed": self.passed,
            "schemas": len(self.cases),
            "proven": sum(1 for c in self.cases if c.proven),
            "not_lowered": len(self.not_lowered),
            "unproven": len(self.unproven),
            "table": {"target": t.target, "version": t.version, "api": t.api},
            "cases": [c.to_dict() for c in self.cases],
            "toolsets": [t.to_dict() for t in self.toolsets],
        }


def prove_target(
    tl: TargetLowering,
    n: int = 25,
    valid: list[Any] = (),  # type: ignore[assignment]
    invalid: list[Any] = (),  # type: ignore[assignment]
    max_time_s: float = 10.0,
    deadline_s: float | None = None,
) -> Differential:
    """The differential of a provider lowering (see module doc)."""
    from schemaops.compare.generate import GenerationError, generate_valid

    out = Differential()
    t_end = None if deadline_s is None else time.monotonic() + deadline_s

    def left() -> float:
        return math.inf if t_end is None else t_end - time.monotonic()

    lw = tl.lowered
    original, served = lw.original, lw.served
    v_orig, v_served = validator(original), validator(served)
    marks = narrowing_marks(lw)
    rules = tl.check_rules
    lossy = any(r.rule == "optional-to-required" for r in lw.narrowings)

    gen: dict[str, list[Any]] = {"original": [], "served": []}
    for label, schema in (("original", original), ("served", served)):
        budget = min(max_time_s, left())
        if budget <= 0:
            break
        try:
            check = validator(schema)
            found = generate_valid(generable(schema), n, max_time_s=budget)
            gen[label] += [x for x in found if check.is_valid(x)]
        except GenerationError as exc:
            out.notes.append(f"no instances generated from the {label}: {exc}"[:300])
    out.from_original, out.from_served = len(gen["original"]), len(gen["served"])
    if not (served == original and not lw.rewrites):
        for count, label in ((out.from_original, "original"), (out.from_served, "served")):
            if not count:
                out.unproven.append(f"no instance generated from the {label} schema")

    def valid_one(x: Any, what: str) -> None:
        y = tl.to_served(x)
        if not v_served.is_valid(y):
            if not (marks and refused_only_by(v_served, y, marks)):
                out.failures.append(
                    f"{what} valid for the original, refused by served: {_short(y)}"
                )
            return
        if not lossy and tl.to_original(y) != x:
            out.failures.append(f"{what} does not map back to itself: {_short(x)}")

    def served_one(y: Any, what: str) -> None:
        if not v_served.is_valid(y):
            return
        out.served_accepts += 1
        z = tl.to_original(y)
        if v_orig.is_valid(z):
            return
        rc = check_residual(original, rules, z)
        if rc.uncovered:
            where = ", ".join(f"{u.keyword} at {u.schema_pointer}" for u in rc.uncovered[:3])
            out.failures.append(
                f"{what} accepted by served, invalid ({where}), not in the residual: {_short(z)}"
            )
        else:
            out.residual_flagged += 1

    def original_shaped(x: Any, what: str) -> None:
        y = tl.to_served(x)
        if v_orig.is_valid(x):
            valid_one(x, what)
        else:
            served_one(y, what)

    def jobs() -> Iterator[tuple[Callable[[Any, str], None], Any, str]]:
        for x in [*gen["original"], *valid]:
            yield valid_one, x, "valid"
        for y in gen["served"]:
            yield served_one, y, "generated from served"
        for x in invalid:
            yield original_shaped, x, "invalid example"
        for x in [*gen["original"], *valid]:
            for m in mutations(x):
                out.mutants += 1
                yield original_shaped, m, "mutant"
        for y in gen["served"]:
            for m in mutations(y):
                out.mutants += 1
                yield served_one, m, "served mutant"

    with armed(INSTANCE_TIMEOUT_S):
        for fn, x, what in jobs():
            if left() <= 0:
                out.unproven.append(
                    f"the differential ran past its deadline ({deadline_s:g} s, --timeout)"
                )
                break
            try:
                with watched():
                    fn(x, what)
            except WatchdogTimeout:
                out.failures.append(f"checking {_short(x)} ran past {INSTANCE_TIMEOUT_S:g} s")
    return out


def compared(diff: Differential) -> int:
    """Instances the differential compared (generated on both sides plus mutants)."""
    return diff.from_original + diff.from_served + diff.mutants


def _write(out: Path, case: TargetCase, valid: list[Any], invalid: list[Any]) -> None:
    """NAME.json (served: exactly what is sent), NAME.examples.json (the examples in the served
    shape) and .lower/NAME.json; a case not lowered gets its report only, and an earlier
    run's served file for it is removed."""
    out.mkdir(parents=True, exist_ok=True)
    (out / REPORT_DIR).mkdir(exist_ok=True)
    paths = out_paths(out, case.name)
    files: dict[Path, Any] = {paths.report: case.to_dict()}
    served = [paths.served, paths.examples]
    if case.lowered_ok:
        v_served = validator(case.tl.lowered.served)
        bad = [case.tl.to_served(x) for x in invalid]
        files[served[0]] = case.doc
        files[served[1]] = {
            "valid": [case.tl.to_served(x) for x in valid],
            "invalid": [y for y in bad if not v_served.is_valid(y)],
        }
    else:
        try:  # ours (an earlier lower --target run reported it): never serve a failed schema
            before = json.loads(paths.report.read_text("utf-8"))
        except (OSError, ValueError):
            before = None
        if isinstance(before, dict) and before.get("schema") == case.name and "target" in before:
            for path in served:
                path.unlink(missing_ok=True)
    for path, data in files.items():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)


def lower_registry_target(
    registry: str | Path = "schemas",
    target: str = "openai",
    *,
    name: str | None = None,
    out: str | Path | None = None,
    timeout_s: float = 120.0,
    generate: int = 25,
    progress: Callable[[str], None] | None = None,
) -> TargetReport:
    """Lower (all or one ``name`` of) ``registry`` for a hosted provider; see module doc.
    Raises ``InputError`` (exit 2) for bad options or a registry that cannot be loaded."""
    from schemaops.registry import RegistryError, load_registry

    names = parse_targets([target])
    if len(names) != 1:
        raise InputError("lower targets one provider: give --target once")
    t = names[0]
    if generate < 0 or timeout_s <= 0:
        raise InputError("--generate must be >= 0 and --timeout > 0")
    root = Path(registry)
    if out is not None:  # before any work: not inside the registry, a folder, writable
        check_out(out, root)
    try:
        reg = load_registry(root)
    except RegistryError as exc:
        err = InputError(f"cannot lower registry {root}: {exc}")
        err.problems = exc.problems
        raise err from None
    named_set = name is not None and name in reg.toolsets and name not in reg.schemas
    schemas = [] if named_set else [reg.get(name, True)] if name is not None else list(reg)
    cases: list[TargetCase] = []
    for s in schemas:
        if progress:
            progress(f"lowering {s.name} for {t}")
        tl = lower_for_target(s.bundled(), t, s.name)
        case = TargetCase(s.name, tl, s.hash, problems=list(tl.problems))
        served = tl.lowered.served
        # the served file is exactly what the application sends (a provider refuses keys it
        # does not know, x- keys included); its origin is in .lower/NAME.json
        case.doc = served
        valid, invalid = list(s.valid), list(s.invalid)
        if generate and not case.problems:
            case.diff = prove_target(tl, generate, valid, invalid, deadline_s=timeout_s)
            case.problems += [f"differential: {f}" for f in case.diff.failures[:5]]
        if out is not None:
            _write(Path(out), case, valid, invalid)
        cases.append(case)
    report = TargetReport(t, str(root), cases, str(out) if out is not None else None)
    from schemaops.lower.toolsets import lower_toolset, write_toolset

    for ts in reg.toolsets.values():  # NAME.tools.json: each tool lowered, one request
        if name is not None and not named_set or named_set and ts.name != name:
            continue
        if progress:
            progress(f"lowering tool set {ts.name} for {t}")
        tc = lower_toolset(reg, ts, t, generate=generate, timeout_s=timeout_s)
        if out is not None:
            write_toolset(Path(out), tc)
        report.toolsets.append(tc)
    return report


def print_lower_target(report: TargetReport, file: Any = None) -> None:
    """The terminal report: per schema, verdict, label, rewrites, residual, proof."""
    import sys

    w = (file or sys.stdout).write
    d = report.to_dict()
    tab = d["table"]
    w(f"lower for {report.target} (rules of {tab['version']}; {report.registry})")
    w(f" -> {report.out}\n" if report.out else " (no --out: nothing written)\n")
    for c in d["cases"]:
        mark = "ok" if c["lowered"] else "NOT LOWERED"
        sv = (c["served_verdict"] or {}).get("verdict", "-")
        w(f"\n{c['schema']}: {mark} [{c['exactness']}] served schema {sv} by {report.target}\n")
        w(f"  served wire: {truncate(c['served_wire'], 160, '…')}\n")
        if c["wrapped_in"]:
            w(f"  root wrapped: the answer is {{{c['wrapped_in']!r}: ...}}\n")
        for r in c["rewrites"]:
            w(f"  {r['effect']:<7} {r['rule']:<28} {r['pointer'] or '/'}\n")
        for r in c["residual"]:
            why = truncate(r["reason"], 120)
            w(f"  residual: {r['keyword']} at {r['pointer'] or '/'}: {why}\n")
        diff = c["differential"]
        if diff:
            state = "ok" if diff["ok"] else "FAILED" if diff["failures"] else "UNPROVEN"
            w(
                f"  differential: {diff['from_original']} from original, {diff['from_served']} "
                f"from served, {diff['mutants']} mutants, {diff['residual_flagged']} flagged by "
                f"the residual: {state}\n"
            )
        for why in c["unproven"]:
            w(f"  unproven (not claimed {c['claimed']}): {why}\n")
        for p in c["problems"]:
            w(f"  problem: {p}\n")
    from schemaops.lower.toolsets import toolset_lines

    for tc in report.toolsets:
        w("\n" + "\n".join(toolset_lines(tc)) + "\n")
    w(f"\n{summary_line(report)}\n")


def unproven_line(report: TargetReport) -> str:
    """The gate's message for lowered schemas without proof: how many, which, and what would
    give the evidence (more instances; for a provider restriction, nothing offline)."""
    bad = report.unproven
    restricted = set(report.restricted)
    why = []
    if restricted:
        why.append(
            f"{report.target} documents a restriction left in the served schema of "
            f"{', '.join(sorted(restricted)[:10])}, effect unknown (check --target lists it)"
        )
    if any(n not in restricted for n in bad):
        why.append("--generate N > 0 proves those without a differential")
    parts = []
    if bad:
        parts.append(
            f"{len(bad)} of {len(report.cases)} schema(s) lowered for {report.target} without"
            f" proof (served, labelled unproven; {'; '.join(why)}): {', '.join(bad[:10])}"
        )
    sets = [t.toolset for t in report.toolsets if t.lowered_ok and t.unproven]
    if sets:  # each tool set's report says why (a restriction, or a tool without proof)
        names = ", ".join(sets[:10])
        parts.append(f"tool set(s) lowered for {report.target} without proof: {names}")
    return "lower unproven: " + "; ".join(parts)


def summary_line(report: TargetReport) -> str:
    """``P of N schema(s) lowered for T and proven`` and, when any, how many are lowered
    without proof (served, label ``unproven``) and how many are not lowered."""
    n = len(report.cases)
    proven = sum(1 for c in report.cases if c.proven)
    line = f"{proven} of {n} schema(s) lowered for {report.target} and proven"
    if report.unproven:
        line += f"; {len(report.unproven)} lowered but unproven (served, no exactness claim)"
    if report.not_lowered:
        line += f"; {len(report.not_lowered)} not lowered"
    if report.toolsets:
        ok = sum(1 for t in report.toolsets if t.proven)
        line += f"; {ok} of {len(report.toolsets)} tool set(s) lowered and proven"
    return line
