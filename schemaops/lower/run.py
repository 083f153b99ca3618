"""``lower_registry``: lower a registry's schemas for one backend, prove each, write them out.

Per schema: probe the backend's keywords (``probes``), rewrite (``passes``), then prove:

1. the original's valid examples are valid under the served schema, and each invalid example
   is either invalid under the served schema (then walked) or flagged by the residual;
2. the served schema compiles on the backend and ``compare``'s enforcement walk over the
   valid and the walked invalid examples gives ``enforced``;
3. the differential check of ``prove`` (generated instances on both schemas plus mutations).

A served schema whose compile ends in ``timeout`` or ``oom`` (past ``timeout_s`` or
``mem_mb``) climbs the relaxation ladder (``relax``): the most compile-expensive constraints
move into the residual one class at a time, and the schema is lowered and measured again
until it compiles; each step taken is a ``Relaxation`` in the case (``relaxations``).

With ``engine`` (``sglang`` or ``vllm``, configured with the backend) the engine's own
refusals are applied before the rewrite and checked on the served document (``engine``).

A schema that fails any step is not lowered (exit 1). With ``out``, the served schemas are
written as a registry folder (``NAME.json`` with ``x-schemaops-lowered-from`` naming the
original and its hash, ``NAME.examples.json`` with the examples the served schema can
express) that ``schemaops check --backend B`` gates, plus one report per schema under
``out/.lower/`` (a hidden folder, so the registry loader does not read it as a schema).
A schema that is not lowered gets only its report there (``"lowered": false``): no
``NAME.json`` is written for it, and one left by an earlier run is removed, so the folder
never serves a schema that failed its proof.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemaops.compare.instances import validator
from schemaops.errors import InputError
from schemaops.lower.engine import (
    EngineTarget,
    engine_caps,
    engine_case,
    engine_target,
    engine_verdict,
)
from schemaops.lower.model import Lowered, UncoveredWidening
from schemaops.lower.outfiles import REPORT_DIR, out_paths
from schemaops.lower.passes import lower_schema, refine
from schemaops.lower.probes import probe_backend
from schemaops.lower.prove import INSTANCE_TIMEOUT_S, Differential, differential
from schemaops.lower.relax import LADDER, Relaxation, reason, triggered
from schemaops.lower.residual import check_residual
from schemaops.outdir import prepare_out_folder
from schemaops.registry.model import canonical_text, content_hash
from schemaops.watchdog import WatchdogTimeout, armed, watched

_TOO_LONG = f"its check ran past {INSTANCE_TIMEOUT_S:g} s (a backtracking pattern?): unproven"

LOWERED_FROM = "x-schemaops-lowered-from"


# Fields like lower/passes.Lowered's (a dataclass of results): other facts, one schema's proof.
@dataclass
class LowerCase:
    """One schema's lowering and its proof."""

    name: str
    lowered: Lowered
    original_hash: str
    valid: list[Any] = field(default_factory=list)
    invalid_walked: list[Any] = field(default_factory=list)
    invalid_residual: list[Any] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)
    diff: Differential | None = None
    problems: list[str] = field(default_factory=list)
    doc: Any = None  # what is served: the lowered schema with x-schemaops-lowered-from
    engine: dict[str, Any] | None = None  # with --engine: route, request path, key string
    relaxations: list[Relaxation] = field(default_factory=list)  # ladder steps taken

    @property
    def wire(self) -> str:
        """The served file's wire string (registry canonical text): the new cache key."""
        return canonical_text(self.doc if self.doc is not None else self.lowered.served)

    @property
    def served_hash(self) -> str:
        """sha256 of ``wire``: what ``schemaops registry hash`` shows for the served file."""
        return content_hash(self.doc if self.doc is not None else self.lowered.served)

    @property
    def lowered_ok(self) -> bool:
        return not self.problems

    @property
    def unproven(self) -> list[str]:
        """Why the rewrite's exactness claim has no evidence (empty when it has): the
        enforcement walk walked nothing, or the differential had no instances, ran out of
        time or was skipped. A served schema identical to the original needs no proof."""
        lw = self.lowered
        if lw.served == lw.original and not lw.rewrites:
            return []
        why = []
        verdict = (self.result.get("enforcement") or {}).get("verdict")
        if self.result.get("status") == "ok" and verdict == "unchecked":
            why.append("the enforcement walk walked nothing (unchecked: no examples)")
        if self.diff is None:
            why.append("no differential check (--generate 0)")
        else:
            why += [f"differential: {u}" for u in self.diff.unproven]
        return why

    @property
    def exactness(self) -> str:
        """The rewrite's label (``Lowered.exactness``), or ``unproven`` when the proof has no
        evidence behind it: an application must not skip its own check on a claim nothing
        tested."""
        return "unproven" if self.unproven else self.lowered.exactness

    def to_dict(self) -> dict[str, Any]:
        lw = self.lowered
        enf = self.result.get("enforcement") or {}
        return {
            "schema": self.name,
            "lowered": self.lowered_ok,
            "backend": lw.backend,
            "original_hash": self.original_hash,
            "served_hash": self.served_hash,
            "served_wire": self.wire,
            "exactness": self.exactness,
            "claimed": lw.exactness,
            "unproven": self.unproven,
            "notes": lw.notes,
            "rewrites": [r.to_dict() for r in lw.rewrites],
            "residual": [r.to_dict() for r in lw.residual],
            "examples": {
                "valid": len(self.valid),
                "invalid_walked": len(self.invalid_walked),
                "invalid_residual": len(self.invalid_residual),
            },
            "compile": {
                "status": self.result.get("status"),
                "compile_ms": self.result.get("compile_ms"),
                "verdict": enf.get("verdict"),
                "error": self.result.get("error"),
            },
            "relaxations": [r.to_dict() for r in self.relaxations],
            "differential": self.diff.to_dict() if self.diff else None,
            "engine": self.engine,
            "problems": self.problems,
        }


