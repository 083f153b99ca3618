"""One dev-server recipe per engine: how to install, start, list and stop it, and how it
names itself, so that ``schemaops dev-server`` is one engine-agnostic command.

Why a table of recipes: the two engines share the lifecycle (``launcher.DevServer``) but
differ in their environment, default grammar backend and messages; before, the command
had one branch per engine that mirrored the other line for line. A third engine (TensorRT-LLM,
llama.cpp's server) is one more ``Recipe`` here plus its server subclass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemaops.devserver import launcher, vllm
from schemaops.devserver.env import ensure_env
from schemaops.errors import InputError


def _sglang_backend(chosen: str | None, disable_any_whitespace: bool) -> str:
    backend = chosen or "xgrammar"
    if backend not in launcher.GRAMMAR_BACKENDS:
        raise InputError(f"--grammar-backend must be one of {launcher.GRAMMAR_BACKENDS}")
    return backend


def _vllm_backend(chosen: str | None, disable_any_whitespace: bool) -> str:
    backend = chosen or vllm.default_backend(disable_any_whitespace)
    vllm.structured_outputs_config(backend, disable_any_whitespace)  # vLLM's refusals, first
    return backend


@dataclass(frozen=True)
class Recipe:
    """What ``dev-server`` needs of one engine (all paths default to its cache folder)."""

    name: str
    #: the engine's name in messages ("" for SGLang, the default engine: messages unchanged)
    label: str
    #: ``--json`` of a started server and of ``--install-only`` name the engine
    json_engine: bool
    #: the backend to start with (the user's choice, or the engine's default); InputError
    #: for a choice the engine would refuse at start, said before anything is installed
    backend: Callable[[str | None, bool], str]
    ensure: Callable[[Path | None], Any]
    start: Callable[..., list[launcher.DevServer]]
    running: Callable[[Path | None], list[dict[str, Any]]]
    stop: Callable[..., list[int]]
    #: how ``--status`` shows a running server's backend
    status_backend: Callable[[dict[str, Any]], str]


RECIPES = {
    "sglang": Recipe(
        name="sglang",
        label="",
        json_engine=False,
        backend=_sglang_backend,
        ensure=ensure_env,
        start=launcher.start_servers,
        running=launcher.running_servers,
        stop=launcher.stop_servers,
        status_backend=lambda s: str(s["grammar_backend"]),
    ),
    "vllm": Recipe(
        name="vllm",
        label="vLLM ",
        json_engine=True,
        backend=_vllm_backend,
        ensure=vllm.ensure_vllm_env,
        start=vllm.start_vllm_servers,
        running=vllm.running_vllm_servers,
        stop=vllm.stop_vllm_servers,
        status_backend=lambda s: f"vllm {s['grammar_backend']}",
    ),
}
