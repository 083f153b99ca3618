"""The Python of an installed dev-server environment, for tests that call an engine's own code.

Those tests are marked ``engine_env`` (run last, after ``scripts/test.sh``'s background
install, ``tests/conftest.py``); without the environment they skip, or fail under CI=true.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def engine_python(engine: str) -> Path:
    """``bin/python`` of the SGLang (``sglang``) or vLLM (``vllm``) dev-server venv."""
    from schemaops.devserver.env import default_cache_dir
    from schemaops.devserver.vllm_env import vllm_cache_dir

    root = default_cache_dir() if engine == "sglang" else vllm_cache_dir()
    py = root / "venv" / "bin" / "python"
    if not py.exists():
        why = f"the {engine} dev-server environment is not installed ({py})"
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(f"CI=true and {why}")
        pytest.skip(why)
    return py
