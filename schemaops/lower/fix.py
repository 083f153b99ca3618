"""``check --fix``: the gate's way into ``lower``, gated on what would be deployed.

1. ``check`` the registry on the backend (on ``--engine``'s rules when given);
2. ``lower`` the schemas that failed, for that backend (and engine), and prove each;
3. write ``--out``: a copy of the registry in which every failed schema is replaced by its
   proven served schema; a schema that could not be lowered is left out (its report is in
   ``OUT/.lower/NAME.json``), never written as if it were served;
4. ``check`` ``--out`` with the same options, also when nothing failed (``--out`` may hold
   files of an earlier run: what the gate passes must be the folder as it is).

``--out`` is created and a file written in it *before* step 1 (``schemaops.outdir``): a folder
that cannot be written is exit 2 at once, not a traceback after the work.

Tool sets (``NAME.tools.json``) are gated as ``check`` gates them, in the same
``tool_choice`` modes, before and in ``--out``: copied as they are (``lower`` rewrites no tool
set), so a tool whose parameters ``$ref`` a registry schema is judged in ``--out`` over that
schema's lowered form, and a tool set that still fails keeps the gate failing (with what to
do: ``TOOLSET_ADVICE``), never dropped from the verdict.

``passed`` (exit 0) means: every schema of the registry is in ``--out``, ``--out`` holds no
schema this run did not write (``stale``: one the registry no longer has, or an earlier
run's file for a schema that now could not be lowered; reported, never deleted: ``--out`` may
be any folder) and ``--out`` passes the gate. Exit 1 otherwise: a schema could not be lowered,
a lowered one still fails the gate, or ``--out`` holds stale schemas. The original registry's
failures are reported (``before``) but are not the verdict: ``--fix`` gates the folder a
deploy would use.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemaops.errors import InputError
from schemaops.lower.run import REPORT_DIR, LowerReport, check_out, lower_registry
from schemaops.registry.documents import format_problem

#: what the summary tells a tool set that still fails in ``--out`` (``lower`` rewrites schemas,
#: not tool sets: a tool's parameters reach it only as a registry schema the tool ``$ref``s)
TOOLSET_ADVICE = (
    "check --fix lowers registry schemas, not tool sets: move a failing tool's parameters into"
    ' a registry schema (NAME.json) and give the tool {"$ref": "NAME.json"}, so that'
    " check --fix lowers it and the tool set in --out serves the lowered form"
)


def toolset_case(case: Any) -> bool:
    """Whether a check case is a tool set's (``NAME.tools[ENGINE MODE]``, ``check/toolsets.py``)
    rather than a registry schema's."""
    return "toolset" in case.result


