"""``run_compare``: load schemas (registry or corpus), measure them on backends, build a report.

This is the one library function the ``schemaops compare`` command calls; the measuring
itself (worker processes, timeouts, memory caps, enforcement walks) is
``schemaops.compare.measure_many``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemaops.backends import BACKENDS
from schemaops.backends.xgrammar import ENGINE_MAX_THREADS
from schemaops.compare.recommend import recommend
from schemaops.compare.report import CompareReport
from schemaops.errors import InputError

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEM_MB = 4096
# xgrammar's compile threads: the engines' configuration (SGLang and vLLM both use 8).
DEFAULT_COMPILE_THREADS = ENGINE_MAX_THREADS


def host_cpus() -> dict[str, int | None]:
    """This host's CPUs (``cpus``) and those this process may run on (``usable``): a
    multi-threaded compile's wall time depends on both, so reports print them."""
    try:
        usable: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    return {"cpus": os.cpu_count(), "usable": usable}


def connect_ray(address: str | None) -> dict[str, Any] | None:
    """Connect to the Ray cluster for ``--ray`` (None: no Ray); its ``{address, nodes,
    cpus}`` for the report's settings. ``InputError`` (exit 2) when Ray is not installed or
    the cluster cannot be reached, before anything is measured."""
    if address is None:
        return None
    from schemaops.raycluster import connect

    return connect(address)


@dataclass
class Item:
    """One schema to measure: its exact text (what a server would key on) and examples."""

    name: str
    schema_text: str
    valid: list[Any] = field(default_factory=list)
    invalid: list[Any] = field(default_factory=list)


def parse_backends(spec: str | Sequence[str]) -> list[str]:
    """``"xgrammar,llguidance"`` -> a checked list; unknown names are a usage error."""
    names = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else list(spec)
    names = [n for n in names if n]
    bad = [n for n in names if n not in BACKENDS]
    if bad or not names:
        raise InputError(
            f"unknown backend(s) {', '.join(bad) or '(none given)'}: expected {', '.join(BACKENDS)}"
        )
    return list(dict.fromkeys(names))


def registry_items(path: str | Path) -> list[Item]:
    """Every schema of a registry folder, with its sidecar examples and native wire text."""
    from schemaops.registry import load_registry

    reg = load_registry(path)
    items = [Item(s.name, s.wire("native"), list(s.valid), list(s.invalid)) for s in reg]
    if not items:
        raise InputError(f"registry {path} has no schemas")
    return items


def iter_corpus(path: str | Path) -> Iterator[Item]:
    """Read a JSONSchemaBench-style JSONL file lazily: ``{"unique_id", "json_schema"}`` a line.

    ``json_schema`` may be the schema text (kept byte-exact) or an object; a line that is not
    JSON or has no schema is a usage error with its line number, because a silently skipped
    schema would make coverage look better than it is.
    """
    p = Path(path)
    try:
        fh = p.open(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read corpus {p}: {exc}") from exc
    with fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                raw = rec["json_schema"] if "json_schema" in rec else rec["schema"]
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"{p}:{lineno}: not a corpus record ({exc})") from None
            text = raw if isinstance(raw, str) else json.dumps(raw, separators=(",", ":"))
            name = str(rec.get("unique_id") or rec.get("id") or f"{p.stem}:{lineno}")
            yield Item(name, text, list(rec.get("valid") or []), list(rec.get("invalid") or []))


def corpus_items(path: str | Path, limit: int | None = None) -> list[Item]:
    """The first ``limit`` schemas of a corpus file (all when None)."""
    out: list[Item] = []
    for it in iter_corpus(path):
        if limit is not None and len(out) >= limit:
            break
        out.append(it)
    if not out:
        raise InputError(f"corpus {path} has no schemas")
    return out


def measure_items(
    items: Sequence[Item],
    backends: Sequence[str],
    tokenizer: str,
    *,
    jobs: int = 1,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    mem_mb: int = DEFAULT_MEM_MB,
    progress: Callable[..., Any] | None = None,
    generate: int = 0,
    compile_threads: int = DEFAULT_COMPILE_THREADS,
    ray: str | None = None,
) -> list[dict[str, Any]]:
    """Measure every item on every backend via the core's ``measure_many`` (on the Ray
    cluster at ``ray`` when given).

    Results come back keyed by ``schema`` name; the item order (and backend order) of the
    input is restored so reports are stable whatever the worker scheduling was.
    """
    from schemaops.compare import measure_many

    payload = [
        {"name": it.name, "schema": it.schema_text, "valid": it.valid, "invalid": it.invalid}
        for it in items
    ]
    results = measure_many(
        payload,
        list(backends),
        tokenizer,
        jobs=jobs,
        timeout_s=timeout_s,
        mem_mb=mem_mb,
        progress=progress,
        generate=generate,
        compile_threads=compile_threads,
        ray=ray,
    )
    order = {it.name: i for i, it in enumerate(items)}
    border = {b: i for i, b in enumerate(backends)}
    return sorted(
        results,
        key=lambda r: (order.get(str(r.get("schema")), 1 << 30), border.get(r.get("backend"), 99)),
    )