@dataclass
class LowerReport:
    backend: str
    registry: str
    capabilities: dict[str, str]
    cases: list[LowerCase]
    out: str | None = None
    engine: EngineTarget | None = None

    @property
    def passed(self) -> bool:
        return all(c.lowered_ok for c in self.cases)

    # key by key, each key this command's --json contract (the to_dict look-alikes: probe/run.py)
    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "registry": self.registry,
            "out": self.out,
            "passed": self.passed,
            "schemas": len(self.cases),
            "not_lowered": sum(1 for c in self.cases if not c.lowered_ok),
            "unproven": sum(1 for c in self.cases if c.lowered_ok and c.unproven),
            "capabilities": self.capabilities,
            "engine": self.engine.to_dict() if self.engine else None,
            "cases": [c.to_dict() for c in self.cases],
        }


def served_document(schema: Any, lowered: Lowered) -> Any:
    """The served schema with ``x-schemaops-lowered-from`` (name, hash, backend) at its end."""
    served = lowered.served
    if isinstance(served, dict):
        served = {
            **served,
            LOWERED_FROM: {"name": schema.name, "hash": schema.hash, "backend": lowered.backend},
        }
    return served


def _split_examples(case: LowerCase, valid: list[Any], invalid: list[Any]) -> None:
    """Sort the original's examples by what the served schema does with them.

    Each example's check runs under the watchdog (``INSTANCE_TIMEOUT_S``): a rewritten
    pattern (an unanchored one made anchored, say) may backtrack where the original did not,
    and a check that runs out of time is a problem (unproven), never a pass."""
    lw = case.lowered
    check = validator(lw.served)
    with armed(INSTANCE_TIMEOUT_S):
        for i, x in enumerate(valid):
            try:
                with watched():
                    ok = check.is_valid(x)
            except WatchdogTimeout:
                case.problems.append(f"valid example #{i}: {_TOO_LONG}")
                continue
            if ok:
                case.valid.append(x)
            else:
                case.problems.append(f"valid example #{i} is refused by the served schema")
        for i, x in enumerate(invalid):
            try:
                with watched():
                    refused = not check.is_valid(x)
                    rc = None if refused else check_residual(lw.original, lw.residual, x)
            except WatchdogTimeout:
                case.problems.append(f"invalid example #{i}: {_TOO_LONG}")
                continue
            if rc is None:
                case.invalid_walked.append(x)
            elif rc.flagged and not rc.uncovered:
                case.invalid_residual.append(x)
            else:
                what = ", ".join(f"{u.keyword} at {u.schema_pointer}" for u in rc.uncovered[:3])
                case.problems.append(
                    f"invalid example #{i} is accepted by the served schema and no residual rule "
                    f"covers it ({what or 'no error found'})"
                )


