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


@dataclass
class FixReport:
    """``before`` (the registry's check), ``lowered`` (None when nothing failed), ``after``
    (the check of ``out``), ``stale`` (schemas in ``out`` this run did not write)."""

    before: Any  # CheckReport
    lowered: LowerReport | None
    after: Any  # CheckReport
    out: str
    stale: list[str] = field(default_factory=list)

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
        return not self.not_lowered and not self.stale and self.after.passed

    def summary(self) -> str:
        """One paragraph a CI log shows: what failed, what was fixed, what the gate says."""
        failed = [c.schema for c in self.before.failed]
        lines = [
            f"check --fix: {len(failed)} of {len(self.before.cases)} schema(s) failed on "
            f"{self.before.backend}" + (f": {', '.join(failed[:10])}" if failed else "")
        ]
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
            "before": self.before.to_dict(),
            "lower": self.lowered.to_dict() if self.lowered else None,
            "after": self.after.to_dict(),
        }


def _copy_passing(registry: Path, out: Path, skip: set[Path]) -> None:
    """Copy the registry into ``out`` except the failed schemas' files (and their sidecars)."""
    for src in sorted(registry.rglob("*.json")):
        rel = src.relative_to(registry)
        if src.resolve() in skip or any(part.startswith(".") for part in rel.parts):
            continue
        dst = out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)


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
    failed = [c.schema for c in before.failed]
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
        _copy_passing(root, outp, skip)
    except OSError as exc:  # written a moment ago (check_out); e.g. the disk filled
        raise InputError(f"cannot write --out {outp}: {exc}") from None
    mine = {s.name for s in reg}
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
    return _gated(before, lowered, gate(outp), outp, mine)


def _gated(
    before: Any, lowered: LowerReport | None, after: Any, out: Path, mine: set[str]
) -> FixReport:
    """The report, with the schemas the gate found in ``out`` that this run did not write:
    ``mine`` (the registry's names) less the ones that could not be lowered."""
    rep = FixReport(before, lowered, after, str(out))
    written = mine - set(rep.not_lowered)
    rep.stale = sorted({c.schema for c in after.cases} - written)
    return rep
