"""Closure combinators shared by the two compilers of JSON Schema into Python closures:
``registry/metacheck.py`` (a schema against its draft's metaschema) and
``audit/verdict/treecheck.py`` (an output against its schema).

Only what is the same to the letter lives here. The keyword checks stay in each compiler:
their contracts differ (metacheck answers for any Python value a loader hands it and follows
the metaschemas' drafts; treecheck answers for parsed JSON only, tests exact types for speed,
and gives up on what ``audit/verdict/subset.py`` gives up on), and each is held to ``jsonschema``
by its own differential tests.
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
