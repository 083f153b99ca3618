"""Shared test fixtures: paths to the repository, the shipped registry and the corpora."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from corpus_paths import (  # noqa: F401  (re-exported)
    CORPORA,
    FOUND,
    HOW_TO_GET,
    JSB,
    JSTS,
    REPO,
    SHARED,
)

_CORPUS_SKIPPED = pytest.StashKey[tuple[int, list[str]]]()


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


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "corpus(*names): reads a third-party corpus (jsonschemabench, json-schema-test-suite);"
        " skipped when it is not at hand, failed when CI=true",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The corpus tier: tests whose corpus is not at hand are deselected with one summary line
    (how many, and how to get them); under ``CI=true`` they stay and fail at setup instead, so a
    CI run without its corpora cannot pass by running less."""
    missing = set(FOUND.missing())
    if not missing or _in_ci():
        return
    keep, skipped = [], []
    for item in items:
        marker = item.get_closest_marker("corpus")
        need = set(marker.args) if marker else set()
        (skipped if need & missing else keep).append(item)
    if skipped:
        config.hook.pytest_deselected(items=skipped)
        items[:] = keep
        config.stash[_CORPUS_SKIPPED] = (len(skipped), sorted(missing))


def pytest_runtest_setup(item: pytest.Item) -> None:
    marker = item.get_closest_marker("corpus")
    if marker is None:
        return
    absent = sorted(set(marker.args) & set(FOUND.missing()))
    if absent:  # only reached under CI=true (otherwise deselected at collection)
        pytest.fail(f"CI=true and corpus not at hand: {', '.join(absent)}; {HOW_TO_GET}")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    skipped = config.stash.get(_CORPUS_SKIPPED, None)
    if skipped:
        n, missing = skipped
        terminalreporter.write_line(
            f"corpus tier: {n} tests not run, corpus not at hand ({', '.join(missing)}): "
            f"{HOW_TO_GET}"
        )


@pytest.fixture(scope="session")
def corpora() -> Path:
    if not CORPORA.is_dir():
        pytest.fail(f"corpora not found at {CORPORA}: {HOW_TO_GET}")
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
