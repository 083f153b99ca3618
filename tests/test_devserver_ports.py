"""Dev-server ports: drawn where no outgoing connection can take them, and moved when taken.

A CI run lost a DP=2 SGLang server's drawn port (44077, in the kernel's ephemeral range) to
another socket in the ~60 s before the server bound it; SGLang's HTTP process then hung in
shutdown and the start waited out its 420 s timeout. The server here is a real asyncio HTTP
server in its own process, standing in for SGLang only to keep the test to a second: it fails
the bind with asyncio's own message (what uvicorn logs) and then hangs, as SGLang's did.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from schemaops.devserver.env import DevEnv
from schemaops.devserver.launcher import PORT_RANGE, DevServer, PortTaken, free_port

SERVER = """
import asyncio, sys

async def handle(reader, writer):
    await reader.readuntil(b"\\r\\n\\r\\n")
    writer.write(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nok")
    await writer.drain()
    writer.close()

async def main():
    try:
        server = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
    except OSError as exc:
        print(f"ERROR:    {exc}", flush=True)
        await asyncio.sleep(3600)  # hang instead of exiting, like SGLang's HTTP process
        return
    async with server:
        await server.serve_forever()

asyncio.run(main())
"""


@dataclass
class AsyncioServer(DevServer):
    """The launcher's lifecycle around the small asyncio server above."""

    ENGINE = "asyncio"
    PROCESS_MARK = b"python"

    def command(self) -> list[str]:
        return [sys.executable, "-c", SERVER, str(self.port)]

    def _process_env(self) -> dict[str, str]:
        return dict(os.environ)


@pytest.fixture
def held_port() -> Iterator[int]:
    """A drawn port that another socket then holds: bound, not listening, as an outgoing
    connection's source port is (a health check there is refused at once)."""
    port = free_port()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", port))
        yield port


def _ephemeral_low() -> int:
    return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_free_port_is_below_the_ephemeral_range_and_bindable() -> None:
    low, high = PORT_RANGE
    if _ephemeral_low() <= low:
        pytest.skip("this machine's ephemeral range starts below PORT_RANGE")
    for _ in range(20):
        port = free_port()
        assert low <= port <= high < _ephemeral_low()
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", port))  # nothing holds it


def test_a_drawn_port_taken_before_the_bind_moves_to_another(
    tmp_path: Path, held_port: int
) -> None:
    server = AsyncioServer(DevEnv(tmp_path), port=held_port, start_timeout=60)
    server.auto_port = True  # as if drawn: taken between the draw and the bind
    try:
        server.start()
        assert server.port != held_port
        assert httpx.get(server.url + "/health", timeout=10).status_code == 200
        logs = [p.read_text() for p in (tmp_path / "logs").iterdir()]
        assert any(f"('127.0.0.1', {held_port})" in text for text in logs)
    finally:
        server.stop()
    assert not server.is_running()


def test_a_port_the_caller_chose_is_never_moved(tmp_path: Path, held_port: int) -> None:
    server = AsyncioServer(DevEnv(tmp_path), port=held_port, start_timeout=120)
    with pytest.raises(PortTaken, match=f"port {held_port} could not bind"):
        server.start()
    assert server.port == held_port
    assert not server.is_running()  # stopped, not left hanging


def test_free_port_never_draws_a_port_to_avoid() -> None:
    """Ports drawn for servers started together are kept apart, however the draw falls: with
    all but a few ports of the range to avoid, no draw lands on one of them."""
    low, high = PORT_RANGE
    avoid = set(range(low, high + 1)) - set(range(low, high + 1, 97))
    for _ in range(50):
        assert free_port(avoid) not in avoid


def test_a_moved_port_avoids_its_siblings(tmp_path: Path, held_port: int) -> None:
    """A drawn port that moves never lands on a port a sibling server holds or was drawn."""
    low, high = PORT_RANGE
    siblings = set(range(low, high + 1)) - set(range(low, high + 1, 97))
    server = AsyncioServer(DevEnv(tmp_path), port=held_port, start_timeout=60)
    server.auto_port = True
    server.launch()
    try:
        server.wait_ready_or_move(avoid=siblings)
        assert server.port != held_port and server.port not in siblings
        assert httpx.get(server.url + "/health", timeout=10).status_code == 200
    finally:
        server.stop()
