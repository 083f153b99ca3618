"""Shared test fixtures: paths to the repository, the shipped registry and the corpora."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CORPORA = SHARED / "corpora"
JSB = CORPORA / "jsonschemabench"
JSTS = CORPORA / "json-schema-test-suite"


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
