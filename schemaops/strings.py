"""String helpers every part uses, defined once: JSON pointers (writing, and following a local
``#/...`` ref), sha256 digests, truncation.

Each was written several times with small differences (a digest that failed on a lone
surrogate, pointers escaped by hand); one definition keeps reports of the same thing alike.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any


def pointer(parts: Iterable[Any]) -> str:
    """RFC 6901 JSON pointer for a path of keys and indices (``""`` is the whole document).

    Takes jsonschema's ``absolute_path`` deques as they are. A loop rather than a joined
    generator: the audit writes one per failure, mostly of one or two parts, where the
    generator's set-up was most of the cost (0.59 -> 0.24 us for one part).
    """
    out = ""
    for p in parts:
        token = p if p.__class__ is str else str(p)
        if "~" in token or "/" in token:
            token = token.replace("~", "~0").replace("/", "~1")
        out += "/" + token
    return out


def pointer_token(part: str) -> str:
    """One reference token of a pointer, unescaped (``~1`` is ``/``, ``~0`` is ``~``)."""
    return part.replace("~1", "/").replace("~0", "~")


#: ``resolve_pointer``'s default where ``None`` is a value the caller must tell apart
MISSING: Any = object()


def ref_parts(ref: str) -> list[str] | None:
    """The unescaped tokens of a local ``#...`` ref, or None for a ref to another resource.

    Empty tokens are dropped (``#/a//b`` is ``#/a/b``) and ``#name`` reads as ``#/name``: what
    every local-ref walker of the project did before this one definition (tests/
    test_strings_pointer.py pins it); the registry's own resolution (``registry/refs.py``,
    through ``referencing``) is strict and is what decides whether a schema is valid.
    """
    if not ref.startswith("#"):
        return None
    return [pointer_token(p) for p in ref[1:].split("/") if p]


def resolve_pointer(root: Any, parts: Iterable[str], default: Any = None) -> Any:
    """The value at ``parts`` (unescaped tokens) in ``root``, or ``default`` when a part is
    missing: an absent key, a list index that is not ASCII decimal digits or is out of range
    (``01`` is index 1, ``-`` and ``-1`` are missing), or a step into a scalar."""
    node = root
    for p in parts:
        if isinstance(node, dict) and p in node:
            node = node[p]
        elif isinstance(node, list) and p.isascii() and p.isdigit() and int(p) < len(node):
            node = node[int(p)]
        else:
            return default
    return node


def resolve_ref(root: Any, ref: str, default: Any = None) -> Any:
    """What a local ``#...`` ``ref`` points to in ``root``; ``default`` for a missing part or a
    ref to another resource (``ref_parts``, ``resolve_pointer``)."""
    parts = ref_parts(ref)
    return default if parts is None else resolve_pointer(root, parts, default)


def follow_local_refs(
    node: Any, root: Any, *, hops: int = 16, siblings: bool = False
) -> tuple[Any, bool]:
    """Follow a chain of local ``$ref``s from ``node``: (the schema reached, True), or (the
    node it stopped at, False) for a ref elsewhere, a missing part, or more than ``hops``
    refs (a cycle). With ``siblings`` a ref's sibling keywords are merged over its target."""
    for _ in range(hops):
        if not isinstance(node, dict) or not isinstance(node.get("$ref"), str):
            return node, True
        target = resolve_ref(root, node["$ref"], MISSING)
        if target is MISSING:
            return node, False
        rest = {k: v for k, v in node.items() if k != "$ref"} if siblings else {}
        node = {**target, **rest} if isinstance(target, dict) and rest else target
    return node, False


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


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 schema``, ``2 schemas``, ``1 library`` (``many``: an irregular plural), the count
    with thousands separators: reports read "1 libraries" otherwise."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


#: Characters that act on a terminal or hide text instead of showing it: C0/C1 controls and
#: DEL, line/paragraph separators, and the bidirectional overrides ("Trojan Source"). One
#: list for every place that writes untrusted text: the reports (``audit.report.text``) and
#: ``--json`` (``commands._common.emit_json``), which takes them all but C0: JSON writers
#: escape C0 inside strings already, and outside strings a newline is the layout.
_BEYOND_C0 = "\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
INVISIBLE = re.compile(f"[\x00-\x1f{_BEYOND_C0}]")
INVISIBLE_IN_JSON = re.compile(f"[{_BEYOND_C0}]")
