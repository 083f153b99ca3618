"""CLI commands ``compare`` (measure backends) and ``check`` (pre-deploy gate on one backend).

Option parsing only: ``run_compare`` and ``run_check`` do the work and are callable from
Python; ``print_report`` and ``print_check`` render. Progress goes to stderr so ``--json``
stdout stays exactly one document.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from schemaops.commands._common import Backend, call, emit_json, fail, terminal_lines
from schemaops.engines.capacity import DEFAULT_HEADROOM_PCT
from schemaops.errors import EXIT_GATE, InputError
from schemaops.providers import TARGETS

_BACKENDS_HELP = "Comma-separated backends: xgrammar, llguidance, outlines."
_RAY_HELP = (
    "Run each (schema, backend) as a task on a Ray cluster: --ray (or --ray auto) = the "
    "running cluster (RAY_ADDRESS or the one `ray start` recorded), --ray HOST:PORT or "
    "ray://HOST:PORT, --ray local = a private one-off local Ray. Same results as a local "
    "run; -j is then unused. Needs schemaops\\[ray]."
)
_THREADS_HELP = (
    "xgrammar compile threads (default 8: what SGLang and vLLM use; 1 for a single-core "
    "figure). The other backends compile on one thread."
)


def _progress(quiet: bool) -> Callable[[int, int, dict[str, Any]], None] | None:
    """``measure_many``'s progress callback: one short line per result on stderr."""
    if quiet:
        return None

    def cb(done: int, total: int, res: dict[str, Any]) -> None:
        cms = res.get("compile_ms")
        ms = f" {cms:.1f} ms" if isinstance(cms, (int, float)) else ""
        line = (
            f"[{done}/{total}] {res.get('schema', '?')} {res.get('backend', '?')}: "
            f"{res.get('status', '?')}{ms}"
        )
        sys.stderr.write(terminal_lines(line) + "\n")  # a schema name is a file name
        sys.stderr.flush()

    return cb