@dataclass
class FixReport:
    """``before`` (the registry's check), ``lowered`` (None when nothing failed), ``after``
    (the check of ``out``), ``stale`` (schemas in ``out`` this run did not write)."""

    before: Any  # CheckReport
    lowered: LowerReport | None
    after: Any  # CheckReport
    out: str
    stale: list[str] = field(default_factory=list)
    #: tool sets not written to ``out`` -> why (the registry's first problem with the copy
    #: there): a tool ``$ref``s a schema that could not be lowered (so is not in ``out``), or
    #: whose lowered form is no longer a tool's parameters (a root without ``type: object``)
    toolsets_left_out: dict[str, str] = field(default_factory=dict)

    @property
    def not_lowered(self) -> list[str]:
        return [c.name for c in self.lowered.cases if not c.lowered_ok] if self.lowered else []

    @property
    def fixed(self) -> list[str]:
        bad = {c.schema for c in self.after.failed}
        done = [c.name for c in self.lowered.cases if c.lowered_ok] if self.lowered else []
        return [n for n in done if n not in bad]

    @property
    def passed(self) -> bool:
        return (
            not self.not_lowered
            and not self.toolsets_left_out
            and not self.stale
            and bool(self.after.cases)  # a gate over nothing passed nothing
            and self.after.passed
        )

    def summary(self) -> str:
        """One paragraph a CI log shows: what failed, what was fixed, what the gate says."""
        failed = [c.schema for c in self.before.failed]
        lines = [
            f"check --fix: {len(failed)} of {len(self.before.cases)} schema(s) failed on "
            f"{self.before.backend}" + (f": {', '.join(failed[:10])}" if failed else "")
        ]
        sets = [c.schema for c in self.after.failed if toolset_case(c)]
        if sets:
            lines.append(f"  tool sets failing in {self.out}: {', '.join(sets)}; {TOOLSET_ADVICE}")
        if self.fixed:
            lines.append(f"  lowered, proven and passing in {self.out}: {', '.join(self.fixed)}")
        for case in self.lowered.cases if self.lowered else []:
            if case.lowered_ok and case.lowered.residual:
                rules = ", ".join(f"{r.pointer} {r.keyword}" for r in case.lowered.residual)
                lines.append(f"  residual of {case.name} (check after decoding): {rules}")
        if self.not_lowered:
            lines.append(
                f"  cannot be lowered (not written to {self.out}; reports in "
                f"{self.out}/{REPORT_DIR}/): {', '.join(self.not_lowered)}"
            )
        for name, why in self.toolsets_left_out.items():
            lines.append(
                f"  tool set {name} not written to {self.out} (it would not load there): {why}"
            )
        if self.stale:
            lines.append(
                f"  in {self.out} but not written by this run (not in the registry, or left "
                f"by an earlier run; remove them): {', '.join(self.stale[:10])}"
                + (f", {len(self.stale) - 10} more" if len(self.stale) > 10 else "")
            )
        still = [c.schema for c in self.after.failed]
        if still:
            lines.append(f"  still failing the gate in {self.out}: {', '.join(still)}")
        verdict = "PASSED" if self.passed else "FAILED"
        lines.append(f"  gate on {self.out}: {verdict} (exit {0 if self.passed else 1})")
        return "\n".join(lines)

    # key by key, each key this command's --json contract (the to_dict look-alikes: probe/run.py)
    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "out": self.out,
            "fixed": self.fixed,
            "not_lowered": self.not_lowered,
            "stale": self.stale,
            "toolsets_left_out": self.toolsets_left_out,
            "before": self.before.to_dict(),
            "lower": self.lowered.to_dict() if self.lowered else None,
            "after": self._after_dict(),
        }

    def _after_dict(self) -> dict[str, Any]:
        """The check of ``out``; one with no case (nothing could be written) says it did not
        pass rather than passing vacuously."""
        doc = self.after.to_dict()
        if not self.after.cases:
            doc["passed"] = False
        return doc


def _drop_unloadable_toolsets(out: Path, copied: set[Path]) -> dict[str, str]:
    """Remove from ``out`` the tool set files this run copied that do not load there (a tool
    ``$ref``s a schema that could not be lowered, so is not in ``out``, or one whose lowered
    form fails the tool-set checks): name -> the first problem. Only such files: any other
    problem is the gate's to report, as before."""
    from schemaops.registry import RegistryError, load_registry
    from schemaops.registry.loader import TOOLS_SUFFIX

    try:
        load_registry(out)
    except RegistryError as exc:
        bad: dict[str, str] = {}
        for problem in exc.problems:
            f = Path(str(problem.get("file") or ""))
            if f.name.endswith(TOOLS_SUFFIX) and f.resolve() in copied:
                bad.setdefault(f.name[: -len(TOOLS_SUFFIX)], format_problem(problem))
                f.unlink(missing_ok=True)
        return bad
    return {}


def _copy_passing(registry: Path, out: Path, skip: set[Path]) -> set[Path]:
    """Copy the registry into ``out`` except the failed schemas' files (and their sidecars);
    returns the tool set files written (resolved)."""
    from schemaops.registry.loader import TOOLS_SUFFIX

    toolsets = set()
    for src in sorted(registry.rglob("*.json")):
        rel = src.relative_to(registry)
        if src.resolve() in skip or any(part.startswith(".") for part in rel.parts):
            continue
        dst = out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        if dst.name.endswith(TOOLS_SUFFIX):
            toolsets.add(dst.resolve())
    return toolsets


