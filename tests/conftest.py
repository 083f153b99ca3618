"""Shared test fixtures: paths to the repository, the shipped registry and the corpora."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
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


def _interrupt_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    # A SIGTERM (a CI timeout, `kill`) is handled like Ctrl-C: pytest then runs the session
    # fixtures' teardown, which stops the dev servers and the Ray cluster the run started;
    # without this they were left running, orphaned (seen: three SGLang servers).
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
    config.addinivalue_line(
        "markers",
        "corpus(*names): reads a third-party corpus (jsonschemabench, json-schema-test-suite);"
        " skipped when it is not at hand, failed when CI=true",
    )


def _needs_engine_env(item: pytest.Item) -> bool:
    """Tests that start a dev server or read the installed engines' own code."""
    in_integration = "/tests/integration/" in str(item.path).replace("\\", "/")
    return in_integration or item.get_closest_marker("engine_env") is not None


def _runs_alone(item: pytest.Item) -> bool:
    """Tests that must share one process: the dev-server ones (one server per session, ~4 GiB
    each, started after the installers are waited for)."""
    return _needs_engine_env(item)


def _uses_ray(item: pytest.Item) -> bool:
    return (
        "ray_cluster" in getattr(item, "fixturenames", ())
        or item.get_closest_marker("ray") is not None
    )


#: ``scripts/test.sh`` runs the suite as two pytest sessions: ``parallel`` (on every core, with
#: pytest-xdist, while the dev-server environments install in the background; the Ray tests
#: all on one worker, sharing its cluster) and then ``serial`` (the tests ``_runs_alone``
#: names, in one process). Unset: one session, all tests.
PHASE_VAR = "SCHEMAOPS_TEST_PHASE"


def _select_phase(config: pytest.Config, items: list[pytest.Item]) -> None:
    phase = os.environ.get(PHASE_VAR, "")
    if phase not in ("parallel", "serial"):
        return
    keep = [i for i in items if _runs_alone(i) == (phase == "serial")]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in set(keep)])
        items[:] = keep


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests needing a dev-server environment run last (a stable move: each group keeps its
    order), so ``scripts/test.sh`` can install those environments while the rest run; under
    ``SCHEMAOPS_TEST_PHASE`` only that phase's tests are kept (``_select_phase``).

    The corpus tier: tests whose corpus is not at hand are deselected with one summary line
    (how many, and how to get them); under ``CI=true`` they stay and fail at setup instead, so a
    CI run without its corpora cannot pass by running less."""
    _select_phase(config, items)
    items.sort(key=_needs_engine_env)  # sort is stable
    for item in items:  # one worker runs them all (--dist loadgroup): one Ray cluster
        if _uses_ray(item):
            item.add_marker(pytest.mark.xdist_group("ray"))
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


def _wait_for_installers(terminal: Any) -> None:
    """Wait for the dev-server installers ``scripts/test.sh`` started in the background
    (``SCHEMAOPS_TEST_INSTALLERS``: ``engine:pid:log`` words). They are this process's children
    when test.sh ran one session (``waitpid`` then gives their exit status, a failed one is
    reported with its log), else test.sh's (polled). Either way the fixtures retry a failed
    install themselves (pip resumes) and fail with the log tail if it fails again."""
    words = os.environ.pop("SCHEMAOPS_TEST_INSTALLERS", "").split()
    for word in words:
        engine, _, rest = word.partition(":")
        pid_text, _, log = rest.partition(":")
        try:
            pid = int(pid_text)
        except ValueError:
            continue
        if terminal is not None:
            terminal.write_line(f"[test] waiting for the {engine} dev-server environment ({log})")
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:  # test.sh's child (its second pytest session): poll
            while _alive(pid):
                time.sleep(1.0)
            continue
        code = os.waitstatus_to_exitcode(status)
        if code != 0 and terminal is not None:
            terminal.write_line(
                f"[test] the {engine} dev-server install exited {code}; see {log}"
                " (the fixtures retry it)"
            )


def _alive(pid: int) -> bool:
    """Whether a process that is not this one's child still runs (Linux ``/proc``; a zombie,
    ended but not yet reaped by its parent, is not running)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def pytest_runtest_setup(item: pytest.Item) -> None:
    if _needs_engine_env(item) and "SCHEMAOPS_TEST_INSTALLERS" in os.environ:
        capture = item.config.pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled():  # the wait is said, not captured
            _wait_for_installers(item.config.pluginmanager.get_plugin("terminalreporter"))
    marker = item.get_closest_marker("corpus")
    if marker is None:
        return
    absent = sorted(set(marker.args) & set(FOUND.missing()))
    if absent:  # only reached under CI=true (otherwise deselected at collection)
        pytest.fail(f"CI=true and corpus not at hand: {', '.join(absent)}; {HOW_TO_GET}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """No installer outlives the run. A run that needed no environment (a few files, or one
    stopped at collection) stops the installers still running instead of waiting ~15 min for
    them: each leads its own process group (``setsid`` in test.sh), so its pip stops too, and
    the next run resumes the install (its marker is written only when it completes)."""
    words = os.environ.pop("SCHEMAOPS_TEST_INSTALLERS", "").split()
    terminal = session.config.pluginmanager.get_plugin("terminalreporter")
    for word in words:
        engine, _, rest = word.partition(":")
        pid_text = rest.partition(":")[0]
        if not pid_text.isdigit():
            continue
        pid = int(pid_text)
        try:
            if os.waitpid(pid, os.WNOHANG) != (0, 0):
                continue  # already ended
        except ChildProcessError:
            if not _alive(pid):  # test.sh's child: it reaps it
                continue
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGTERM)
            else:
                os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        with contextlib.suppress(ChildProcessError):  # test.sh's child: test.sh reaps it
            os.waitpid(pid, 0)
        if terminal is not None:
            terminal.write_line(
                f"[test] stopped the background {engine} dev-server install (no test needed it;"
                " the next run resumes it)"
            )


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
