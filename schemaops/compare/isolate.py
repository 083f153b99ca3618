"""Worker processes: a crash, hang or memory blow-up in a grammar library is a status.

One ``Worker`` is one fresh interpreter (``subprocess`` running ``_child_entry``; not
``multiprocessing``'s spawn, which re-imports the caller's ``__main__`` and so breaks scripts
without a main guard) talking over a pair of pipes with ``multiprocessing.connection``,
holding one backend built for one tokenizer (building the token table and importing
xgrammar/torch costs seconds, so a worker serves many schemas).

Per task the parent waits ``timeout_s`` for the compile and then, separately,
``measure_timeout_s`` for the walks; if either passes, the worker is killed (``timeout``)
and the next task starts a fresh one. A worker that dies is ``crash`` (``oom`` when its
stderr shows a failed allocation). Memory: after start-up the child caps its own address
space (``RLIMIT_AS``) at *its start-up size + mem_mb*, since torch alone reserves gigabytes
of virtual memory before any grammar exists; a compile that needs more then fails its
allocation (``MemoryError``, ``std::bad_alloc`` or a Rust allocation abort): ``oom``.

The child's stderr goes to a temporary file (xgrammar's C++ warnings and native abort
messages land there) and its tail is attached to crash results. The file has no name from the
start (``tempfile.TemporaryFile``: ``O_TMPFILE``, or unlinked at once): the parent keeps its
descriptor and reads the tail with ``pread``, so no exit path leaves a log in ``$TMPDIR``, not
even a parent killed by ``timeout`` or SIGKILL in the middle of a compile (a named file was
removed only by ``close()``, which such a parent never reaches).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from schemaops.compare.enforce import summarize
from schemaops.compare.model import CRASH, ERROR, OOM, TIMEOUT, empty_result, unwalked

STARTUP_TIMEOUT_S = 300.0
_TIMED_OUT = object()  # _recv: nothing arrived in time
_DIED = object()  # _recv: the pipe closed (the child exited or was killed)
_OOM_MARKERS = (
    "memory allocation of",
    "bad_alloc",
    "MemoryError",
    "Cannot allocate memory",
    "out of memory",
)


def _child_entry() -> None:
    """``python -c`` entry point: argv = rfd wfd backend tokenizer vocab_size mem_mb threads."""
    from multiprocessing.connection import Connection

    rfd, wfd, backend, tokenizer, vocab, mem, threads = sys.argv[1:8]

    class Duplex:  # one object with poll/recv/send over the two pipe ends
        def __init__(self) -> None:
            self.r, self.w = (
                Connection(int(rfd), writable=False),
                Connection(int(wfd), readable=False),
            )
            self.recv, self.send = self.r.recv, self.w.send

    _child_main(
        Duplex(), backend, tokenizer, int(vocab) or None, int(mem) or None, int(threads) or None
    )


def _child_main(
    conn: Any,
    backend: str,
    tokenizer: str,
    vocab_size: int | None,
    mem_mb: int | None,
    compile_threads: int | None = None,
) -> None:
    """Worker loop: build the backend, cap memory, then serve tasks until EOF/None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    _exit_with_parent()
    from schemaops.compare.core import make_backend, run_task

    try:
        b = make_backend(backend, tokenizer, vocab_size, compile_threads)
    except BaseException as exc:
        conn.send(("init_error", f"{type(exc).__name__}: {exc}"))
        return
    if mem_mb:
        import resource

        cap = _vm_size() + mem_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    conn.send(("ready", {"pid": os.getpid(), "vocab_size": b.vocab_size}))
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            res = run_task(
                b,
                task["schema_text"],
                task["instances"],
                name=task.get("name", ""),
                generate=task.get("generate", 0),
                on_compiled=lambda ms: conn.send(("compiled", ms)),
                instance_errors=task.get("instance_errors", ()),
            )
        except MemoryError as exc:  # past the cap while walking
            res = failed_result(task, b.name, OOM, f"MemoryError: {exc}")
        except Exception as exc:  # a bug of ours or an odd library exception: not a crash
            res = failed_result(task, b.name, ERROR, f"internal: {exc!r}")
        conn.send(("done", res))


def _exit_with_parent() -> None:
    """Exit if the parent goes away, even in the middle of a minutes-long native compile
    (which would otherwise only notice the closed pipe when it finishes)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


def _vm_size() -> int:
    """This process's virtual size in bytes (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


class _ParentConn:
    """The parent's ends: poll/recv from the child, send to it."""

    def __init__(self, r: Any, w: Any) -> None:
        self.r, self.w = r, w

    def poll(self, timeout: float) -> bool:
        return self.r.poll(timeout)

    def recv(self) -> Any:
        return self.r.recv()

    def send(self, obj: Any) -> None:
        self.w.send(obj)

    def close(self) -> None:
        self.r.close()
        self.w.close()


class WorkerStartError(RuntimeError):
    """The worker could not build its backend (library missing, tokenizer unknown...)."""


