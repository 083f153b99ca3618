"""One ``format`` semantics for all of schemaops (audit, registry sidecar examples).

Why one module: ``jsonschema`` ships two different answers for the same format. Its
draft-specific checkers (``Draft202012Validator.FORMAT_CHECKER``) accept ``"12:00:00Z"`` as a
``time``, while a bare ``FormatChecker()`` uses the draft-3 ``time`` checker that rejects any
offset; which one a caller gets depended on how it built its validator, so the registry
accepted a sidecar example the audit then called a violation. Every part of schemaops now asks
``format_checker()`` instead, whatever the schema's draft.

The semantics:

- ``date-time``, ``date``, ``time``: RFC 3339 section 5.6 (``full-date``, ``full-time``,
  ``date-time``), checked here without optional packages. A ``time`` needs its offset (``Z`` or
  ``+hh:mm``/``-hh:mm``); ``T`` and ``Z`` may be lower case; a leap second ``:60`` only at
  23:59 UTC (the offset applied, as the official test suite asks); the day must exist in its
  month (Feb 29 only in leap years).
- ``regex``: the value compiles with Python's ``re`` (the engine that also runs ``pattern``).
  A value ``re`` cannot compile for any reason (a syntax error, a repetition count too large
  such as ``a{99999999999}``, nesting too deep) does not conform: it is a format violation of
  the output, never an error of the audit.
- every other format: jsonschema's draft 2020-12 checker for it (formats whose checker needs a
  package that is not installed are not asserted, as in jsonschema).

A checker that raises anything for a value (a bug or a limit in a third-party checker) counts
as "does not conform" rather than crashing the caller.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import FormatChecker

_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_TIME = re.compile(
    r"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?(?:[Zz]|[+-]([0-9]{2}):([0-9]{2}))"
)
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def is_rfc3339_date(value: Any) -> bool:
    """RFC 3339 ``full-date``: ``YYYY-MM-DD`` with a day that exists in that month."""
    if not isinstance(value, str):
        return True
    m = _DATE.fullmatch(value)
    if m is None:
        return False
    year, month, day = (int(g) for g in m.groups())
    if not 1 <= month <= 12:
        return False
    last = 29 if month == 2 and _leap(year) else _DAYS[month - 1]
    return 1 <= day <= last


def is_rfc3339_time(value: Any) -> bool:
    """RFC 3339 ``full-time``: ``hh:mm:ss[.frac]`` plus ``Z`` or a numeric offset."""
    # opens as is_rfc3339_date does (a non-string passes: format asserts on strings only)
    if not isinstance(value, str):
        return True
    m = _TIME.fullmatch(value)
    if m is None:
        return False
    hour, minute, second = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if hour > 23 or minute > 59 or second > 60:
        return False
    offset = 0
    if m.group(4) is not None:
        off_h, off_m = int(m.group(4)), int(m.group(5))
        if off_h > 23 or off_m > 59:
            return False
        offset = (off_h * 60 + off_m) * (-1 if value[-6] == "-" else 1)
    # A leap second is inserted at the end of a UTC day only: ``:60`` is valid where the time,
    # taken back to UTC by its offset, is 23:59 (RFC 3339 section 5.7; the official
    # JSON-Schema-Test-Suite, tests/draft2020-12/optional/format/time.json "valid leap second,
    # positive time-offset" / "invalid leap second, Zulu (wrong hour)" and date-time.json,
    # https://github.com/json-schema-org/JSON-Schema-Test-Suite).
    return second < 60 or (hour * 60 + minute - offset) % 1440 == 23 * 60 + 59


def is_rfc3339_date_time(value: Any) -> bool:
    """RFC 3339 ``date-time``: ``full-date "T" full-time`` (``T`` may be lower case)."""
    if not isinstance(value, str):
        return True
    if len(value) < 11 or value[10] not in "Tt":
        return False
    return is_rfc3339_date(value[:10]) and is_rfc3339_time(value[11:])


def is_python_regex(value: Any) -> bool:
    """The value compiles with Python's ``re``; any failure to compile is "not a regex".

    A registry's metaschema check asks this of every ``pattern`` of every schema, and a
    platform's schemas repeat their patterns (JSONSchemaBench: 6,957 patterns, 1,980
    distinct) beyond ``re``'s own cache of 512: each answer is kept (``_REGEX_SEEN``), but not
    one from hitting the recursion or memory limit, which depends on where it was asked."""
    if not isinstance(value, str):
        return True
    seen = _REGEX_SEEN.get(value)
    if seen is not None:
        return seen
    try:
        re.compile(value)
    except (RecursionError, MemoryError):
        return False
    except (re.error, OverflowError, ValueError):
        answer = False
    else:
        answer = True
    if len(_REGEX_SEEN) >= _REGEX_KEPT:
        _REGEX_SEEN.clear()
    _REGEX_SEEN[value] = answer
    return answer


#: ``is_python_regex``'s answers by pattern, up to ``_REGEX_KEPT`` (then started afresh)
_REGEX_SEEN: dict[str, bool] = {}
_REGEX_KEPT = 8192


_OWN: dict[str, Callable[[Any], bool]] = {
    "date": is_rfc3339_date,
    "time": is_rfc3339_time,
    "date-time": is_rfc3339_date_time,
    "regex": is_python_regex,
}


def _guarded(func: Callable[[Any], Any], raises: Any) -> Callable[[Any], Any]:
    """``func`` with any exception other than its declared ``raises`` read as "no"."""

    def check(value: Any) -> Any:
        try:
            return func(value)
        except raises:
            raise
        except Exception:
            return False

    return check


@lru_cache(maxsize=1)
def format_checker() -> FormatChecker:
    """The project's ``FormatChecker`` (shared, read-only: build validators with it).
    ``jsonschema`` is imported here, on first use, not with this module: its format checkers
    import their optional packages, the larger part of a one-line audit's start (issue 36)."""
    from jsonschema import Draft202012Validator, FormatChecker

    checker = FormatChecker(formats=())
    for name, (func, raises) in Draft202012Validator.FORMAT_CHECKER.checkers.items():
        checker.checkers[name] = (_guarded(func, raises), raises)
    for name, func in _OWN.items():
        checker.checkers[name] = (func, ())
    return checker


def conforms(value: Any, fmt: str) -> bool:
    """True when ``value`` conforms to ``fmt`` (unknown formats always conform)."""
    return format_checker().conforms(value, fmt)


def rs_formats(skip: frozenset[str] = frozenset()) -> dict[str, Callable[[str], bool]]:
    """The project's formats in jsonschema-rs's custom-format shape (a string in, a bool out),
    but those in ``skip``: passed to jsonschema-rs (custom formats take precedence over its
    built-in ones) so that Rust validators judge formats as ``format_checker`` does. Used by
    the audit's verdict (``audit/verdict/rscheck.py``) and the registry's metaschema check
    (``registry/metars.py``)."""
    checker = format_checker()

    def wrap(name: str) -> Callable[[str], bool]:
        def check(value: str) -> bool:
            return checker.conforms(value, name)

        return check

    return {name: wrap(name) for name in checker.checkers if name not in skip}
