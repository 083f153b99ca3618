"""String helpers every part uses, defined once: JSON pointers, sha256 digests, truncation.

Each was written several times with small differences (a digest that failed on a lone
surrogate, pointers escaped by hand); one definition keeps reports of the same thing alike.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any


def pointer(parts: Iterable[Any]) -> str:
    """RFC 6901 JSON pointer for a path of keys and indices (``""`` is the whole document).

    Takes jsonschema's ``absolute_path`` deques as they are.
    """
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def pointer_token(part: str) -> str:
    """One reference token of a pointer, unescaped (``~1`` is ``/``, ``~0`` is ``~``)."""
    return part.replace("~1", "/").replace("~0", "~")


def sha256_hex(text: str | bytes) -> str:
    """sha256 of ``text``'s UTF-8 bytes as 64 hex digits; a lone surrogate (from ``"\\ud800"``
    in a log or a schema) is hashed as its bytes, not an error."""
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def truncate(text: str, limit: int, ellipsis: str = "...") -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``ellipsis`` when cut.

    Messages quote instances and schemas that can be megabytes; reports stay readable.
    """
    return text if len(text) <= limit else text[: max(0, limit - len(ellipsis))] + ellipsis
