"""Per schema and backend: cold compile time, per-token mask/advance time, enforcement.

Public API::

    measure(schema_text, backend, tokenizer_name="qwen2.5", valid=[], invalid=[],
            timeout_s=60, mem_mb=4096, generate=0, vocab_size=None,
            compile_threads=None) -> dict
    measure_many(items, backends, tokenizer="qwen2.5", jobs=1, timeout_s=60, mem_mb=4096,
                 progress=None, generate=0, vocab_size=None, compile_threads=None) -> list[dict]

Each result has the shape documented in ``schemaops.compare.model``.

Everything that touches a grammar library runs in a worker process (``isolate``, running
``core.run_task``), so a crash, hang or memory blow-up in a backend becomes a status, never
an exception here. Workers are reused: one process serves many schemas (``pool``), and is
replaced only after a timeout, crash or out-of-memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from schemaops.compare.instances import build_instances


def measure(
    schema_text: str,
    backend: str,
    tokenizer_name: str = "qwen2.5",
    valid: Iterable[Any] = (),
    invalid: Iterable[Any] = (),
    timeout_s: float = 60.0,
    mem_mb: int | None = 4096,
    *,
    name: str | None = None,
    generate: int = 0,
    vocab_size: int | None = None,
    compile_threads: int | None = None,
) -> dict[str, Any]:
    """Measure one schema on one backend in a (reused) isolated worker; see module doc."""
    from schemaops.compare.pool import shared_worker

    task = prepare_task(name or "", schema_text, list(valid), list(invalid), generate)
    worker = shared_worker(backend, tokenizer_name, vocab_size, mem_mb, compile_threads)
    return worker.run(task, timeout_s=timeout_s)


def prepare_task(
    name: str, schema_text: str, valid: list[Any], invalid: list[Any], generate: int
) -> dict[str, Any]:
    """The worker task for one schema: its text and worker-ready instances.

    Text that is not JSON gets no instances (the backend reports it as its own error); an
    example that cannot be prepared (ordering, attribution) is not dropped silently: the
    reason travels with the task into the result's ``instance_errors``.
    """
    errors: list[str] = []
    instances: list[dict[str, Any]] = []
    try:
        schema = json.loads(schema_text)
    except (ValueError, TypeError):
        schema = None
    else:
        try:
            instances = build_instances(schema, valid, invalid)
        except (Exception, RecursionError) as exc:
            errors.append(f"examples not walked: {type(exc).__name__}: {exc}"[:500])
    return {
        "schema_text": schema_text,
        "instances": instances,
        "name": name,
        "generate": generate,
        "instance_errors": errors,
    }


def measure_many(
    items: Iterable[Any],
    backends: Iterable[str],
    tokenizer: str = "qwen2.5",
    jobs: int = 1,
    timeout_s: float = 60.0,
    mem_mb: int | None = 4096,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
    *,
    generate: int = 0,
    vocab_size: int | None = None,
    compile_threads: int | None = None,
    ray: str | None = None,
) -> list[dict[str, Any]]:
    """Measure every item on every backend with ``jobs`` parallel workers.

    ``ray``: an address (``auto``, ``local``, ``HOST:PORT``, ``ray://...``) to run each
    (item, backend) as a Ray task on that cluster instead (``compare/remote.py``); ``jobs``
    is then unused (the cluster's CPUs decide). The results are the same.

    ``items``: registry ``Schema`` objects, ``SuiteCase``s, JSONSchemaBench records
    (``{"unique_id", "json_schema"}``), or dicts ``{"name", "schema" (object or text),
    "valid", "invalid"}``. Results come back item-major, in ``backends`` order.
    ``progress(done, total, result)`` is called from worker threads as results arrive
    (with ``ray``, from this thread as tasks finish).
    """
    from schemaops.compare.pool import run_pool

    backends = list(backends)
    tasks = [prepare_task(*normalise_item(item), generate) for item in items]
    if ray is not None:
        from schemaops.compare.remote import run_ray

        results, _ = run_ray(
            tasks, backends, tokenizer, vocab_size, timeout_s, mem_mb, progress,
            compile_threads, ray,
        )  # fmt: skip
        return results
    return run_pool(
        tasks, backends, tokenizer, vocab_size, jobs, timeout_s, mem_mb, progress, compile_threads
    )


def normalise_item(item: Any) -> tuple[str, str, list[Any], list[Any]]:
    """(name, schema text, valid, invalid) from any supported item kind."""
    if hasattr(item, "wire") and hasattr(item, "name"):  # registry Schema
        return item.name, item.wire("native"), list(item.valid), list(item.invalid)
    if hasattr(item, "text") and hasattr(item, "schema"):  # SuiteCase
        return item.name, item.text, list(item.valid), list(item.invalid)
    if isinstance(item, dict):
        if "json_schema" in item:  # JSONSchemaBench line
            return str(item.get("unique_id", "")), item["json_schema"], [], []
        schema = item.get("schema", item.get("text"))
        text = (
            schema
            if isinstance(schema, str)
            else json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
        )
        return (
            str(item.get("name", "")),
            text,
            list(item.get("valid", [])),
            list(item.get("invalid", [])),
        )
    if isinstance(item, tuple) and len(item) == 2:
        return str(item[0]), item[1], [], []
    raise TypeError(f"cannot measure {type(item).__name__}: expected a Schema, SuiteCase or dict")
