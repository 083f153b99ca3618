"""CLI command ``lower``: served schemas for one backend plus the residual the app checks.

Option parsing only: ``schemaops.lower.lower_registry`` does the work (and is callable from
Python); ``schemaops.lower.render.print_lower`` renders. Exit 0 when every schema was lowered
and proven, 1 when some schema cannot be lowered to compile-and-enforce on the backend, 2 for
usage or input errors. Progress goes to stderr so ``--json`` stdout stays one document.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from schemaops.commands._common import Backend, call, emit_json, fail, terminal_lines
from schemaops.errors import EXIT_GATE
from schemaops.providers import TARGETS

#: the provider targets, from the providers' own list (one place of knowledge)
TARGET_NAMES = ", ".join(TARGETS)


# Option declarations look alike across commands (typer's shape; --engine as in check): each
# is its own flag with its own help.
def lower_cmd(
    name: str | None = typer.Argument(
        None, metavar="[NAME]", help="One schema of the registry (default: all)."
    ),
    backend: Backend | None = typer.Option(
        None,
        "--backend",
        "-b",
        help="The backend to serve on: xgrammar, llguidance or outlines (or --target).",
    ),
    target: str | None = typer.Option(
        None,
        "--target",
        help=f"A hosted provider to serve on instead: {TARGET_NAMES} (docs/contracts/hosted.md).",
    ),
    engine: str | None = typer.Option(
        None,
        "--engine",
        help="sglang or vllm, configured with BACKEND: also apply that engine's HTTP 400 "
        "rules (SGLang 0.5.23, vLLM 0.32.0) and show its request path and cache key.",
    ),
    registry: Path = typer.Option(Path("schemas"), "--registry", "-r", help="Registry folder."),
    out: Path | None = typer.Option(
        None, "--out", help="Write the served schemas here as a registry folder (+ .lower/)."
    ),
    tokenizer: str = typer.Option("qwen2.5", "--tokenizer", help="Tokenizer of the model."),
    timeout: float = typer.Option(
        120.0,
        "--timeout",
        help="Seconds per served compile, and per schema's differential check (generation "
        "included): past it the check stops and the schema is unproven.",
    ),
    mem_mb: int = typer.Option(
        4096,
        "--mem-mb",
        help="Memory cap per compile worker (MiB); a served schema past it or --timeout "
        "climbs the relaxation ladder.",
    ),
    generate: int = typer.Option(
        25, "--generate", help="Instances generated per schema and side for the differential."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress on stderr."),
) -> None:
    """Rewrite schemas so a backend compiles and enforces them (--backend), or a hosted API
    accepts them (--target), and list the residual rules the application must still check.

    Each served schema is proven on generated and mutated instances; --out DIR writes the
    served registry (serve and warm that folder).

    Example: schemaops lower --backend llguidance --out served/

    Exit 0 every schema lowered and proven, 1 one cannot be, 2 usage error. How and fields:
    docs/contracts/lower.md.
    """
    from schemaops.lower import lower_registry

    if (backend is None) == (target is None):
        raise fail("error: lower needs exactly one of --backend and --target", 2)
    if target is not None:
        return lower_target_cmd(
            name, target, registry, out, engine, timeout, generate, json_out, quiet
        )

    def progress(msg: str) -> None:
        sys.stderr.write(terminal_lines(msg) + "\n")  # names escaped: they are file names
        sys.stderr.flush()

    assert backend is not None
    report = call(
        lower_registry,
        registry,
        backend.value,
        name=name,
        engine=engine,
        out=out,
        tokenizer=tokenizer,
        timeout_s=timeout,
        generate=generate,
        progress=None if quiet else progress,
        mem_mb=mem_mb,
        json_out=json_out,
    )
    if json_out:
        emit_json(report.to_dict())
    else:
        from schemaops.lower.render import print_lower

        print_lower(report)
    if not report.passed:
        bad = [c.name for c in report.cases if not c.lowered_ok]
        raise fail(
            f"lower failed: {len(bad)} of {len(report.cases)} schema(s) cannot be lowered to "
            f"compile-and-enforce on {report.backend}: {', '.join(bad[:10])}",
            EXIT_GATE,
        )


def lower_target_cmd(
    name: str | None,
    target: str,
    registry: Path,
    out: Path | None,
    engine: str | None,
    timeout: float,
    generate: int,
    json_out: bool,
    quiet: bool,
) -> None:
    """``lower --target``: ``schemaops.lower.target_run.lower_registry_target``, rendered."""
    from schemaops.lower.target_run import (
        lower_registry_target,
        print_lower_target,
        unproven_line,
    )

    if engine is not None:
        raise fail("error: --engine goes with --backend, not --target", 2)
    report = call(
        lower_registry_target,
        registry,
        target,
        name=name,
        out=out,
        timeout_s=timeout,
        generate=generate,
        progress=_lines(quiet),
        json_out=json_out,
    )
    if json_out:
        emit_json(report.to_dict())
    else:
        import io

        buf = io.StringIO()
        print_lower_target(report, buf)
        sys.stdout.write(terminal_lines(buf.getvalue()))  # names escaped: they are file names
    if report.not_lowered:
        bad = report.not_lowered
        raise fail(
            f"lower failed: {len(bad)} of {len(report.cases)} schema(s) cannot be lowered for "
            f"{report.target}: {', '.join(bad[:10])}",
            EXIT_GATE,
        )
    if report.toolsets_not_lowered:  # tool sets (NAME.tools.json): lower/toolsets.py
        bad = report.toolsets_not_lowered
        raise fail(
            f"lower failed: {len(bad)} of {len(report.toolsets)} tool set(s) cannot be lowered "
            f"for {report.target}: {', '.join(bad[:10])}",
            EXIT_GATE,
        )
    if not report.passed:
        raise fail(unproven_line(report), EXIT_GATE)


def _lines(quiet: bool) -> Any:
    if quiet:
        return None
    return lambda msg: (sys.stderr.write(terminal_lines(msg) + "\n"), sys.stderr.flush())


def check_fix(
    registry: Path,
    backend: Backend | None,
    engine: str | None,
    out: Path | None,
    check_opts: dict[str, Any],
    junit: Path | None,
    json_out: bool,
    quiet: bool,
    fix: bool = True,
) -> None:
    """``check --fix``: ``schemaops.lower.fix.fix_registry``, rendered; exit 0 only when every
    schema is in ``--out`` and ``--out`` passes the gate (see that module)."""
    from schemaops.check import write_junit
    from schemaops.lower.fix import fix_registry

    if not fix:
        raise fail("error: --out goes with --fix (check itself writes no registry)", 2)
    if backend is None or out is None:
        raise fail("error: check --fix needs --backend (the backend to lower for) and --out", 2)
    rep = call(
        fix_registry,
        registry,
        backend.value,
        out,
        engine=engine,
        lower_progress=_lines(quiet),
        **check_opts,
        json_out=json_out,
    )
    if junit is not None:
        call(write_junit, rep.after, junit)
    if json_out:
        emit_json(rep.to_dict())
    else:
        from schemaops.check.render import print_check

        print_check(rep.after)
        print(terminal_lines(rep.summary()))
    if not rep.passed:
        raise fail(rep.summary().splitlines()[-1].strip(), EXIT_GATE)


def register(app: typer.Typer) -> None:
    """Add ``lower`` to the root app."""
    app.command("lower")(lower_cmd)