def run_compare(
    registry: str | Path | None = None,
    corpus: str | Path | None = None,
    *,
    backends: str | Sequence[str] = BACKENDS,
    tokenizer: str = "qwen2.5",
    limit: int | None = None,
    jobs: int = 1,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    mem_mb: int = DEFAULT_MEM_MB,
    progress: Callable[..., Any] | None = None,
    generate: int | None = None,
    compile_threads: int | None = None,
    ray: str | None = None,
    tool_choice: Sequence[str] | None = None,
    tool_strict_level: int = 0,
) -> CompareReport:
    """Compare backends over a registry folder (default ``schemas``) or a corpus JSONL file.

    Returns a ``CompareReport`` whose ``recommendation`` is filled in. Raises ``InputError``
    (exit 2) for unreadable input or bad options. ``generate`` adds that many generated
    valid instances per schema (hypothesis-jsonschema) to the enforcement walk, which is how
    a corpus without examples gets mask figures and some enforcement evidence; the default
    (None) is 0 for a registry (its examples are the evidence) and 1 for a corpus.
    ``compile_threads`` is xgrammar's ``max_threads``: by default the engines' 8, so
    compile_ms is what SGLang/vLLM pay on this host (see ``settings["host"]``).
    ``ray`` runs the measuring on a Ray cluster (``auto``: the running one; ``local``; an
    address): same results, ``settings["ray"]`` says which cluster; ``jobs`` is unused.
    ``tool_choice``: for a registry, also measure its tool sets in these modes
    (``compare/toolsets.py``; ``tool_strict_level`` for ``auto``): ``report.toolsets``.
    """
    if generate is None:
        generate = 1 if corpus is not None else 0
    if compile_threads is None:
        compile_threads = DEFAULT_COMPILE_THREADS
    if registry is not None and corpus is not None:
        raise InputError("give either --registry or --corpus, not both")
    names = parse_backends(backends)
    if jobs < 1 or timeout_s <= 0 or mem_mb <= 0 or (limit is not None and limit < 1):
        raise InputError("--jobs, --timeout, --mem-mb and --limit must be positive")
    if generate < 0:
        raise InputError("--generate must be >= 0")
    if compile_threads < 1:
        raise InputError("--compile-threads must be >= 1")
    if generate > 0:
        from schemaops.compare.generate import generation_missing

        missing = generation_missing()
        if missing:
            raise InputError(
                f"{missing}; or pass --generate 0 to walk only the schemas' own examples "
                "(a corpus without examples then has no per-token figures and every verdict "
                "is unchecked)"
            )
    if corpus is not None:
        items = corpus_items(corpus, limit)
        source = str(corpus)
    else:
        src = registry if registry is not None else "schemas"
        items = registry_items(src)[:limit] if limit else registry_items(src)
        source = str(src)
    ray_info = connect_ray(ray)
    # The worker settings are passed through keyword by keyword, as measure_items hands them on.
    results = measure_items(
        items,
        names,
        tokenizer,
        jobs=jobs,
        timeout_s=timeout_s,
        mem_mb=mem_mb,
        progress=progress,
        generate=generate,
        compile_threads=compile_threads,
        ray=ray,
    )
    report = CompareReport(
        results=results,
        backends=names,
        tokenizer=tokenizer,
        source=source,
        settings={
            "timeout_s": timeout_s,
            "mem_mb": mem_mb,
            "jobs": jobs,
            "limit": limit,
            "generate": generate,
            "compile_threads": compile_threads,
            "host": host_cpus(),
            **({"ray": ray_info} if ray_info else {}),
        },
    )
    if corpus is None and tool_choice:
        from schemaops.compare.toolsets import toolset_results

        report.toolsets, notes = toolset_results(
            source, names, tokenizer, tool_choice, tool_strict_level,
            jobs=jobs, timeout_s=timeout_s, mem_mb=mem_mb, progress=progress,
            compile_threads=compile_threads, ray=ray,
        )  # fmt: skip
        if notes:
            report.settings["tool_sets"] = notes
    report.recommendation = recommend(report)
    return report