def _judge_result(case: LowerCase, result: dict[str, Any]) -> None:
    case.result = result
    status = result.get("status")
    enf = result.get("enforcement") or {}
    verdict = enf.get("verdict")
    if status != "ok":
        err = str(result.get("error") or "").strip().splitlines()
        tried = ", ".join(r.step for r in case.relaxations)
        case.problems.append(
            f"the served schema does not compile on {case.lowered.backend} ({status}"
            + (f": {err[0][:200]}" if err else "")
            + ")"
            + (f" after the relaxation ladder ({tried})" if tried else "")
            + (" and no relaxation ladder step applies" if triggered(result) and not tried else "")
        )
    elif verdict not in ("enforced", "unchecked"):
        kws = sorted(k for k, v in (enf.get("keywords") or {}).items() if v.get("ignored"))
        extra = f" (ignored: {', '.join(kws)})" if kws else ""
        case.problems.append(f"enforcement walk on the served schema: {verdict}{extra}")


def check_out(out: str | Path, registry: str | Path) -> Path:
    """``out`` made ready to write, or ``InputError`` (exit 2) before any work
    (``outdir.prepare_out_folder``: not inside the registry, a folder, writable), with its
    reports folder."""
    outp = prepare_out_folder(Path(out), registry=Path(registry))
    try:
        (outp / REPORT_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--out {outp} cannot be written: {exc.strerror or exc}") from None
    return outp


def _write(out: Path, case: LowerCase, doc: Any, report: dict[str, Any]) -> None:
    """Write the case's files; a case that is not lowered gets its report only."""
    out.mkdir(parents=True, exist_ok=True)
    (out / REPORT_DIR).mkdir(exist_ok=True)
    paths = out_paths(out, case.name)
    files: dict[Path, Any] = {paths.report: report}
    served = [paths.served, paths.examples]
    if case.lowered_ok:
        files[served[0]] = doc
        files[served[1]] = {"valid": case.valid, "invalid": case.invalid_walked}
    elif _ours(served[0]):  # never leave an earlier run's served file for a failed schema
        for path in served:
            path.unlink(missing_ok=True)
    for path, data in files.items():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)


