"""``compare``/``check`` on a Ray cluster: one Ray task per (schema, backend).

Why it is this small: the isolation stays exactly the local one. A Ray task runs in a Ray
worker process and hands its (schema, backend) to the same ``isolate.Worker`` the local pool
uses (a separate interpreter under a compile timeout and an ``RLIMIT_AS`` memory cap), so
``timeout``, ``oom`` and ``crash`` are the same statuses, with the same messages, as on one
machine; the result dict comes from the same ``core.run_task``. Nothing grammar-related runs
in the Ray worker itself, so a segfaulting library never takes a Ray worker down.

Token tables are built once per node: each Ray worker process keeps its isolated worker per
backend between tasks (``pool.shared_worker``), and the worker's token table is cached on the
node's disk (``core.table_cache_path``), so the first worker on a node builds it and the
others load it. The nodes need schemaops (same version) and the backends installed, and the
tokenizer reachable offline, as for a local run.

A node that dies mid-run: Ray reschedules its tasks (``raycluster.TASK_RETRIES``); a task that
still fails is reported as ``crash`` with the reason, so every (schema, backend) has exactly
one result.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

from schemaops.compare.isolate import failed_result
from schemaops.compare.model import CRASH


def ray_task(payload: dict[str, Any]) -> dict[str, Any]:
    """What one Ray task runs (module-level, so Ray pickles it by reference)."""
    from schemaops.compare.pool import shared_worker

    worker = shared_worker(
        payload["backend"],
        payload["tokenizer"],
        payload["vocab_size"],
        payload["mem_mb"],
        payload["compile_threads"],
    )
    return worker.run(payload["task"], timeout_s=payload["timeout_s"])


def _lost(payload: dict[str, Any], exc: BaseException) -> dict[str, Any]:
    """The result of a task Ray gave up on (its node died on every try, or it raised)."""
    from schemaops.raycluster import TASK_RETRIES

    first = (str(exc).strip().splitlines() or [""])[0][:500]
    return failed_result(
        payload["task"],
        payload["backend"],
        CRASH,
        f"ray task failed after up to {TASK_RETRIES} retries: {type(exc).__name__}: {first}",
    )


def run_ray(
    tasks: list[dict[str, Any]],
    backends: list[str],
    tokenizer: str,
    vocab_size: int | None,
    timeout_s: float,
    mem_mb: int | None,
    progress: Callable[[int, int, dict[str, Any]], None] | None,
    compile_threads: int | None,
    address: str | None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every task on every backend as Ray tasks; results item-major in ``backends`` order
    (as ``pool.run_pool``), and the cluster's ``{address, nodes, cpus}``."""
    from schemaops.raycluster import connect, map_tasks

    info = connect(address)
    payloads = [
        {
            "task": task,
            "backend": b,
            "tokenizer": tokenizer,
            "vocab_size": vocab_size,
            "mem_mb": mem_mb,
            "compile_threads": compile_threads,
            "timeout_s": timeout_s,
        }
        for task in tasks
        for b in backends
    ]
    # Ray's driver prints cluster events ("Task ... failed ... will be retried") on
    # sys.stdout from a thread of its own: to stderr, so --json stdout stays one document.
    with contextlib.redirect_stdout(sys.stderr):
        return map_tasks(ray_task, payloads, lost=_lost, progress=progress), info
