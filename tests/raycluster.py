"""A real two-node Ray cluster for the ``--ray`` tests, reachable on loopback only.

Why a private network namespace: Ray 2.60's GCS and raylets listen on every interface
(``*:PORT``) whatever ``--node-ip-address`` says, and the tests' rule is that servers bind
127.0.0.1 only. Inside a fresh network namespace (``unshare --net``) the only interface is
``lo``, so the cluster cannot be reached from outside the namespace at all (there, Ray binds
``127.0.0.1``). It also gives the cluster ports of its own: two clusters on one machine
(another test session, a developer's cluster) never collide, so the GCS can use 6379.

Consequences for tests: a driver must run inside the namespace, so tests run the CLI (or a
Python script) through ``cluster.run([...])``, which prefixes ``nsenter --net``. Without root,
the namespace is made in a user namespace (``unshare --user --map-root-user``) where the kernel
allows it.

The nodes are started with ``ray start`` (``ray.cluster_utils.Cluster`` made the driver dial
the host's public address and hang). Each ``ray start`` runs in a session of its own, so
``kill_worker_node()`` kills exactly the second node's raylet and workers (a node dying
mid-run). Teardown kills every process in the namespace (nothing else lives there) and
removes the private ``--temp-dir``; ``ray stop`` is never used, since it stops every Ray
cluster on the machine.

Token auth stays on (Ray's default): the cluster and the drivers share a random
``RAY_AUTH_TOKEN`` in their environment, so the tests exercise what a real cluster does and
nothing is written to ``~/.ray/auth_token``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GCS_PORT = 6379
ADDRESS = f"127.0.0.1:{GCS_PORT}"
START_TIMEOUT_S = 120.0

# Run inside the new namespace: bring lo up (SIOCGIFFLAGS/SIOCSIFFLAGS, no `ip` needed), say
# "up", then wait for stdin to close (the test session's end, or its death).
_HOLDER = r"""
import fcntl, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
req = struct.pack("16sH14x", b"lo", 0)
flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, req))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))
print("up", flush=True)
sys.stdin.read()
"""


class NamespaceUnavailable(RuntimeError):
    """No private network namespace could be made here (no unshare, no privileges)."""


class RayTestCluster:
    """Head + one worker node (``ray start``) inside a loopback-only network namespace."""

    def __init__(self, head_cpus: int = 1, worker_cpus: int = 1) -> None:
        self.head_cpus, self.worker_cpus = head_cpus, worker_cpus
        self.address = ADDRESS
        self.ray_bin = str(Path(sys.executable).with_name("ray"))
        self.temp_dir = tempfile.mkdtemp(prefix="sor-", dir="/tmp")  # short: socket paths
        self.holder: subprocess.Popen[str] | None = None
        self.userns = os.geteuid() != 0
        self.netns = ""
        self.head_sid = self.worker_sid = 0
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        env.update(
            RAY_AUTH_MODE="token",
            RAY_AUTH_TOKEN=secrets.token_hex(16),
            RAY_USAGE_STATS_ENABLED="0",
        )
        self.env = env

    # -- namespace -------------------------------------------------------------------------

    def _make_namespace(self) -> None:
        if not shutil.which("unshare") or not shutil.which("nsenter"):
            raise NamespaceUnavailable("unshare/nsenter (util-linux) not found")
        cmd = ["unshare", "--net"]
        if self.userns:
            cmd[1:1] = ["--user", "--map-root-user"]
        self.holder = subprocess.Popen(
            [*cmd, "--", sys.executable, "-c", _HOLDER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.holder.stdout is not None
        line = self.holder.stdout.readline().strip()
        if line != "up":
            err = self.holder.stderr.read() if self.holder.stderr else ""
            self.holder.kill()
            raise NamespaceUnavailable(f"unshare --net failed: {err.strip()[-400:]}")
        self.netns = os.readlink(f"/proc/{self.holder.pid}/ns/net")

    def prefix(self) -> list[str]:
        """The command prefix that runs a program inside the cluster's namespace."""
        assert self.holder is not None
        pfx = ["nsenter", "-t", str(self.holder.pid), "--net"]
        if self.userns:
            pfx += ["--user", "--preserve-credentials"]
        return pfx

    def members(self) -> list[int]:
        """Every process in the namespace (the holder included)."""
        out = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    if os.readlink(f"/proc/{d}/ns/net") == self.netns:
                        out.append(int(d))
                except OSError:
                    continue
        return out

    # -- cluster ---------------------------------------------------------------------------

    def _ray_start(self, args: list[str]) -> int:
        """``ray start ARGS`` in its own session; returns that session's id."""
        proc = subprocess.Popen(
            [*self.prefix(), self.ray_bin, "start", *args, "--disable-usage-stats"],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            out, _ = proc.communicate(timeout=START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise RuntimeError(f"ray start {args[0]} took over {START_TIMEOUT_S:.0f} s") from None
        if proc.returncode != 0:
            raise RuntimeError(f"ray start failed ({proc.returncode}): {out[-1500:]}")
        return proc.pid

    def start(self) -> RayTestCluster:
        """Make the namespace, start the head, then the worker node; wait for both."""
        self._make_namespace()
        common = ["--node-ip-address=127.0.0.1", f"--temp-dir={self.temp_dir}"]
        self.head_sid = self._ray_start(
            ["--head", f"--port={GCS_PORT}", f"--num-cpus={self.head_cpus}",
             "--include-dashboard=false", *common]
        )  # fmt: skip
        self.worker_sid = self._ray_start(
            [f"--address={self.address}", f"--num-cpus={self.worker_cpus}", *common]
        )
        self.wait_nodes(2)
        return self

    def python(self, code: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """Run a Python snippet as a driver inside the namespace."""
        return self.run([sys.executable, "-c", code], timeout=timeout)

    def run(
        self, cmd: list[str], timeout: float = 300.0, env: dict[str, str] | None = None, **kw: Any
    ) -> subprocess.CompletedProcess[str]:
        """Run ``cmd`` inside the namespace with the cluster's environment (token included)."""
        full_env = {**self.env, **(env or {})}
        return subprocess.run(
            [*self.prefix(), *cmd],
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            **kw,
        )

    def popen(self, cmd: list[str], env: dict[str, str] | None = None, **kw: Any) -> Any:
        """Start ``cmd`` inside the namespace without waiting (for a kill mid-run)."""
        return subprocess.Popen([*self.prefix(), *cmd], env={**self.env, **(env or {})}, **kw)

    def node_states(self) -> dict[str, bool]:
        """{node id: alive} as the GCS reports them (asked from a short driver)."""
        r = self.python(
            f"import ray; ray.init(address={self.address!r}, log_to_driver=False,"
            " logging_level='error'); print('NODES', {n['NodeID']: n['Alive'] for n in"
            " ray.nodes()})",
            timeout=60,
        )
        lines = [x for x in r.stdout.splitlines() if x.startswith("NODES ")]
        if not lines:
            raise RuntimeError(f"cannot ask the cluster: {r.stderr[-800:]}")
        import ast

        return dict(ast.literal_eval(lines[-1][6:]))

    def alive_nodes(self) -> int:
        """How many nodes the GCS reports alive."""
        return sum(self.node_states().values())

    def wait_nodes(self, n: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            got = self.alive_nodes()
            if got == n:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{got} alive Ray node(s), expected {n}")
            time.sleep(0.5)

    def kill_worker_node(self) -> None:
        """SIGKILL the second node's raylet and everything it started (a node death)."""
        if self.worker_sid:
            try:
                os.killpg(self.worker_sid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def restart_worker_node(self) -> None:
        """Bring a second node back after ``kill_worker_node`` (for later tests)."""
        self.worker_sid = self._ray_start(
            [
                f"--address={self.address}",
                f"--num-cpus={self.worker_cpus}",
                "--node-ip-address=127.0.0.1",
                f"--temp-dir={self.temp_dir}",
            ]
        )

    def stop(self) -> None:
        """Kill every process in the namespace, then remove the temp dir. Idempotent."""
        if self.holder is not None and self.netns:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                pids = [p for p in self.members() if p != self.holder.pid]
                for pid in pids:
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
                deadline = time.monotonic() + 5
                while pids and time.monotonic() < deadline:
                    pids = [p for p in pids if _alive(p)]
                    time.sleep(0.1)
        if self.holder is not None:
            if self.holder.stdin:
                self.holder.stdin.close()
            try:
                self.holder.wait(5)
            except subprocess.TimeoutExpired:
                self.holder.kill()
                self.holder.wait(5)
            self.holder = None
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return False
