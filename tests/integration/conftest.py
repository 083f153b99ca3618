"""Fixtures that run integration tests against a real SGLang 0.5.23 dev server on CPU.

- ``sglang_server`` (session): one xgrammar server with compact JSON whitespace (the dev
  server's default, ``--constrained-json-disable-any-whitespace``, so the random model
  finishes JSON values), started at first use and stopped at the end of the session.
- ``sglang_url``: its base URL.
- ``sglang_client``: an ``httpx.Client`` bound to it.
- ``sglang_factory``: ``sglang_factory(grammar_backend="xgrammar", dp_size=1, workers=1,
  disable_any_whitespace=True, extra_args=(), fresh=False) -> list[DevServer]`` for tests
  that need their own servers. Same arguments share running servers across the session
  unless ``fresh=True`` (use it when the test kills, restarts or stops them). A fresh server,
  and any server with ``dp_size > 1`` (SGLang's data_parallel_controller spins a full core
  for as long as it is up), is stopped when the test that asked for it ends; the shared
  dp-1 ones at the end of the session.

``SCHEMAOPS_SGLANG_URL=http://127.0.0.1:PORT`` makes ``sglang_server`` use a server you already
started (``schemaops dev-server``) instead: fast iteration.

A server that cannot start FAILS the test with the server log's tail; it never skips: CI must
not pass without having talked to a real server. Every test in this folder is marked
``integration`` (``pytest -m "not integration"`` runs the fast tier alone).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import httpx
import pytest

# The vLLM dev-server fixtures (vllm_server, vllm_url, vllm_client): see vllm_fixtures.py.
from vllm_fixtures import (  # noqa: F401
    _vllm_session,
    auto_server,
    vllm_client,
    vllm_parser_url,
    vllm_server,
    vllm_url,
)

from schemaops.devserver import DevServer, DevServerError, ensure_env, start_servers

HTTP_TIMEOUT_S = 300.0  # a compile-heavy schema on 2 shared cores can take seconds


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test under tests/integration, so `-m "not integration"` skips them all."""
    for item in items:
        if "/tests/integration/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.integration)


def _start(**kwargs: object) -> list[DevServer]:
    try:
        return start_servers(**kwargs)  # type: ignore[arg-type]
    except DevServerError as exc:
        pytest.fail(f"could not start the SGLang dev server:\n{exc}", pytrace=False)


# The same given-URL-or-start shape as vllm_fixtures._vllm_session, over another server class,
# variable and start function; a shared helper would take all three as arguments.
@pytest.fixture(scope="session")
def sglang_server() -> Iterator[DevServer]:
    """One xgrammar server with compact JSON whitespace, shared by the whole session."""
    given = os.environ.get("SCHEMAOPS_SGLANG_URL")
    if given:
        port = urlsplit(given).port
        if port is None:
            pytest.fail(f"SCHEMAOPS_SGLANG_URL={given!r} has no port", pytrace=False)
        yield DevServer(ensure_env(), port=port)  # not ours: never stopped here
        return
    servers = _start(n=1, grammar_backend="xgrammar", disable_any_whitespace=True)
    yield servers[0]
    for s in servers:
        s.stop()


@pytest.fixture(scope="session")
def sglang_url(sglang_server: DevServer) -> str:
    return sglang_server.url


@pytest.fixture()
def sglang_client(sglang_server: DevServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sglang_server.url, timeout=HTTP_TIMEOUT_S) as client:
        yield client


Factory = Callable[..., list[DevServer]]


@pytest.fixture(scope="session")
def _shared_servers() -> Iterator[dict[tuple, list[DevServer]]]:
    """Servers kept for the session (dp-1, not fresh), keyed by their arguments."""
    shared: dict[tuple, list[DevServer]] = {}
    yield shared
    for servers in shared.values():
        for s in servers:
            s.stop()


@pytest.fixture()
def sglang_factory(_shared_servers: dict[tuple, list[DevServer]]) -> Iterator[Factory]:
    """Start servers on demand; the ones only this test needs are stopped when it ends."""
    own: list[DevServer] = []

    def factory(
        grammar_backend: str = "xgrammar",
        dp_size: int = 1,
        workers: int = 1,
        disable_any_whitespace: bool = True,
        extra_args: tuple[str, ...] | list[str] = (),
        fresh: bool = False,
    ) -> list[DevServer]:
        key = (grammar_backend, dp_size, workers, disable_any_whitespace, tuple(extra_args))
        keep = not fresh and dp_size == 1  # a dp > 1 server spins a core while it is up
        if keep and key in _shared_servers:
            for s in _shared_servers[key]:
                if not s.is_running():  # a test killed it: bring it back on the same port
                    try:
                        s.restart()
                    except DevServerError as exc:
                        pytest.fail(f"could not restart the dev server:\n{exc}", pytrace=False)
            return _shared_servers[key]
        servers = _start(
            n=workers,
            grammar_backend=grammar_backend,
            dp_size=dp_size,
            disable_any_whitespace=disable_any_whitespace,
            extra_args=list(extra_args),
        )
        if keep:
            _shared_servers[key] = servers
        else:
            own.extend(servers)
        return servers

    yield factory
    for s in own:
        s.stop()
