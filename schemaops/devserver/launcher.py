"""Start, wait for, stop and restart real SGLang dev servers (one process group each).

Each server runs in its own session (``start_new_session``) so that stopping it signals the
whole group: the HTTP process, the scheduler(s), the detokenizer and multiprocessing helpers.
A pid file per server (``<cache>/run/<port>.json``) lets ``stop_servers()`` (and
``schemaops dev-server --stop``) find servers started by another process.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from schemaops.devserver.env import DevEnv, DevServerError, default_cache_dir, ensure_env, log_tail

# "none": SGLang without grammar enforcement (what `schemaops probe` must catch).
GRAMMAR_BACKENDS = ("xgrammar", "llguidance", "outlines", "none")
DEFAULT_START_TIMEOUT_S = 420.0  # 20-65 s alone; several at once on 2 shared cores take longer
STOP_GRACE_S = 15.0
S = TypeVar("S", bound="DevServer")


class PortTaken(DevServerError):
    """The server could not bind its HTTP port: another socket took it after it was drawn."""


# Where a dev server's port is drawn from: below the kernel's ephemeral range, so that no
# outgoing connection can take it as its source port in the ~60 s before the server binds it
# (a CI run lost 44077 that way to a DP=2 server's own start-up). SGLang draws the ports its
# children bind later the same way, from 22000-29999 (`get_free_port_below_ephemeral` in
# sglang/srt/utils/network.py, 0.5.23); Ray's workers default to 10002-19999
# (`--min-worker-port`/`--max-worker-port`). This range is neither's.
PORT_RANGE = (20000, 21999)
PORT_DRAWS = 64
# asyncio's create_server error when the port is held (CPython Lib/asyncio/base_events.py),
# which uvicorn logs; SGLang's HTTP process then hangs in shutdown instead of exiting.
BIND_ERROR = "error while attempting to bind on address ('127.0.0.1', {port})"
PORT_MOVES = 3  # fresh ports tried when a server's drawn port was taken before it bound


def free_port(avoid: Collection[int] = ()) -> int:
    """A TCP port that nothing holds now and that no outgoing connection can be handed.

    Drawn at random from ``PORT_RANGE`` when it lies below the kernel's ephemeral range
    (``/proc/sys/net/ipv4/ip_local_port_range``); otherwise, or when every draw is held, a port
    the kernel hands out (which may then be taken before the server binds it: ``PortTaken``).
    Never one of ``avoid``: ports drawn for servers that have not bound them yet.
    """
    low, high = PORT_RANGE
    high = min(high, _ephemeral_low() - 1)
    if high - low + 1 >= PORT_DRAWS:
        for port in random.sample(range(low, high + 1), PORT_DRAWS):
            if port not in avoid and _bindable(port):
                return port
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in avoid:
            return port


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _bindable(port: int) -> bool:
    """Whether ``port`` can be bound on every IPv4 address (so also on 127.0.0.1) right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def cpu_bind_groups(ranks: int) -> str:
    """``SGLANG_CPU_OMP_THREADS_BIND`` for ``ranks`` CPU ranks: this process's CPUs split evenly.

    SGLang on CPU binds one rank per NUMA node unless told otherwise and refuses dp_size 2 on a
    one-node machine; with fewer CPUs than ranks, ranks share CPUs.
    """
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < ranks:
        return "|".join(str(cpus[i % len(cpus)]) for i in range(ranks))
    size = len(cpus) // ranks
    groups = []
    for i in range(ranks):
        chunk = cpus[i * size : (i + 1) * size]
        contiguous = chunk[-1] - chunk[0] == len(chunk) - 1
        if len(chunk) == 1 or not contiguous:
            groups.append(str(chunk[0]))
        else:
            groups.append(f"{chunk[0]}-{chunk[-1]}")
    return "|".join(groups)


def _get(url: str, timeout: float = 5.0) -> int:
    """HTTP status of a GET (0 when nothing answers)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (OSError, ValueError):
        return 0


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group, from /proc.

    ``killpg(pgid, 0)`` also succeeds while only an unreaped zombie is left, which would make
    every stop wait out its grace period.
    """
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


