"""The gate logic: turn one backend's compare results into pass/fail plus what to change.

Why each rule fails the gate (rather than warning):

- a schema that does not compile is served unconstrained or fails every request (SGLang
  caches the failure, including a compile timeout, as an invalid grammar);
- a compile over budget stalls the first request of that schema on every replica after each
  restart, unless the deploy warms it;
- an invalid example that walks to a stop means the backend ignores a keyword, so the
  application still sees schema violations "with constrained decoding";
- a valid example the backend cannot produce means the grammar is stricter than the schema
  and steers the model away from outputs the application accepts.

A schema without examples only warns: nothing can be said about its enforcement.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from schemaops.compare.enforce import produced
from schemaops.compare.report import keyword_outcomes, verdict_of
from schemaops.compare.run import (
    DEFAULT_COMPILE_THREADS,
    DEFAULT_MEM_MB,
    DEFAULT_TIMEOUT_S,
    connect_ray,
    host_cpus,
    measure_items,
    parse_backends,
    registry_items,
)
from schemaops.errors import InputError
from schemaops.strings import truncate

DEFAULT_BUDGET_MS = 1000.0
_ALT_NAMES = {
    "chars": "shorter tokens",
    "bytes": "byte tokens",
    "escaped": "\\u escapes of its invisible characters",
    "ascii": "\\u escapes of every non-ASCII character",
}


@dataclass
class Problem:
    """One reason a schema fails the gate: what happened and what to change."""

    kind: str  # compile_status | compile_budget | accepts_invalid | rejects_valid
    message: str
    fix: str

    def text(self) -> str:
        return f"{self.message}: {self.fix}"


@dataclass
class CheckCase:
    """The gate's verdict on one schema."""

    schema: str
    status: str
    compile_ms: float | None
    verdict: str
    problems: list[Problem] = field(default_factory=list)
    #: what the user must act on (missing evidence, a latch); printed under the schema
    warnings: list[str] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)
    #: information (the engine's route): in ``--json``; the terminal says it once per report
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["passed"] = self.passed
        d["problems"] = [asdict(p) | {"text": p.text()} for p in self.problems]
        return d


@dataclass
class CheckReport:
    """What ``run_check`` returns; ``passed`` decides the exit code (0 or 1)."""

    backend: str
    tokenizer: str
    registry: str
    budget_ms: float
    cases: list[CheckCase]
    settings: dict[str, Any] = field(default_factory=dict)  # compile_threads, host CPUs

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.cases)

    @property
    def failed(self) -> list[CheckCase]:
        return [c for c in self.cases if not c.passed]

    def example_counts(self) -> dict[str, int]:
        """Valid examples refused inside a non-ASCII string under every tokenization tried,
        and those produced only by another tokenization, over all schemas."""
        out = {"rejects_valid_content": 0, "accepted_retokenized": 0}
        for c in self.cases:
            enf = c.result.get("enforcement") or {}
            for k in out:
                n = enf.get(k)
                out[k] += n if isinstance(n, int) else 0
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "tokenizer": self.tokenizer,
            "registry": self.registry,
            "compile_budget_ms": self.budget_ms,
            "passed": self.passed,
            "schemas": len(self.cases),
            "failed": len(self.failed),
            **self.example_counts(),
            "settings": self.settings,
            "cases": [c.to_dict() for c in self.cases],
        }