def fix_registry(
    registry: str | Path,
    backend: str,
    out: str | Path,
    *,
    engine: str | None = None,
    generate: int = 25,
    lower_timeout_s: float = 120.0,
    lower_progress: Callable[[str], None] | None = None,
    **check_opts: Any,
) -> FixReport:
    """``check`` ``registry``, lower what fails, write ``out``, ``check`` ``out`` (see module).

    ``check_opts`` are ``run_check``'s keyword options (tokenizer, budget, jobs, its
    ``progress``, ...); ``lower_progress`` takes ``lower``'s progress lines.
    Raises ``InputError`` (exit 2) for ``out`` equal to or inside the registry, or one that
    cannot be written (checked before any work).
    """
    from schemaops.check import run_check
    from schemaops.check.engine import run_engine_check
    from schemaops.registry import RegistryError, load_registry

    root = Path(registry)
    outp = check_out(out, root)  # before the check: an unwritable --out is exit 2

    def gate(folder: Path) -> Any:
        if engine is not None:
            return run_engine_check(folder, engine, backend, **check_opts)
        return run_check(folder, backend, **check_opts)

    before = gate(root)
    failed = [c.schema for c in before.failed if not toolset_case(c)]  # tool sets: see module
    try:
        reg = load_registry(root)
    except RegistryError as exc:  # run_check loaded it already; kept for a race
        raise InputError(f"cannot read registry {root}: {exc}") from None
    skip: set[Path] = set()
    for name in failed:
        path = reg.get(name).path
        if path is not None:
            skip |= {path.resolve(), path.with_name(f"{path.stem}.examples.json").resolve()}
    try:
        copied = _copy_passing(root, outp, skip)
    except OSError as exc:  # written a moment ago (check_out); e.g. the disk filled
        raise InputError(f"cannot write --out {outp}: {exc}") from None
    mine = {s.name for s in reg} | {f"{ts}.tools" for ts in reg.toolsets}
    if not failed:
        return _gated(before, None, gate(outp), outp, mine)
    if lower_progress:
        lower_progress(f"lowering {len(failed)} failed schema(s) for {backend}")
    lowered = lower_registry(
        root,
        backend,
        names=failed,
        engine=engine,
        out=outp,
        tokenizer=check_opts.get("tokenizer", "qwen2.5"),
        timeout_s=lower_timeout_s,
        generate=generate,
        progress=lower_progress,
        mem_mb=check_opts.get("mem_mb"),
    )
    left_out = _drop_unloadable_toolsets(outp, copied) if copied else {}
    if not _holds_schemas(outp):  # nothing could be written: a failed gate, not a bad folder
        from schemaops.check.gate import CheckReport

        note = {"out": "nothing could be written: every schema failed and none was lowered"}
        after = CheckReport(before.backend, before.tokenizer, str(outp), before.budget_ms, [], note)
        return _gated(before, lowered, after, outp, mine, left_out)
    return _gated(before, lowered, gate(outp), outp, mine, left_out)


def _holds_schemas(folder: Path) -> bool:
    """Whether ``folder`` holds a schema or tool set file as a registry reads it (the gate
    refuses a folder without one as an unusable registry, exit 2)."""
    from schemaops.registry.documents import SIDECAR_SUFFIX
    from schemaops.registry.listing import json_files

    return any(not f.name.endswith(SIDECAR_SUFFIX) for f in json_files(folder))


def _gated(
    before: Any,
    lowered: LowerReport | None,
    after: Any,
    out: Path,
    mine: set[str],
    left_out: dict[str, str] | None = None,
) -> FixReport:
    """The report, with the schemas the gate found in ``out`` that this run did not write:
    ``mine`` (the registry's names, a tool set's as ``NAME.tools``) less the ones that could
    not be lowered."""
    rep = FixReport(before, lowered, after, str(out), toolsets_left_out=left_out or {})
    written = mine - set(rep.not_lowered) - {f"{ts}.tools" for ts in rep.toolsets_left_out}
    found = {
        f"{c.result['toolset']['toolset']}.tools" if toolset_case(c) else c.schema
        for c in after.cases
    }
    rep.stale = sorted(found - written)
    return rep
