"""Which engine answers, and what it says about itself (version, DP ranks, start time).

SGLang has ``/server_info`` (a JSON object: version, grammar_backend, dp_size,
startup_time). vLLM 0.32 has no ``/server_info`` (404); it says ``owned_by: "vllm"`` in
``/v1/models``, its version in ``/version``, and ``/metrics`` carries one ``engine="N"``
label per data-parallel rank (each EngineCore holds its own grammar cache) plus the API
process's ``process_start_time_seconds`` (a new value: a restarted server, an empty cache);
reading those pages is the vLLM engine model's (``schemaops.engines.vllm``).

A server that answers neither way is not warmed: ``EngineMismatch`` (exit 2), as is a
server that contradicts ``--engine``. A ``/server_info`` that does not answer in time (stuck
or broken) says nothing either way; that server is taken as SGLang, as before engines were
detected, so a slow info endpoint never blocks a warm run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from schemaops.engines.vllm import metrics_ranks
from schemaops.errors import InputError
from schemaops.http.client import ServerClient

Engine = Literal["sglang", "vllm"]
EngineChoice = Literal["auto", "sglang", "vllm"]
# /server_info, /v1/models, /version and /metrics answer at once on a healthy server.
INFO_TIMEOUT_S = 30.0


class EngineMismatch(InputError):
    """The server is not the engine ``--engine`` names, or is neither SGLang nor vLLM."""


@dataclass
class Identity:
    """What one server says it is."""

    engine: Engine
    info: dict[str, Any]  # SGLang's /server_info ({} for vLLM)
    version: Any = None
    dp_ranks: int | None = None  # vLLM: distinct engine labels in /metrics


def _owner(models: Any) -> str | None:
    data = models.get("data") if isinstance(models, dict) else None
    first = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
    owner = first.get("owned_by")
    return owner if isinstance(owner, str) else None


async def metrics_text(client: ServerClient) -> str:
    """vLLM's ``/metrics`` page ("" when it does not answer with text)."""
    res = await client.request("GET", "/metrics", timeout_s=min(INFO_TIMEOUT_S, client.timeout_s))
    body = res.last.body
    return body if res.last.status == 200 and isinstance(body, str) else ""


async def identify(client: ServerClient, given: EngineChoice) -> Identity:
    """SGLang or vLLM, from what the server really answers; raise ``EngineMismatch``."""
    res = await client.request(
        "GET", "/server_info", timeout_s=min(INFO_TIMEOUT_S, client.timeout_s)
    )
    info = res.last.body if isinstance(res.last.body, dict) else None
    if info is not None and res.last.status == 200:
        if given == "vllm":
            raise EngineMismatch(
                f"{client.shown_url} answers /server_info like SGLang, not vLLM (--engine vllm)"
            )
        return Identity("sglang", info, info.get("version"))
    if res.last.status != 404 and given != "vllm":
        return Identity("sglang", {})  # no usable answer (timeout, 5xx): says nothing
    models = await client.get_json("/v1/models", timeout_s=INFO_TIMEOUT_S)
    if _owner(models) == "vllm":
        if given == "sglang":
            raise EngineMismatch(
                f"{client.shown_url} is vLLM (/v1/models owned_by vllm, no /server_info), "
                "not SGLang (--engine sglang)"
            )
        version = await client.get_json("/version", timeout_s=INFO_TIMEOUT_S)
        ranks = metrics_ranks(await metrics_text(client))
        v = version.get("version") if isinstance(version, dict) else None
        return Identity("vllm", {}, v, ranks)
    if given == "vllm":
        raise EngineMismatch(
            f"{client.shown_url} does not answer like vLLM (/v1/models has no owned_by "
            f"'vllm'; got {_owner(models)!r}): is --server the vLLM API server?"
        )
    raise EngineMismatch(
        f"{client.shown_url} is neither SGLang (no /server_info: HTTP {res.last.status}) nor "
        f"vLLM (/v1/models owned_by {_owner(models)!r}): warm knows the cache keys of those "
        "two engines only"
    )