def _short(x: Any, n: int = 80) -> str:
    import json

    try:
        s = json.dumps(x, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        s = repr(x)
    return truncate(s, n, "…")


def _details(result: dict[str, Any], which: str) -> list[dict[str, Any]]:
    """The enforcement details behind a verdict: ``accepts_invalid`` or ``rejects_valid``."""
    out = []
    for d in (result.get("enforcement") or {}).get("details") or []:
        if not isinstance(d, dict):
            continue
        accepted = d.get("outcome") == "accepted"
        if which == "accepts_invalid" and d.get("kind") == "invalid" and accepted:
            out.append(d)
        if which == "rejects_valid" and d.get("kind") == "valid" and not produced(d):
            out.append(d)
    return out


def _example(d: dict[str, Any]) -> str:
    for key in ("value", "instance", "text", "data"):
        if key in d:
            return _short(d[key]) if key != "text" else _short(d[key])[1:-1]
    return f"#{d['index']}" if "index" in d else "?"


_KW_PATTERNS = (
    (re.compile(r"Unimplemented keys: \[([^\]]*)\]"), "keyword {}"),
    (re.compile(r"Unknown format: ([\w.-]+)"), "format {}"),
    (re.compile(r"Format ([\w.-]+) is not supported"), "format {}"),
    (re.compile(r"(\w+) constraints are not supported"), "keyword {}"),
)


def _named_keywords(error: str) -> list[str]:
    """Keywords/formats a backend's error message names as not implemented (for advice)."""
    out: list[str] = []
    for pat, fmt in _KW_PATTERNS:
        for m in pat.finditer(error):
            for part in m.group(1).split(","):
                name = part.strip().strip('"')
                if name:
                    out.append(fmt.format(name))
    return list(dict.fromkeys(out))


def _status_problem(backend: str, result: dict[str, Any], timeout_s: float) -> Problem:
    st = result.get("status", "error")
    err = str(result.get("error") or "").strip().splitlines()
    why = f" ({err[0][:200]})" if err else ""
    kws = _named_keywords(str(result.get("error") or ""))
    if kws and st in ("unsupported", "error"):
        return Problem(
            "compile_status",
            f"{backend} does not implement {', '.join(kws)}{why}",
            "drop or rewrite it and enforce it in application validation, or use a backend "
            "that compiles it (`schemaops compare` shows which)",
        )
    if st == "unsupported":
        return Problem(
            "compile_status",
            f"{backend} does not support this schema{why}",
            "rewrite or drop the unsupported construct, or use a backend that compiles it "
            "(`schemaops compare` shows which)",
        )
    if st == "timeout":
        return Problem(
            "compile_status",
            f"compile did not finish within {timeout_s:g} s on {backend}",
            "SGLang caches a timed-out compile as invalid: simplify the schema (large bounded "
            "maxLength/minItems/maxItems, long enums and heavy patterns explode grammars) or "
            "use another backend",
        )
    if st in ("crash", "oom"):
        return Problem(
            "compile_status",
            f"{backend} {'ran out of memory' if st == 'oom' else 'crashed'} compiling this "
            f"schema{why}",
            "this would take a server worker down: simplify the schema or use another backend",
        )
    return Problem(
        "compile_status",
        f"{backend} failed to compile this schema ({st}){why}",
        "fix the schema (see the error) or use another backend",
    )


def evaluate(
    result: dict[str, Any], backend: str, budget_ms: float, timeout_s: float = DEFAULT_TIMEOUT_S
) -> CheckCase:
    """Judge one compare result against the gate; pure, so it is testable without backends."""
    name = str(result.get("schema"))
    st = str(result.get("status", "error"))
    cms = result.get("compile_ms")
    case = CheckCase(name, st, cms, verdict_of(result), result=result)
    if st != "ok":
        case.problems.append(_status_problem(backend, result, timeout_s))
        return case
    if isinstance(cms, (int, float)) and cms > budget_ms:
        case.problems.append(
            Problem(
                "compile_budget",
                f"compile {cms:.0f} ms > budget {budget_ms:g} ms",
                "warm it at deploy (schemaops warm) or simplify the schema",
            )
        )
    enf = result.get("enforcement") or {}
    kws = keyword_outcomes(result)
    if case.verdict == "accepts_invalid":
        ignored = sorted(k for k, v in kws.items() if v == "ignored")
        for kw in ignored:
            case.problems.append(
                Problem(
                    "accepts_invalid",
                    f"keyword {kw} is ignored by {backend}",
                    "enforce it in application validation or drop it",
                )
            )
        if not ignored:
            n = enf.get("accepts_invalid") or 1
            ex = [_example(d) for d in _details(result, "accepts_invalid")]
            case.problems.append(
                Problem(
                    "accepts_invalid",
                    f"{backend} lets {n} invalid example(s) through to a stop"
                    + (f" (e.g. {ex[0]})" if ex else ""),
                    "validate these outputs in the application, or express the constraint "
                    "in a form the backend enforces",
                )
            )
    if case.verdict == "rejects_valid":
        n = enf.get("rejects_valid") or 1
        dets = _details(result, "rejects_valid")
        ex = [_example(d) for d in dets]
        where = sorted({str(d["where"]) for d in dets if d.get("where")})
        content = enf.get("rejects_valid_content") or 0
        case.problems.append(
            Problem(
                "rejects_valid",
                f"{backend} cannot produce {n} valid example(s)"
                + (f" (e.g. {ex[0]})" if ex else "")
                + (f"; refused in {', '.join(where)}" if where else "")
                + (
                    f"; {content} inside a non-ASCII string under every tokenization tried "
                    "(canonical, shorter tokens, byte tokens, \\u escapes)"
                    if content
                    else ""
                ),
                "the grammar is stricter than the schema: relax or rewrite those keywords (or "
                "the examples), or use a backend that produces them",
            )
        )
    retok = [d for d in enf.get("details") or [] if isinstance(d, dict) and d.get("accepted_as")]
    if retok:
        how = sorted({_ALT_NAMES.get(str(d["accepted_as"]), str(d["accepted_as"])) for d in retok})
        case.warnings.append(
            f"{len(retok)} valid example(s) with non-ASCII text were refused in their canonical "
            f"tokenization and produced only as {' or '.join(how)} (e.g. {_example(retok[0])}): "
            f"{backend} can emit the value, but not the way the tokenizer writes it"
        )
    if case.verdict != "unchecked" and enf.get("invalid") == 0:
        case.warnings.append(
            f"no invalid examples: whether {backend} enforces this schema's keywords is "
            f"unchecked; add invalid instances to {name}.examples.json"
        )
    if case.verdict == "unchecked":
        why = f" ({enf['reason']})" if enf.get("reason") else ""
        case.warnings.append(
            f"no examples walked{why}: enforcement unchecked; add {name}.examples.json with "
            "valid and invalid instances"
        )
    return case


#: the longest wait per schema, derived or given (one day)
MAX_TIMEOUT_S = 86400.0


def gate_options(
    compile_budget_ms: float,
    timeout_s: float | None,
    jobs: int,
    mem_mb: int | None,
    compile_threads: int | None,
) -> tuple[float, int, int]:
    """(timeout_s, mem_mb, compile_threads) with their defaults, for ``run_check`` and
    ``run_engine_check`` alike; ``InputError`` (exit 2) for a negative budget or a value
    that must be positive."""
    if not compile_budget_ms >= 0 or compile_budget_ms == float("inf"):
        raise InputError("--compile-budget-ms must be a finite number >= 0")
    if timeout_s is None:
        # bounded: a huge budget must not become a wait that the OS refuses (epoll's limit is
        # ~24 days; a day is already far past any compile a deploy would wait for)
        timeout_s = min(max(DEFAULT_TIMEOUT_S, 3 * compile_budget_ms / 1000.0), MAX_TIMEOUT_S)
    elif timeout_s > MAX_TIMEOUT_S:
        raise InputError(f"--timeout must be at most {MAX_TIMEOUT_S:g} seconds")
    compile_threads = DEFAULT_COMPILE_THREADS if compile_threads is None else compile_threads
    mem_mb = DEFAULT_MEM_MB if mem_mb is None else mem_mb
    if jobs < 1 or timeout_s <= 0 or mem_mb <= 0 or compile_threads < 1:
        raise InputError("--jobs, --timeout, --mem-mb and --compile-threads must be positive")
    return timeout_s, mem_mb, compile_threads


def run_check(
    registry: str | Path = "schemas",
    backend: str = "xgrammar",
    *,
    tokenizer: str = "qwen2.5",
    compile_budget_ms: float = DEFAULT_BUDGET_MS,
    jobs: int = 1,
    timeout_s: float | None = None,
    mem_mb: int = DEFAULT_MEM_MB,
    progress: Callable[..., Any] | None = None,
    compile_threads: int | None = None,
    ray: str | None = None,
    tool_choice: list[str] | None = None,
    tool_strict_level: int = 0,
) -> CheckReport:
    """Gate ``registry`` for a deploy on ``backend``; the caller exits 1 unless ``.passed``.

    ``timeout_s`` defaults to ``max(60, 3 x budget)`` so that an over-budget compile is
    still measured (and reported with its time) instead of being cut off as a timeout.
    Raises ``InputError`` (exit 2) for a missing/unreadable registry or bad options.
    ``ray``: measure on that Ray cluster (as ``run_compare``); the gate is the same.
    ``tool_choice``: the modes the registry's tool sets are gated in (``check/toolsets.py``);
    None or ``[]``: none (``check --fix`` gates schemas only; the CLI passes ``required``).
    ``tool_strict_level``: the server's tool strict level, for ``auto`` (``tagcases.py``).
    """
    names = parse_backends(backend)
    if len(names) != 1:
        raise InputError("check gates one backend: give --backend once, e.g. --backend xgrammar")
    name = names[0]
    timeout_s, mem_mb, compile_threads = gate_options(
        compile_budget_ms, timeout_s, jobs, mem_mb, compile_threads
    )
    items = registry_items(registry)
    ray_info = connect_ray(ray)
    cases = gate_items(
        items,
        name,
        tokenizer,
        compile_budget_ms,
        timeout_s,
        jobs=jobs,
        mem_mb=mem_mb,
        progress=progress,
        compile_threads=compile_threads,
        ray=ray,
    )
    settings: dict[str, Any] = {"compile_threads": compile_threads, "host": host_cpus()}
    from schemaops.check.toolsets import registry_toolset_cases

    more, notes = registry_toolset_cases(
        registry, name, tokenizer, compile_budget_ms, timeout_s,
        tool_choice or [], tool_strict_level,
        jobs=jobs, mem_mb=mem_mb, progress=progress, compile_threads=compile_threads, ray=ray,
    )  # fmt: skip
    cases += more
    if notes:
        settings["tool_sets"] = notes
    if ray_info:
        settings["ray"] = ray_info
    return CheckReport(name, tokenizer, str(registry), float(compile_budget_ms), cases, settings)


def gate_items(
    items: list[Any],
    backend: str,
    tokenizer: str,
    compile_budget_ms: float,
    timeout_s: float,
    **worker: Any,
) -> list[CheckCase]:
    """Measure ``items`` on ``backend`` and judge each (``evaluate``): the one gate runner of
    ``run_check`` and ``check --engine`` (which calls it once per backend the engine runs).
    ``worker``: ``measure_items``' keywords (jobs, mem_mb, progress, compile_threads, ray)."""
    results = measure_items(items, [backend], tokenizer, timeout_s=timeout_s, **worker)
    return [evaluate(r, backend, compile_budget_ms, timeout_s) for r in results]
