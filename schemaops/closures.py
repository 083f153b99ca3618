"""Closure combinators of the compiler of JSON Schema into Python closures,
``audit/verdict/treecheck.py`` (an output against its schema).

A second compiler, of the drafts' metaschemas (``registry/metacheck.py``), shared them until
the registry's metaschema check moved to jsonschema-rs (``registry/metars.py``, issue 24).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: a compiled yes/no check of one value
Check = Callable[[Any], bool]


def accept(x: Any) -> bool:
    """The check of ``true`` and of a subschema with no asserting keyword."""
    return True


def reject(x: Any) -> bool:
    """The check of ``false``."""
    return False


def all_of(checks: list[Check]) -> Check:
    """One check that passes when every one of ``checks`` does (in order, stopping early)."""
    if not checks:
        return accept
    if len(checks) == 1:
        return checks[0]
    checks_t = tuple(checks)

    def node(x: Any) -> bool:
        for c in checks_t:
            if not c(x):
                return False
        return True

    return node
