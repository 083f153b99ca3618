"""One cache variable (issue 34 item 9): every on-disk cache of schemaops lives under
``$XDG_CACHE_HOME/schemaops`` (``~/.cache/schemaops`` when unset); the tokenizers' used to
follow a second variable, ``SCHEMAOPS_CACHE``, and ignore ``XDG_CACHE_HOME``."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemaops import corpora, tokenizers
from schemaops.audit.verdict.cache import default_cache_dir
from schemaops.cachedir import cache_root


def test_every_cache_follows_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("SCHEMAOPS_CACHE", str(tmp_path / "elsewhere"))  # no longer read
    root = tmp_path / "schemaops"
    assert cache_root() == root
    for where in (default_cache_dir(), tokenizers.cache_dir(), corpora.cache_dir()):
        assert where.parent == root, where


def test_relative_or_unset_xdg_is_the_home_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    home = Path.home() / ".cache" / "schemaops"
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_root() == home
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # the XDG spec: absolute paths only
    assert cache_root() == home
    assert tokenizers.cache_dir() == home / "tokenizers"