def _ours(path: Path) -> bool:
    """True when ``path`` is a served file an earlier ``lower`` wrote (it names its origin)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and LOWERED_FROM in doc


def lower_registry(
    registry: str | Path = "schemas",
    backend: str = "xgrammar",
    *,
    name: str | None = None,
    names: Sequence[str] | None = None,
    engine: str | None = None,
    out: str | Path | None = None,
    tokenizer: str = "qwen2.5",
    timeout_s: float = 120.0,
    generate: int = 25,
    progress: Callable[[str], None] | None = None,
    mem_mb: int | None = None,
) -> LowerReport:
    """Lower (all or one ``name`` of) ``registry`` for ``backend``; see module doc.

    Raises ``InputError`` (exit 2) for bad options or a registry that cannot be loaded.
    ``generate`` is the number of instances generated per schema and side for the
    differential check (0 skips it). ``names`` lowers several named schemas (``check
    --fix`` passes the failing ones); ``engine`` is ``sglang`` or ``vllm`` (see ``engine``).
    ``mem_mb`` is the compile worker's memory cap (compare's, 4096 MiB by default): a served
    schema that runs past it, or past ``timeout_s``, climbs the relaxation ladder.
    """
    from schemaops.compare.run import DEFAULT_MEM_MB, Item, measure_items, parse_backends
    from schemaops.registry import RegistryError, load_registry

    backends = parse_backends(backend)
    if len(backends) != 1:
        raise InputError("lower targets one backend: give --backend once")
    b = backends[0]
    if generate < 0 or timeout_s <= 0:
        raise InputError("--generate must be >= 0 and --timeout > 0")
    mem = DEFAULT_MEM_MB if mem_mb is None else mem_mb
    if mem <= 0:
        raise InputError("--mem-mb must be > 0")
    root = Path(registry)
    try:
        reg = load_registry(root)
    except RegistryError as exc:
        err = InputError(f"cannot lower registry {root}: {exc}")
        err.problems = exc.problems
        raise err from None
    target = engine_target(engine, b) if engine is not None else None
    wanted = [name] if name is not None else list(names) if names is not None else None
    schemas = [reg.get(n) for n in wanted] if wanted is not None else list(reg)
    if out is not None:
        check_out(out, root)  # before any work: an unwritable --out is a usage error
    if progress:
        progress(f"probing {b} keywords")
    caps = probe_backend(b, tokenizer)
    if target is not None:
        caps = engine_caps(caps, target)

    def make(s: Any, caps_: dict[str, str], relax: dict[str, str] | None = None) -> LowerCase:
        try:
            lw = lower_schema(s.bundled(), caps_, b, relax)
            bug = None
        except UncoveredWidening as exc:  # a lowering bug: said, never served
            lw, bug = Lowered(b, s.bundled(), s.bundled()), f"lowering bug: {exc}"
        case = LowerCase(s.name, lw, s.hash)
        case.problems += [bug] if bug else []
        _split_examples(case, list(s.valid), list(s.invalid))
        case.doc = served_document(s, case.lowered)
        return case

    def measure(cs: list[LowerCase]) -> dict[str, dict[str, Any]]:
        items = [Item(c.name, c.wire, c.valid, c.invalid_walked) for c in cs]
        found = measure_items(items, [b], tokenizer, timeout_s=timeout_s, mem_mb=mem)
        return {str(r["schema"]): r for r in found}

    cases = [make(s, caps) for s in schemas]
    if progress:
        progress(f"compiling and walking {len(cases)} served schema(s) on {b}")
    results = measure(cases)
    # a compile error that names keywords the probes do not cover: lower again without
    # them (a few rounds: a schema may hide one unsupported keyword behind another)
    case_caps = [caps] * len(cases)
    for _round in range(3):
        retry: dict[int, LowerCase] = {}
        for i, (s, c) in enumerate(zip(schemas, cases, strict=True)):
            r = results.get(c.name) or {}
            if r.get("status") in ("unsupported", "error"):
                refined = refine(case_caps[i], str(r.get("error") or ""))
                if refined is not None:
                    case_caps[i] = refined
                    retry[i] = make(s, refined)
        if not retry:
            break
        if progress:
            progress(f"lowering {len(retry)} schema(s) again without the keywords {b} named")
        again = measure(list(retry.values()))
        for i, c in retry.items():
            cases[i] = c
            results[c.name] = again.get(c.name, {"status": "error", "error": "no result"})
    _climb(schemas, cases, case_caps, results, make, measure, b, progress)
    for c in cases:
        _judge_result(c, results.get(c.name, {"status": "error", "error": "no result"}))
        if target is not None:
            r, problem = engine_verdict(c.doc, target)
            c.engine = engine_case(c.doc, r)
            c.problems += [problem] if problem else []
        if generate:
            if progress:
                progress(f"differential check of {c.name}")
            c.diff = differential(c.lowered, generate, [*c.valid], deadline_s=timeout_s)
            c.problems += [f"differential: {f}" for f in c.diff.failures[:5]]
        if out is not None:
            _write(Path(out), c, c.doc, c.to_dict())
    return LowerReport(b, str(root), caps, cases, str(out) if out is not None else None, target)


def _climb(
    schemas: list[Any],
    cases: list[LowerCase],
    case_caps: list[dict[str, str]],
    results: dict[str, dict[str, Any]],
    make: Callable[..., LowerCase],
    measure: Callable[[list[LowerCase]], dict[str, dict[str, Any]]],
    backend: str,
    progress: Callable[[str], None] | None,
) -> None:
    """The relaxation ladder (``schemaops.lower.relax``) for every case whose served compile
    ran out of time or memory: one step at a time, for all such cases together, each lowered
    again with the steps so far and measured again; ``cases`` and ``results`` are updated in
    place. A step that moves nothing in a schema costs no compile."""
    steps: list[dict[str, str]] = [{} for _ in cases]
    for step in LADDER:
        retry: dict[int, LowerCase] = {}
        for i, c in enumerate(cases):
            r = results.get(c.name) or {}
            if not triggered(r):
                continue
            steps[i] = {**steps[i], step.key: reason(step, backend, r)}
            new = make(schemas[i], case_caps[i], steps[i])
            before = {rule.pointer for rule in c.lowered.residual}
            moved = [rule.pointer for rule in new.lowered.residual if rule.pointer not in before]
            if not moved:
                continue
            err = str(r.get("error") or "").strip().splitlines()
            rel = Relaxation(step.key, step.what, str(r.get("status")), err[0][:200] if err else "")
            rel.moved = moved
            new.relaxations = [*c.relaxations, rel]
            retry[i] = new
        if not retry:
            if not any(triggered(results.get(c.name) or {}) for c in cases):
                return
            continue
        if progress:
            progress(f"relaxing {len(retry)} schema(s) that did not compile: step {step.key}")
        again = measure(list(retry.values()))
        for i, c in retry.items():
            cases[i] = c
            results[c.name] = again.get(c.name, {"status": "error", "error": "no result"})
            c.relaxations[-1].status = results[c.name].get("status")
