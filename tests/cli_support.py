"""Running the real ``schemaops`` command line from tests, one copy for every test file.

``run_cli`` is ``python -m schemaops ARGS`` in a subprocess, as a user runs it (exit code,
stdout, stderr), killed past ``timeout``; ``free_port`` a local TCP port nothing listens on;
``prom_samples`` a ``--prometheus`` file parsed by prometheus-client's own parser;
``key_env`` the environment with ``SCHEMAOPS_API_KEY`` set to a test's key, or unset.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parents[1]


def run_cli(
    *args: str,
    timeout: float = 120,
    cwd: Path | None = REPO,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m schemaops ARGS``; ``cwd=None`` keeps pytest's working directory."""
    return subprocess.run(
        [sys.executable, "-m", "schemaops", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        input=stdin,
    )


def free_port() -> int:
    """A local TCP port that was free a moment ago (for a server that must not answer)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prom_samples(path: Path) -> dict[str, list]:
    """name -> samples, parsed by prometheus-client's parser (raises on malformed text)."""
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(path.read_text()):
        for s in fam.samples:
            out.setdefault(s.name, []).append(s)
    return out


def key_env(key: str | None) -> dict[str, str]:
    """This process's environment with ``SCHEMAOPS_API_KEY`` = ``key`` (``None``: without it,
    so a key in the developer's own environment never leaks into a test)."""
    env = {k: v for k, v in os.environ.items() if k != "SCHEMAOPS_API_KEY"}
    if key is not None:
        env["SCHEMAOPS_API_KEY"] = key
    return env