def _group_alive(pgid: int) -> bool:
    return bool(group_members(pgid))


def is_engine_process(pid: int, mark: bytes) -> bool:
    """Guard against a recycled pid: only signal a process whose command line names the
    engine (``mark``, lower case: ``b"sglang"``, ``b"vllm"``)."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return False
    return mark in cmd.lower()


def stop_group(
    pgid: int, grace: float = STOP_GRACE_S, proc: subprocess.Popen[bytes] | None = None
) -> None:
    """SIGTERM the group, wait up to ``grace`` s, then SIGKILL what is left.

    ``proc`` is the leader when this process started it: it is reaped while waiting.
    """
    if not _signal_group(pgid, signal.SIGTERM):
        return
    for sig_deadline, then in ((grace, signal.SIGKILL), (10.0, None)):
        deadline = time.monotonic() + sig_deadline
        while time.monotonic() < deadline:
            if proc is not None:
                proc.poll()
            if not _group_alive(pgid):
                return
            time.sleep(0.2)
        if then is not None:
            _signal_group(pgid, then)


@dataclass
class DevServer:
    """One SGLang server on 127.0.0.1 serving the tiny model from a DevEnv.

    ``start()`` returns once ``/health`` answers 200; ``stop()`` ends the whole process group;
    ``kill()`` SIGKILLs it (a crash, for tests); ``restart()`` starts it again on the same port,
    so clients keep the same URL. Usable as a context manager.

    The lifecycle (process group, pid file, readiness, stop/kill/restart) is every engine's;
    an engine's subclass (``vllm.VllmServer``) gives its launch command, environment, ``info``
    fields and ``ENGINE``/``PROCESS_MARK``.
    """

    #: the engine's name in messages
    ENGINE = "SGLang"
    #: what a live server's command line contains (``is_engine_process``)
    PROCESS_MARK = b"sglang"

    env: DevEnv
    port: int = 0
    grammar_backend: str = "xgrammar"
    dp_size: int = 1
    # Compact JSON by default: with SGLang's free whitespace a random model never ends a value,
    # so every JSON request would run to max_new_tokens (False keeps SGLang's own default).
    disable_any_whitespace: bool = True
    extra_args: list[str] = field(default_factory=list)
    start_timeout: float = DEFAULT_START_TIMEOUT_S
    pid: int | None = None
    log_path: Path | None = None
    started_in_s: float | None = None
    #: whether the port was drawn by ``free_port`` (then a taken port moves, see ``start``)
    auto_port: bool = field(default=False, repr=False)
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _t0: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        if self.grammar_backend not in GRAMMAR_BACKENDS:
            raise DevServerError(
                f"unknown grammar backend {self.grammar_backend!r}: "
                f"expected one of {', '.join(GRAMMAR_BACKENDS)}"
            )
        self.choose_port()

    def choose_port(self) -> None:
        """Draw a free port when none was given (``port=0``)."""
        if self.port == 0:
            self.port = free_port()
            self.auto_port = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.env.run_dir / f"{self.port}.json"

    def command(self) -> list[str]:
        """The exact launch command (the verified CPU flags, then the caller's extra args)."""
        cmd = [
            str(self.env.python),
            "-m",
            "sglang.launch_server",
            "--model-path",
            str(self.env.model),
            "--device",
            "cpu",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--grammar-backend",
            self.grammar_backend,
            "--max-total-tokens",
            "32768",  # without it the KV pool takes ~15 GB
            "--sleep-on-idle",
            "--enable-metrics",
        ]
        if self.dp_size > 1:
            cmd += ["--dp-size", str(self.dp_size)]
        if self.disable_any_whitespace:
            # A random model never ends a value when whitespace is free: force compact JSON
            # (xgrammar, llguidance; outlines' own default is already at most one space).
            cmd.append("--constrained-json-disable-any-whitespace")
        return cmd + list(self.extra_args)

    def _process_env(self) -> dict[str, str]:
        env = self.env.server_env()
        if self.dp_size > 1 and "SGLANG_CPU_OMP_THREADS_BIND" not in env:
            env["SGLANG_CPU_OMP_THREADS_BIND"] = cpu_bind_groups(self.dp_size)
        return env

    # key by key as the --json document of dev-server (the look-alike of check/gate.py's to_dict)
    def info(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "port": self.port,
            "pid": self.pid,
            "log": str(self.log_path) if self.log_path else None,
            "grammar_backend": self.grammar_backend,
            "dp_size": self.dp_size,
            "disable_any_whitespace": self.disable_any_whitespace,
            "extra_args": list(self.extra_args),
            "started_in_s": self.started_in_s,
        }

    def is_running(self) -> bool:
        """Whether the server's process group still has a live process."""
        if self._proc is not None:
            self._proc.poll()  # reap the leader if it exited, so it does not count as alive
        return self.pid is not None and _group_alive(self.pid)

    def launch(self) -> None:
        """Spawn the server process (returns at once; see ``wait_ready``)."""
        if self.is_running():
            return
        self.env.log_dir.mkdir(parents=True, exist_ok=True)
        self.env.run_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = (
            self.env.log_dir / f"server-{self.port}-{time.strftime('%Y%m%d-%H%M%S')}.log"
        )
        with open(self.log_path, "wb") as log:
            log.write(("$ " + " ".join(self.command()) + "\n").encode())
            log.flush()
            self._proc = subprocess.Popen(
                self.command(),
                cwd=str(self.env.root),
                env=self._process_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: stop() reaches every child
            )
        self.pid = self._proc.pid
        self._t0 = time.monotonic()
        self.pid_file.write_text(json.dumps({**self.info(), "started_at": time.time()}))

    def wait_ready(self, timeout: float | None = None) -> None:
        """Poll ``/health`` until 200; on exit or timeout stop the server and raise with the log."""
        timeout = self.start_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            if self._proc is not None and self._proc.poll() is not None:
                rc = self._proc.returncode
                self.stop()
                raise DevServerError(self._failure(f"exited with code {rc} during start"))
            if self._lost_port():
                self.stop()
                raise PortTaken(self._failure("could not bind its port: another socket holds it"))
            if _get(self.url + "/health", timeout=5) == 200:
                self.started_in_s = round(time.monotonic() - self._t0, 1)
                return
            if time.monotonic() > deadline:
                self.stop()
                raise DevServerError(self._failure(f"not healthy after {timeout:.0f}s"))
            time.sleep(0.5)

    def _failure(self, what: str) -> str:
        tail = log_tail(self.log_path or Path("/nonexistent"))
        return f"{self.ENGINE} dev server on port {self.port} {what}; log {self.log_path}:\n" + tail

    def _lost_port(self) -> bool:
        """Whether the log says the HTTP port was held by another socket when the server bound
        it (the server itself may hang instead of exiting, so waiting would run to timeout)."""
        if self.log_path is None:
            return False
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - 65536))
                tail = f.read()
        except OSError:
            return False
        return BIND_ERROR.format(port=self.port).encode() in tail

    def wait_ready_or_move(self, timeout: float | None = None, avoid: Collection[int] = ()) -> None:
        """``wait_ready``; if the drawn port was taken before the server bound it, draw another
        and launch again (up to ``PORT_MOVES`` times). A port the caller chose never moves.
        ``avoid``: the ports of servers started beside this one (a move never lands on one of
        them, bound or not yet)."""
        for move in range(PORT_MOVES + 1):
            try:
                self.wait_ready(timeout)
                return
            except PortTaken:
                if not self.auto_port or move == PORT_MOVES:
                    raise
            self.port = free_port({*avoid, self.port})
            self.launch()

    def start(self, timeout: float | None = None) -> DevServer:
        self.launch()
        self.wait_ready_or_move(timeout)
        return self

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """Stop the whole process group (SIGTERM, then SIGKILL after ``grace`` s)."""
        proc = self._proc
        if self.pid is not None:
            stop_group(self.pid, grace, proc)
        self._proc = None
        self.pid_file.unlink(missing_ok=True)

    def kill(self) -> None:
        """SIGKILL the whole group at once, like a crash (the pid file stays until stop())."""
        if self.pid is not None:
            _signal_group(self.pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.is_running():
                time.sleep(0.1)

    def restart(self, timeout: float | None = None) -> DevServer:
        """Stop (if running) and start again on the same port: same URL, empty grammar cache."""
        self.stop()
        self.launch()
        self.wait_ready(timeout)  # never moves: clients keep this URL
        return self

    def __enter__(self) -> DevServer:
        if not self.is_running():
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_servers(
    n: int = 1,
    *,
    grammar_backend: str = "xgrammar",
    dp_size: int = 1,
    port: int | None = None,
    disable_any_whitespace: bool = True,
    extra_args: list[str] | None = None,
    cache_dir: Path | str | None = None,
    timeout: float = DEFAULT_START_TIMEOUT_S,
) -> list[DevServer]:
    """Install if needed, then start ``n`` independent servers concurrently; all healthy or error.

    ``port`` is the first server's port (the others take the next free ports); default: free
    ports. If any server fails to start, all are stopped and DevServerError carries its log.
    """
    if n < 1:
        raise DevServerError("need at least one server")
    env = ensure_env(cache_dir)

    def make(p: int) -> DevServer:
        return DevServer(
            env,
            port=p,
            grammar_backend=grammar_backend,
            dp_size=dp_size,
            disable_any_whitespace=disable_any_whitespace,
            extra_args=list(extra_args or []),
            start_timeout=timeout,
        )

    return start_many(make, n, port)


def start_many(make: Callable[[int], S], n: int, port: int | None) -> list[S]:
    """``n`` servers from ``make(port)``, launched together, then each waited for; all
    healthy, or all stopped and the first failure raised (with its log).

    ``port`` is the first server's port (the others take the next ports); ``None``: free
    ports, distinct even if the kernel hands out one twice."""
    servers: list[S] = []
    try:
        taken: set[int] = set()
        for i in range(n):
            p = free_port(taken) if port is None else port + i
            taken.add(p)
            servers.append(make(p))
            servers[-1].auto_port = port is None
            servers[-1].launch()
        for s in servers:  # a moved port is seen by the servers waited for after it
            s.wait_ready_or_move(avoid={o.port for o in servers if o is not s})
    except BaseException:
        for s in servers:
            s.stop()
        raise
    return servers


def running_servers(cache_dir: Path | str | None = None) -> list[dict[str, Any]]:
    """SGLang servers recorded in the cache's pid files whose process group is still alive."""
    run = DevEnv(Path(cache_dir) if cache_dir else default_cache_dir()).run_dir
    return running_recorded(run, DevServer.PROCESS_MARK)


def running_recorded(run_dir: Path, mark: bytes) -> list[dict[str, Any]]:
    """The pid files in ``run_dir`` whose process group still holds a process of the engine
    (``mark``); a stale file (the server is gone, or the pid was recycled) is removed."""
    found = []
    for f in sorted(run_dir.glob("*.json")) if run_dir.is_dir() else []:
        try:
            data = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        pid = data.get("pid")
        members = group_members(pid) if isinstance(pid, int) else []
        if any(is_engine_process(m, mark) for m in members):
            found.append(data)
        else:
            f.unlink(missing_ok=True)  # stale: the server is gone
    return found


def stop_servers(
    servers: list[DevServer] | None = None,
    *,
    cache_dir: Path | str | None = None,
    port: int | None = None,
) -> list[int]:
    """Stop the given servers, or those recorded in the cache dir (all, or the one on ``port``).

    Returns the ports stopped. Only process groups whose processes are SGLang are signalled.
    """
    if servers is not None:
        for s in servers:
            s.stop()
        return [s.port for s in servers]
    run = DevEnv(Path(cache_dir) if cache_dir else default_cache_dir()).run_dir
    return stop_recorded(run, DevServer.PROCESS_MARK, port)


def stop_recorded(run_dir: Path, mark: bytes, port: int | None = None) -> list[int]:
    """Stop the engine's servers recorded in ``run_dir`` (all, or the one on ``port``)."""
    ports = []
    for data in running_recorded(run_dir, mark):
        if port is not None and int(data["port"]) != port:
            continue
        stop_group(int(data["pid"]))
        (run_dir / f"{data['port']}.json").unlink(missing_ok=True)
        ports.append(int(data["port"]))
    return ports
