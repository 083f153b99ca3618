"""JSON from outside, parsed bounded in depth: a server's answer body or a request-log line.

Why: ``json.loads`` of 100,000 nested brackets raises ``RecursionError`` (or, just under the
limit, hands back a value every recursive walk then crashes on). Every body schemaops reads
from a server (warm, probe) or from a log line (``--from-log``, ``registry drift``) goes
through ``load_json``: deeper than ``MAX_DEPTH`` is ``TooDeep``, an explained input error.
"""

from __future__ import annotations

import json
from typing import Any

#: deeper than this is an input error, not a RecursionError (the audit uses the same 128)
MAX_DEPTH = 128


class TooDeep(ValueError):
    """JSON nested deeper than ``MAX_DEPTH``: an input error, never a RecursionError."""


def load_json(text: str | bytes, what: str = "line") -> Any:
    """``json.loads`` bounded in depth: deeper than ``MAX_DEPTH`` raises ``TooDeep``."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(f"{what} is nested deeper than {MAX_DEPTH} levels") from None
    if deeper_than(value, MAX_DEPTH):
        raise TooDeep(f"{what} is nested deeper than {MAX_DEPTH} levels")
    return value


def deeper_than(value: Any, limit: int) -> bool:
    """Iterative depth check (a recursive one would itself hit Python's recursion limit)."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            if d > limit:
                return True
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return False
