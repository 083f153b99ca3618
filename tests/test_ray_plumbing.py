"""``schemaops.raycluster`` and the test cluster itself: a real Ray cluster, never a mock.

The cluster (``tests/raycluster.py``) lives in a loopback-only network namespace, so the
drivers here run inside it through ``ray_cluster.python``/``ray_cluster.run``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from schemaops.errors import InputError
from schemaops.raycluster import redact_address, resolve_address

pytestmark = pytest.mark.ray


def test_cluster_is_loopback_only_and_has_two_nodes(ray_cluster) -> None:
    r = ray_cluster.python(
        "import socket, ray;"
        "print(sorted(n for _, n in socket.if_nameindex()));"
        "from schemaops.raycluster import connect;"
        f"print(connect({ray_cluster.address!r}))"
    )
    assert r.returncode == 0, r.stderr[-2000:]
    ifaces, info = r.stdout.strip().splitlines()[-2:]
    assert ifaces == "['lo']"  # nothing but loopback can reach the cluster
    assert "'nodes': 2" in info and "'cpus': 2" in info
    assert ray_cluster.env["RAY_AUTH_TOKEN"] not in r.stdout + r.stderr


def test_wrong_token_is_a_clean_exit_2(ray_cluster) -> None:
    """Token auth is on: a driver with another token is refused, bounded, token not shown."""
    r = ray_cluster.run(
        [sys.executable, "-m", "schemaops", "compare", "--ray", ray_cluster.address, "-q"],
        env={"RAY_AUTH_TOKEN": "0" * 32, "SCHEMAOPS_RAY_CONNECT_TIMEOUT": "40"},
        timeout=90,
    )
    assert r.returncode == 2, r.stderr[-2000:]
    assert "cannot connect to the Ray cluster at 127.0.0.1:6379" in r.stderr
    assert "Traceback" not in r.stderr and "0" * 32 not in r.stderr


def test_refused_address_is_a_fast_clean_exit_2() -> None:
    pytest.importorskip("ray")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "schemaops", "compare", "--ray", f"127.0.0.1:{port}", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2, r.stderr[-2000:]
    assert f"cannot reach the Ray cluster at 127.0.0.1:{port}" in r.stderr
    assert "Traceback" not in r.stderr
    assert time.monotonic() - t0 < 30


def test_silent_head_is_bounded_by_the_connect_deadline() -> None:
    """A port that accepts TCP and never speaks (a wrong service, a stuck head):
    ``ray.init`` alone retries for minutes; the deadline makes it a clean exit 2."""
    pytest.importorskip("ray")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    port = srv.getsockname()[1]
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                continue

    threading.Thread(target=accept, daemon=True).start()
    env = {**os.environ, "SCHEMAOPS_RAY_CONNECT_TIMEOUT": "8"}
    runs = {}
    try:
        for addr in (f"127.0.0.1:{port}", f"ray://user:hunter2@127.0.0.1:{port}"):
            t0 = time.monotonic()
            r = subprocess.run(
                [sys.executable, "-m", "schemaops", "compare", "--ray", addr, "-q"],
                capture_output=True, text=True, timeout=90, env=env,
            )  # fmt: skip
            runs[addr.split(":")[0]] = (r, time.monotonic() - t0)
    finally:
        stop.set()
        for c in held:
            c.close()
        srv.close()
    (gcs, elapsed), (client, _) = runs["127.0.0.1"], runs["ray"]
    assert gcs.returncode == 2, gcs.stderr[-2000:]
    assert f"the Ray cluster at 127.0.0.1:{port} did not answer in 8 s" in gcs.stderr
    assert elapsed < 40
    # Ray Client address: refused by Ray (or by its missing client extra), credentials hidden
    assert client.returncode == 2, client.stderr[-2000:]
    assert f"ray://***@127.0.0.1:{port}" in client.stderr
    for r in (gcs, client):
        assert "hunter2" not in r.stderr and "Traceback" not in r.stderr


def test_without_ray_installed_the_hint_and_exit_2() -> None:
    """Simulated: ``sys.modules["ray"] = None`` makes ``import ray`` fail in that process
    exactly as an environment without the extra does (installing a second venv without Ray
    would cost minutes)."""
    code = (
        "import sys; sys.modules['ray'] = None; sys.argv = ['schemaops'] + sys.argv[1:];"
        "from schemaops.cli import main; main()"
    )
    for cmd in (["compare", "--ray", "-q"], ["check", "--backend", "xgrammar", "--ray", "-q"]):
        r = subprocess.run(
            [sys.executable, "-c", code, *cmd], capture_output=True, text=True, timeout=60
        )
        assert r.returncode == 2, (cmd, r.stderr[-2000:])
        assert "pip install 'schemaops[ray]'" in r.stderr
        assert "Traceback" not in r.stderr


def test_addresses_are_redacted_and_auto_never_starts_a_cluster(monkeypatch) -> None:
    assert redact_address("ray://u:secret@head:10001") == "ray://***@head:10001"
    assert redact_address("head:6379?token=abc") == "head:6379?***"
    assert redact_address("10.0.0.1:6379") == "10.0.0.1:6379"
    assert resolve_address("local") is None
    assert resolve_address("10.0.0.1:6379") == "10.0.0.1:6379"
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.2:6379")
    assert resolve_address("auto") == "10.0.0.2:6379"
    assert resolve_address(None) == "10.0.0.2:6379"
    monkeypatch.delenv("RAY_ADDRESS")
    monkeypatch.setenv("TMPDIR", "/nonexistent-ray-tmp")  # no ray_current_cluster to find
    try:
        found = resolve_address("auto")
    except InputError as exc:
        assert "--ray local" in str(exc)
    else:  # another Ray cluster runs on this machine: auto finds it, never starts one
        assert found


@pytest.mark.parametrize(
    "cmd",
    [
        ["compare", "-q"],
        ["check", "--backend", "xgrammar", "-q"],
        ["audit", "{log}", "--registry", "{reg}"],
    ],
)
@pytest.mark.parametrize("address", ["[::1", "ray://u:hunter2@[::1", "[::1]:x"])
def test_a_malformed_address_is_a_clean_exit_2(tmp_path, cmd: list[str], address: str) -> None:
    """Issue 22 #16: ``--ray=[::1`` (an unclosed IPv6 bracket) made ``urlsplit`` raise a
    ValueError outside the try: a traceback. Every command taking ``--ray`` now exits 2 with
    a message, credentials redacted, before any connection is tried."""
    pytest.importorskip("ray")
    reg = tmp_path / "reg"
    reg.mkdir()
    (reg / "a.json").write_text('{"type": "object"}')
    log = tmp_path / "x.jsonl"
    log.write_text("{}\n")
    argv = [a.format(log=log, reg=reg) for a in cmd]
    if argv[0] != "audit":
        argv += ["--registry", str(reg)]
    r = subprocess.run(
        [sys.executable, "-m", "schemaops", *argv, f"--ray={address}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr[-2000:]
    assert "--ray:" in r.stderr and "Traceback" not in r.stderr
    assert "hunter2" not in r.stderr
