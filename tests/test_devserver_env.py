"""The dev servers' environment lets their imports write bytecode.

The installs skip byte-compiling (pip ``--no-compile``); the servers' first imports write the
``.pyc`` files. A CI image that sets ``PYTHONDONTWRITEBYTECODE=1`` (this project's does) made
every server start compile torch, transformers and sglang again: an SGLang start took ~79 s
here, ~38 s once its imports were read from ``.pyc``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from schemaops.devserver.env import DevEnv
from schemaops.devserver.vllm_env import VllmEnv


@pytest.mark.parametrize("env_class", [DevEnv, VllmEnv])
def test_a_server_process_writes_its_bytecode(
    env_class: type[DevEnv], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = env_class(tmp_path / "cache").server_env()
    assert "PYTHONDONTWRITEBYTECODE" not in env
    mod = tmp_path / "mod"
    mod.mkdir()
    (mod / "imported_once.py").write_text("X = 1\n")
    code = "import sys; sys.path.insert(0, sys.argv[1]); import imported_once"
    subprocess.run([sys.executable, "-c", code, str(mod)], env=env, check=True, timeout=60)
    assert list((mod / "__pycache__").glob("imported_once.*.pyc"))
    # the variable the CI image sets does stop it, so the assertion above can fail
    (mod / "__pycache__").rename(tmp_path / "old")
    subprocess.run(
        [sys.executable, "-c", code, str(mod)],
        env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
        check=True,
        timeout=60,
    )
    assert not (mod / "__pycache__").exists()
