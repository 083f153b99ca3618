"""The one folder every on-disk cache of schemaops lives under: ``$XDG_CACHE_HOME/schemaops``,
or ``~/.cache/schemaops`` when the variable is unset or not absolute (the XDG Base Directory
spec: "If $XDG_CACHE_HOME is either not set or empty, a default equal to $HOME/.cache should
be used" and relative paths are invalid and ignored,
https://specifications.freedesktop.org/basedir-spec/latest/).

Below it: ``audit/`` (the facts cache), ``tokenizers/`` (converted vocabularies),
``backend-tables/`` (compare's token tables), ``lower/`` (probe tables), ``corpora/``.
The dev servers' environments (``devserver/``) are the exception: always under
``~/.cache/schemaops`` (or ``dev-server --cache-dir``), so a test session with a private
``XDG_CACHE_HOME`` still finds the installed 6.5 GB environment.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/schemaops`` (absolute values only), else ``~/.cache/schemaops``."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / "schemaops"
