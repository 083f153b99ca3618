"""Worker reuse: process-wide workers for ``measure()`` and the thread pool behind
``measure_many()``. Each worker is an ``isolate.Worker`` (one process, one backend)."""

from __future__ import annotations

import atexit
import threading
from collections import deque
from typing import Any

from schemaops.compare.isolate import Worker

# shared workers for measure(): one per (backend, tokenizer, vocab, mem) per process
_SHARED: dict[tuple, Worker] = {}
_SHARED_LOCK = threading.Lock()


def shared_worker(
    backend: str,
    tokenizer: str,
    vocab_size: int | None,
    mem_mb: int | None,
    compile_threads: int | None = None,
) -> Worker:
    """A process-wide worker reused by successive ``measure()`` calls (closed at exit)."""
    key = (backend, tokenizer, vocab_size, mem_mb, compile_threads)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = Worker(backend, tokenizer, vocab_size, mem_mb, compile_threads)
        return _SHARED[key]


def close_shared() -> None:
    """Stop every shared worker (registered with ``atexit``)."""
    with _SHARED_LOCK:
        for w in _SHARED.values():
            w.close()
        _SHARED.clear()


atexit.register(close_shared)


def run_pool(
    tasks: list[dict[str, Any]],
    backends: list[str],
    tokenizer: str,
    vocab_size: int | None,
    jobs: int,
    timeout_s: float,
    mem_mb: int | None,
    progress: Any = None,
    compile_threads: int | None = None,
) -> list[dict[str, Any]]:
    """Run every task on every backend with ``jobs`` threads, each driving one worker.

    Each backend has a queue. A thread keeps draining its current backend's queue with one
    worker; when it runs dry it moves to the backend with work left and the fewest threads
    on it (closing the old worker). So at most ``jobs`` worker processes exist at once, and
    with ``jobs >= len(backends)`` each backend's start-up is paid by as few threads as
    possible. Results come back item-major, in ``backends`` order.
    """
    queues = {b: deque(range(len(tasks))) for b in backends}
    active = dict.fromkeys(backends, 0)
    results: dict[tuple[str, int], dict[str, Any]] = {}
    lock = threading.Lock()
    total = len(tasks) * len(backends)
    done = [0]
    errors: list[BaseException] = []

    def drain() -> None:
        worker: Worker | None = None
        try:
            while True:
                with lock:
                    if worker is not None and queues[worker.backend]:
                        backend = worker.backend
                    else:
                        left = [b for b in backends if queues[b]]
                        if not left:
                            return
                        backend = min(left, key=lambda b: (active[b], -len(queues[b])))
                        if worker is not None:
                            active[worker.backend] -= 1
                        active[backend] += 1
                    i = queues[backend].popleft()
                if worker is None or worker.backend != backend:
                    if worker is not None:
                        worker.close()
                    worker = Worker(backend, tokenizer, vocab_size, mem_mb, compile_threads)
                res = worker.run(tasks[i], timeout_s=timeout_s)
                with lock:
                    results[(backend, i)] = res
                    done[0] += 1
                    n = done[0]
                if progress is not None:
                    progress(n, total, res)
        except BaseException as exc:  # surfaced after the other threads finish
            errors.append(exc)
        finally:
            if worker is not None:
                worker.close()

    threads = [threading.Thread(target=drain, daemon=True) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [results[(b, i)] for i in range(len(tasks)) for b in backends]