class Worker:
    """One isolated process for one (backend, tokenizer); restarted after a failure."""

    def __init__(
        self,
        backend: str,
        tokenizer: str = "qwen2.5",
        vocab_size: int | None = None,
        mem_mb: int | None = 4096,
        compile_threads: int | None = None,
    ) -> None:
        self.backend, self.tokenizer, self.vocab_size, self.mem_mb = (
            backend,
            tokenizer,
            vocab_size,
            mem_mb,
        )
        self.compile_threads = compile_threads
        self.proc: Any = None
        self.conn: Any = None
        self.log: Any = None  # the child's stdout+stderr: a nameless temporary file
        self.starts = 0
        self._lock = threading.Lock()

    def _start(self) -> None:
        from multiprocessing.connection import Connection

        if self.log is not None:  # a worker started again keeps no earlier log
            self.log.close()
        self.log = tempfile.TemporaryFile(prefix=f"schemaops-{self.backend}-", suffix=".log")
        fd = self.log.fileno()
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        env = dict(os.environ)
        pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pkg_root, env.get("PYTHONPATH")]))
        args = [
            sys.executable,
            "-c",
            "from schemaops.compare.isolate import _child_entry; _child_entry()",
            str(to_child_r),
            str(from_child_w),
            self.backend,
            self.tokenizer,
            str(self.vocab_size or 0),
            str(self.mem_mb or 0),
            str(self.compile_threads or 0),
        ]
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            env=env,
            pass_fds=(to_child_r, from_child_w),
            start_new_session=True,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self.conn = _ParentConn(
            Connection(from_child_r, writable=False), Connection(to_child_w, readable=False)
        )
        self.starts += 1
        msg = self._recv(STARTUP_TIMEOUT_S)
        if not (isinstance(msg, tuple) and msg[0] == "ready"):
            detail = (
                msg[1]
                if isinstance(msg, tuple)
                else f"no answer in {STARTUP_TIMEOUT_S:.0f} s: {self._tail()}"
                if msg is _TIMED_OUT
                else f"it exited during start-up: {self._tail()}"
            )
            self.close(kill=True)
            raise WorkerStartError(f"{self.backend} worker failed to start: {detail}")

    def _recv(self, timeout: float) -> Any:
        """The next message, ``_TIMED_OUT`` if none came in time, ``_DIED`` on EOF."""
        try:
            if not self.conn.poll(timeout):
                return _TIMED_OUT
            return self.conn.recv()
        except (EOFError, OSError):
            return _DIED

    def _tail(self, n: int = 1500) -> str:
        if self.log is None:
            return ""
        try:  # pread: the child shares the file offset, which a seek here would move
            fd = self.log.fileno()
            size = os.fstat(fd).st_size
            return os.pread(fd, n, max(0, size - n)).decode("utf-8", "replace").strip()
        except (OSError, ValueError):  # ValueError: the file was closed meanwhile
            return ""

    def run(
        self, task: dict[str, Any], timeout_s: float = 60.0, measure_timeout_s: float | None = None
    ) -> dict[str, Any]:
        """Run one task; always returns a result dict (never raises for backend failures).

        Serialised per worker (a lock), so threads sharing a ``shared_worker`` take turns.
        """
        with self._lock:
            return self._run(task, timeout_s, measure_timeout_s)

    def _run(
        self, task: dict[str, Any], timeout_s: float, measure_timeout_s: float | None
    ) -> dict[str, Any]:
        name = task.get("name", "")
        if self.proc is None or self.proc.poll() is not None:
            try:
                self._start()
            except WorkerStartError as exc:
                return failed_result(task, self.backend, ERROR, str(exc))
        t0 = time.perf_counter()
        try:
            self.conn.send(task)
        except (OSError, ValueError) as exc:
            self.close(kill=True)
            return failed_result(task, self.backend, CRASH, f"worker unreachable: {exc}")
        msg = self._recv(timeout_s)
        compile_ms = None
        if isinstance(msg, tuple) and msg[0] == "compiled":
            compile_ms = round(msg[1], 3)
            msg = self._recv(measure_timeout_s or max(timeout_s, 60.0))
        if isinstance(msg, tuple) and msg[0] == "done":
            res = msg[1]
            if res["status"] == OOM:  # a failed allocation may leave the library unusable
                self.close(kill=True)
            return res
        if msg is _TIMED_OUT:
            self.close(kill=True)
            if compile_ms is None:
                return failed_result(
                    task, self.backend, TIMEOUT, f"compile exceeded {timeout_s:g} s"
                )
            res = failed_result(
                task, self.backend, TIMEOUT, "compiled, then timed out walking instances"
            )
            res["compile_ms"] = compile_ms
            return res
        # the child died
        try:
            code = self.proc.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        tail = self._tail()
        self.close(kill=True)
        status = OOM if any(m in tail for m in _OOM_MARKERS) else CRASH
        how = (
            f"killed by signal {signal.Signals(-code).name}"
            if code is not None and code < 0
            else f"exit code {code}"
        )
        elapsed = time.perf_counter() - t0
        res = failed_result(
            task,
            self.backend,
            status,
            f"worker died after {elapsed:.1f} s ({how}): {tail[-600:]}".strip(),
            name,
        )
        res["compile_ms"] = compile_ms
        return res

    def close(self, kill: bool = False) -> None:
        """Stop the process (politely unless ``kill``) and close its log (which has no name,
        so closing it frees it)."""
        if self.proc is not None:
            if not kill and self.proc.poll() is None:
                try:
                    self.conn.send(None)
                    self.proc.wait(5)
                except (OSError, ValueError, subprocess.TimeoutExpired):
                    pass
            if self.proc.poll() is None:
                self.proc.kill()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if self.conn is not None:
            self.conn.close()
        if self.log is not None:
            self.log.close()
        self.proc = self.conn = self.log = None


def failed_result(
    task: dict[str, Any], backend: str, status: str, error: str, name: str | None = None
) -> dict[str, Any]:
    res = empty_result(name if name is not None else task.get("name", ""), backend, status, error)
    res["instance_errors"] = list(task.get("instance_errors", []))
    res["enforcement"] = summarize(unwalked(task.get("instances", [])), status)
    return res
