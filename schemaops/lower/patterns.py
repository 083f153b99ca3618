"""Regular expressions ``lower`` writes into served schemas: anchored searches and formats.

Two facts drive this module, both measured with ``schemaops.lower.probes``:

- JSON Schema's ``pattern`` is a *search* (``"b[0-9]"`` matches ``"ab1c"``), but xgrammar and
  outlines read it as a full match, so a valid string such as ``"ab1c"`` cannot be produced.
  ``anchored_search(p)`` is a pattern whose full-match reading is exactly the search of
  ``p``: ``^[\\s\\S]*(?:p)[\\s\\S]*$`` (an edge that ``p`` anchors itself keeps its anchor).
- Backends implement ``format`` with their own regexes, which differ from
  ``schemaops.formats`` (the project's one format semantics): xgrammar lets ``2026-02-29``
  through as a ``date``, outlines refuses the offset in ``2026-12-02T14:00:00-08:00``.
  ``FORMAT_PATTERNS`` holds anchored patterns with exactly ``schemaops.formats``'s meaning
  for ``date`` (RFC 3339, leap years included) and ``email`` (jsonschema's checker: the string
  contains an ``@``); for ``time`` and ``date-time`` exactly but for leap seconds, which are
  served only as ``23:59:60`` with a zero offset (narrower, see ``FORMAT_EXACT``). For
  ``uuid`` the pattern is the canonical 8-4-4-4-12 hex form, *narrower* than jsonschema's
  checker (which also takes ``{...}``, ``urn:uuid:`` and extra hyphens after the fourth
  group): ``FORMAT_EXACT`` says so.
"""

from __future__ import annotations

import re

_YEAR = "[0-9]{4}"
# years divisible by 4 but not by 100, or by 400 (0000 included, as schemaops.formats does)
_LEAP = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
_MONTH_DAY = (
    "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))"
)
DATE = f"(?:{_YEAR}-{_MONTH_DAY}|{_LEAP}-02-29)"
_FRAC = "(?:\\.[0-9]+)?"
# A leap second (``:60``) is valid only at 23:59:60 UTC, offset applied (``15:59:60-08:00``):
# schemaops.formats, after the JSON-Schema-Test-Suite's format/time.json. The exact set needs
# one alternative per offset (2,880), too big to compile, so the pattern serves it only as
# ``23:59:60`` with a zero offset: narrower, declared in FORMAT_EXACT.
TIME = (
    "(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    + _FRAC
    + "(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
    + "|23:59:60"
    + _FRAC
    + "(?:[Zz]|[+-]00:00))"
)
DATE_TIME = f"{DATE}[Tt]{TIME}"
UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
ANY = "[\\s\\S]*"
#: any character a JSON string holds unescaped: for backends that paste a pattern into their
#: JSON regex unchanged (outlines), where ``[\\s\\S]`` also matches the closing quote and lets
#: a model write the rest of the object inside the string. Narrower: no ``"``, ``\\`` or
#: control characters where the wildcard stands.
JSON_ANY = '[^"\\\\\\x00-\\x1f]*'
JSON_ANY_NARROWS = (
    'the wildcard cannot produce \\", \\\\ or control characters (the backend pastes patterns '
    "into its JSON regex, so a full wildcard would match the closing quote)"
)

FORMAT_PATTERNS: dict[str, str] = {
    "date": f"^{DATE}$",
    "time": f"^{TIME}$",
    "date-time": f"^{DATE_TIME}$",
    "email": f"^{ANY}@{ANY}$",
    "uuid": f"^{UUID}$",
}
_LEAP_SECOND_NARROWER = (
    "a leap second only as 23:59:60 with Z or a zero offset; schemaops.formats also accepts "
    "it at the offset-adjusted local time (15:59:60-08:00)"
)
#: format -> None when the pattern is exact, else why it is narrower than schemaops.formats
FORMAT_EXACT: dict[str, str | None] = {
    "date": None,
    "time": _LEAP_SECOND_NARROWER,
    "date-time": _LEAP_SECOND_NARROWER,
    "email": None,
    "uuid": (
        "canonical 8-4-4-4-12 hex only; schemaops.formats (jsonschema's uuid checker) also "
        "accepts braces, a urn:uuid: prefix and extra hyphens after the fourth group"
    ),
}


def _top_level(pattern: str) -> tuple[bool, bool, bool] | None:
    """(has top-level ``|``, starts with a top-level ``^``, ends with a top-level ``$``).

    None when the pattern cannot be scanned (unbalanced brackets): leave it alone.
    """
    depth = 0
    in_class = False
    alt = False
    i = 0
    n = len(pattern)
    last_dollar = False
    while i < n:
        c = pattern[i]
        last_dollar = False
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                return None
        elif c == "|" and depth == 0:
            alt = True
        elif c == "$" and depth == 0:
            last_dollar = True
        i += 1
    if depth != 0 or in_class:
        return None
    return alt, pattern.startswith("^"), last_dollar and i == n


def is_anchored(pattern: str) -> bool:
    """Whether ``pattern`` matches whole strings only (``^...$`` with no top-level ``|``)."""
    scan = _top_level(pattern)
    return scan is not None and not scan[0] and scan[1] and scan[2]


def format_pattern(fmt: str, json_safe: bool = False) -> tuple[str, str | None] | None:
    """(pattern, why it is narrower or None) for ``fmt``; None when lower has none.

    ``json_safe``: the backend needs wildcards that cannot match a JSON quote (``JSON_ANY``).
    """
    pat = FORMAT_PATTERNS.get(fmt)
    if pat is None:
        return None
    narrower = FORMAT_EXACT.get(fmt)
    if json_safe and ANY in pat:
        pat = pat.replace(ANY, JSON_ANY)
        narrower = JSON_ANY_NARROWS
    return pat, narrower


#: a leading group of global inline flags (Python's ``(?i)``, ``(?ms)``...; ECMA-262 has none):
#: Python reads them only at the very start of a pattern
_GLOBAL_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")


def anchored_search(pattern: str, json_safe: bool = False) -> str | None:
    """A pattern whose full-match reading equals JSON Schema's search of ``pattern``.

    Returns ``pattern`` itself when it is already anchored at both ends, and None when the
    pattern cannot be scanned, or starts with global inline flags (``(?i)abc``): wrapped in
    the anchors' group they would no longer be at the start, which Python's ``re`` refuses
    ("global flags not at the start", found by a mutation run over real schemas, 2026-12-05),
    and a backend reading ECMA-262 has no such flags to serve. Groups are non-capturing, so
    back-references keep their numbers.
    """
    if _GLOBAL_FLAGS.match(pattern):
        return None
    scan = _top_level(pattern)
    if scan is None:
        return None
    alt, start, end = scan
    any_ = JSON_ANY if json_safe else ANY
    if alt:
        return f"^{any_}(?:{pattern}){any_}$"
    if start and end:
        return pattern
    body = pattern[1:] if start else pattern
    if end:
        body = body[:-1]
    head = "^" if start else f"^{any_}"
    tail = "$" if end else f"{any_}$"
    return f"{head}(?:{body}){tail}"