def compare_cmd(
    registry: Path | None = typer.Option(
        None, "--registry", "-r", help="Registry folder (default: schemas)."
    ),
    corpus: Path | None = typer.Option(
        None, "--corpus", help="JSONSchemaBench-style JSONL: {unique_id, json_schema}."
    ),
    backends: str = typer.Option("xgrammar,llguidance,outlines", "--backends", help=_BACKENDS_HELP),
    tokenizer: str = typer.Option(
        "qwen2.5", "--tokenizer", help="qwen2.5, qwen3.6, deepseek-v3 or a tokenizer.json."
    ),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N schemas."),
    jobs: int = typer.Option(1, "--jobs", "-j", help="Worker processes."),
    timeout: float = typer.Option(60.0, "--timeout", help="Seconds per schema and backend."),
    mem_mb: int = typer.Option(4096, "--mem-mb", help="Memory cap per worker (MiB)."),
    compile_threads: int | None = typer.Option(None, "--compile-threads", help=_THREADS_HELP),
    generate: int | None = typer.Option(
        None,
        "--generate",
        help="Also walk N generated valid instances per schema (default: 0 for a "
        "registry, 1 for a corpus; needs schemaops\\[compare]).",
    ),
    ray: str | None = typer.Option(None, "--ray", metavar="[ADDRESS]", help=_RAY_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document."),
    html: Path | None = typer.Option(None, "--html", help="Write a self-contained report."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress on stderr."),
    tool_choice: list[str] | None = typer.Option(
        None,
        "--tool-choice",
        help="A registry's tool sets (NAME.tools.json) are measured as SGLang and vLLM compile "
        "them for this tool_choice: required (default), named, named:FN, auto, auto:PARSER, "
        "required:PARSER, named:FN:PARSER, none; repeatable.",
    ),
    tool_strict_level: str = typer.Option(
        "off",
        "--tool-strict-level",
        help="For auto: the server's level (off, function, parameter).",
    ),
) -> None:
    """Which grammar backend for your schemas: compile time, per-token mask time and real
    enforcement of each schema on xgrammar, llguidance and outlines, on a real tokenizer.

    Enforcement is walked token by token over each schema's sidecar examples: enforced,
    accepts_invalid (a keyword ignored), rejects_valid, unsupported, failed, or unchecked.

    Example: schemaops compare --backends xgrammar,llguidance --registry schemas

    Fields and verdicts: docs/contracts/compare.md.
    """
    from schemaops.compare.run import run_compare

    strict = call(_strict_level, tool_strict_level, json_out=json_out)  # a usage error first
    report = call(
        run_compare,
        registry,
        corpus,
        backends=backends,
        tokenizer=tokenizer,
        limit=limit,
        jobs=jobs,
        timeout_s=timeout,
        mem_mb=mem_mb,
        progress=_progress(quiet),
        generate=generate,
        compile_threads=compile_threads,
        ray=ray,
        tool_choice=tool_choice or ["required"],
        tool_strict_level=strict,
        json_out=json_out,
    )
    if html is not None:
        from schemaops.compare.report_html import write_html

        call(write_html, report, html)
        typer.echo(f"wrote {html}", err=True)
    if json_out:
        emit_json(report.to_dict())
        return
    from schemaops.compare.report_text import print_report

    print_report(report)


# Option declarations look alike across commands (typer's shape); each is its own flag.
def check_cmd(
    backend: Backend | None = typer.Option(
        None,
        "--backend",
        "-b",
        help="The backend to deploy on: xgrammar, llguidance or outlines (required without "
        "--engine; with --engine the "
        "engine's configured backend: vLLM auto, SGLang xgrammar).",
    ),
    engine: str | None = typer.Option(
        None,
        "--engine",
        help="sglang or vllm: gate each schema on the backend that engine really serves it "
        "with (vLLM 0.32.0 auto routing, SGLang 0.5.23's HTTP 400 rules).",
    ),
    registry: Path = typer.Option(Path("schemas"), "--registry", "-r", help="Registry folder."),
    compile_budget_ms: float = typer.Option(
        1000.0, "--compile-budget-ms", help="Max cold compile time per schema (ms)."
    ),
    tokenizer: str = typer.Option("qwen2.5", "--tokenizer", help="Tokenizer of the model."),
    cache_headroom: float = typer.Option(
        DEFAULT_HEADROOM_PCT,
        "--cache-headroom",
        min=0.0,
        max=99.0,
        help="With --engine: percent of a byte-capped grammar cache (vLLM's xgrammar LRU) left "
        "free for grammars outside the registry; 0 when the registry is the server's only "
        "structured traffic.",
    ),
    jobs: int = typer.Option(1, "--jobs", "-j", help="Worker processes."),
    timeout: float | None = typer.Option(
        None, "--timeout", help="Seconds per compile (default max(60, 3 x budget))."
    ),
    mem_mb: int = typer.Option(4096, "--mem-mb", help="Memory cap per worker (MiB)."),
    compile_threads: int | None = typer.Option(None, "--compile-threads", help=_THREADS_HELP),
    ray: str | None = typer.Option(None, "--ray", metavar="[ADDRESS]", help=_RAY_HELP),
    junit: Path | None = typer.Option(None, "--junit", help="Write JUnit XML for CI."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress on stderr."),
    targets: list[str] | None = typer.Option(
        None,
        "--target",
        "-t",
        help="Also judge each schema against a hosted API's documented strict-mode rules "
        f"(offline): {', '.join(TARGETS)}; repeatable. Without --backend/--engine only "
        "the hosted check runs. See docs/contracts/hosted.md.",
    ),
    tool_choice: list[str] | None = typer.Option(
        None,
        "--tool-choice",
        help="Gate each registry tool set (NAME.tools.json) as SGLang and vLLM (or --engine) "
        "compile it for this tool_choice: required (default), named (each tool), named:FN, "
        "auto or auto:PARSER / required:PARSER / named:FN:PARSER (the tool parser's "
        "structural tag, where the "
        "engine constrains it), none; repeatable. See docs/contracts/compare.md.",
    ),
    tool_strict_level: str = typer.Option(
        "off",
        "--tool-strict-level",
        help="With --tool-choice auto: the server's tool strict level (SGLang "
        "SGLANG_TOOL_STRICT_LEVEL, vLLM --tool-strict-level): off, function, parameter.",
    ),
    fix: bool = typer.Option(
        False, "--fix", help="Lower the failing schemas (schemaops lower), write --out, gate it."
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="With --fix: the registry to deploy, checked writable before any work. Never "
        "emptied: a schema already in it that this run did not write (the registry no longer "
        "has it) is reported as stale and fails the run.",
    ),
) -> None:
    """Pre-deploy gate: exit 1 unless every schema compiles within budget and is enforced.

    On the backend you deploy with (--backend), as a serving engine routes it (--engine
    sglang|vllm), or against a hosted API's strict-mode rules (--target T: see the option).
    Each failing schema says what to change; --fix --out DIR lowers the failing ones.

    Example: schemaops check --backend xgrammar --registry schemas --junit check.xml

    Exit 0 every schema passes, 1 one fails, 2 usage error. Fields: docs/contracts/compare.md,
    docs/contracts/hosted.md (--target).
    """
    from schemaops.check import run_check, write_junit

    # a bad target or strict level is a usage error before any compile runs
    strict = call(_strict_level, tool_strict_level, json_out=json_out)
    if targets:
        from schemaops.providers import parse_targets

        targets = call(parse_targets, targets, json_out=json_out)
    if targets and (fix or out is not None):
        raise fail("error: --fix/--out lower for a backend; they do not take --target", 2)
    if targets and engine is None and backend is None:
        from schemaops.commands.hosted import check_hosted_only

        return check_hosted_only(registry, targets, junit, json_out)
    opts: dict[str, Any] = {
        "tokenizer": tokenizer,
        "compile_budget_ms": compile_budget_ms,
        "jobs": jobs,
        "timeout_s": timeout,
        "mem_mb": mem_mb,
        "progress": _progress(quiet),
        "compile_threads": compile_threads,
        "ray": ray,
    }
    modes = [m for m in (tool_choice or ["required"]) if m != "none"]
    if fix or out is not None:  # the gate-side entry point to lower (commands/lower.py)
        from schemaops.commands.lower import check_fix

        # tool sets are gated under --fix too, in the same modes (lower/fix.py)
        opts.update(tool_choice=modes, tool_strict_level=strict)
        return check_fix(registry, backend, engine, out, opts, junit, json_out, quiet, fix)
    hosted = None
    if targets:  # --target beside --backend/--engine: both gates, one report; judged first,
        # so a registry with problems is exit 2 (hosted.md) before anything compiles
        from schemaops.commands import hosted as h

        hosted = h.hosted_report(registry, targets, json_out)
    if engine is not None:
        from schemaops.check.engine import run_engine_check

        chosen = backend.value if backend else None
        report = call(
            run_engine_check,
            registry,
            engine,
            chosen,
            cache_headroom_pct=cache_headroom,
            tool_choice=modes,
            tool_strict_level=strict,
            json_out=json_out,
            **opts,
        )
    elif backend is None:
        raise fail("error: check needs --backend (or --engine sglang|vllm)", 2)
    else:
        report = call(
            run_check,
            registry,
            backend.value,
            tool_choice=modes,
            tool_strict_level=strict,
            json_out=json_out,
            **opts,
        )
    if junit is not None:
        call(write_junit, report, junit)
        if hosted is not None:
            h.write_junit(hosted, junit, junit.read_text(encoding="utf-8"))
    if json_out:
        emit_json(report.to_dict() if hosted is None else h.attach(report.to_dict(), hosted))
    else:
        from schemaops.check.render import print_check

        print_check(report)
        if hosted is not None:
            typer.echo("")
            h.print_hosted(hosted)
    if not report.passed:
        raise fail(
            f"check failed: {len(report.failed)} of {len(report.cases)} schema(s) not ready "
            f"for {report.backend}"
            + (f"; {h.failure_line(hosted, '')}" if hosted and not hosted.passed else ""),
            EXIT_GATE,
        )
    if hosted is not None and not hosted.passed:
        raise fail(h.failure_line(hosted), EXIT_GATE)


def _strict_level(name: str) -> int:
    """``--tool-strict-level`` -> 0/1/2 (``engines/structural_tags.py`` ``LEVELS``)."""
    from schemaops.engines.structural_tags import LEVELS

    if name.strip().lower() not in LEVELS:
        raise InputError(f"--tool-strict-level {name!r}: expected off, function or parameter")
    return LEVELS[name.strip().lower()]


def register(app: typer.Typer) -> None:
    """Add ``compare`` and ``check`` to the root app."""
    app.command("compare")(compare_cmd)
    app.command("check")(check_cmd)
