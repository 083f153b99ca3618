"""Shared test fixtures: paths to the repository, the shipped registry and the corpora."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from corpus_paths import CORPORA, JSB, JSTS, REPO, SHARED  # noqa: F401  (re-exported)


@pytest.fixture(scope="session", autouse=True)
def _private_xdg_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep the audit's on-disk validator cache (``$XDG_CACHE_HOME/schemaops/audit``) out of
    the user's cache: tests that call the audit with default options would otherwise write
    there, and a stale user entry could leak into a test. The dev-server environments stay
    in ``~/.cache/schemaops/devserver`` (they do not read ``XDG_CACHE_HOME``)."""
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def registry_dir() -> Path:
    return REPO / "schemas"


@pytest.fixture(scope="session")
def corpora() -> Path:
    if not CORPORA.is_dir():
        pytest.fail(f"corpora not found at {CORPORA}: the tests need ../shared/corpora")
    return CORPORA


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[object]:
    """A real Ray cluster, head + one worker node, loopback only (``tests/raycluster.py``);
    stopped (every process in its network namespace killed) at the end of the session."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from raycluster import RayTestCluster

    cluster = RayTestCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
