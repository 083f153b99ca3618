"""The audit's yes/no check: jsonschema-rs (Rust), held to Python ``jsonschema``'s answers.

Why jsonschema-rs: on small tool-call outputs ``is_valid`` costs about a microsecond, as much
as parsing the text, where Python ``jsonschema`` costs tens (issue 24). It is used one-sided,
as the generated checks before it were: ``True`` here must mean that ``jsonschema`` (with
``schemaops.formats``) finds no error; ``False`` sends the output to ``jsonschema``, which
names the keyword, path and message. So jsonschema-rs may be stricter than ``jsonschema``,
never more lenient, and what would make it more lenient is handled here:

- the draft: jsonschema-rs is given the draft Python ``jsonschema`` picked for the schema
  (its ``Draft*Validator`` class, not its own detection); a schema with a ``$schema`` below
  its root naming another draft (both libraries switch drafts there, not always alike) is
  not checked here; one repeating the root's own draft is (``rsscan.nested_drafts_alike``).
- ``format``: a format whose jsonschema-rs checker was found never more lenient than
  ``schemaops.formats`` (``NATIVE_FORMATS``: a seeded fuzz of mutated values in
  ``tests/test_audit_rs_agreement.py``; its checkers are Rust, about 40x cheaper than a call
  back into Python) is left to jsonschema-rs where its draft asserts it (probed per draft:
  ``uuid`` and ``duration`` only from 2019-09); every other format ``schemaops.formats`` knows
  is passed as a custom format (custom formats take precedence over built-in ones; tried with
  jsonschema-rs 0.61.2), so one format semantics holds. A format only jsonschema-rs knows
  makes it stricter, which is allowed.
- ``multipleOf`` with a non-integer divisor: jsonschema-rs accepts ``0.3`` as a multiple of
  ``0.1``, ``jsonschema`` does not (it divides in floating point and asks whether the
  quotient is whole, ``jsonschema/_keywords.py``, 4.26.0). Such a schema gets a custom
  ``multipleOf`` keyword with ``jsonschema``'s arithmetic.
- ``pattern`` and ``patternProperties``: jsonschema-rs runs ECMA-262-flavoured regexes
  (fancy-regex), Python ``re`` is what ``jsonschema`` runs. Where the two differ, the Rust
  side is usually stricter (``\\d`` and ``\\w`` are ASCII, ``$`` does not match before a final
  newline, ``.`` excludes U+2028), but the negated classes (``\\D``, ``\\W``, ``\\S``), ``\\s``
  (ECMA adds U+FEFF), word boundaries (Rust reads ``\\<``/``\\>`` as ones), nested classes,
  repeat counts with spaces, Unicode properties and case folding can make it more lenient.
  A stricter pattern is more lenient where a failed match can make an instance valid: as a
  ``patternProperties`` key (the key escapes its subschema), or in a schema with ``not``,
  ``if``, ``oneOf`` or ``maxContains`` (``NEGATING_KEYWORDS``); there every pattern must read
  exactly the same. A schema with a pattern that does not fit is not checked here; each
  pattern is judged from Python's own parse of it, never from its text (``rspattern.py``).
- a schema jsonschema-rs refuses (an unknown ``$schema``, draft 3, a ``$ref`` it cannot
  resolve offline, a pattern its engine cannot compile such as ``\\Z``) is not checked here.
- remote ``$ref``s are never fetched (``offline=True``).

A backtracking pattern cannot hang jsonschema-rs: fancy-regex stops at ``BACKTRACK_LIMIT``
steps and the output is then not valid here, so ``jsonschema`` (under the audit's watchdog)
answers, as before. The agreement is tested on the JSON-Schema-Test-Suite and on
JSONSchemaBench's schemas with mutated instances (``tests/test_audit_rs_agreement.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, NamedTuple

import jsonschema_rs
import orjson

from schemaops.audit.verdict.rsscan import scan_facts, scan_facts_ok
from schemaops.formats import rs_formats

#: fancy-regex's backtracking budget per match (its own default is 1,000,000)
BACKTRACK_LIMIT = 100_000


#: the draft Python jsonschema picked (its label, ``registry/drafts.py``) -> jsonschema-rs's
#: class (draft 3 has none: such a schema is not checked). Labels, not jsonschema's classes:
#: a warm audit of outputs jsonschema-rs accepts never imports ``jsonschema`` (issue 36).
RS_DRAFTS = {
    "draft-04": jsonschema_rs.Draft4Validator,
    "draft-06": jsonschema_rs.Draft6Validator,
    "draft-07": jsonschema_rs.Draft7Validator,
    "2019-09": jsonschema_rs.Draft201909Validator,
    "2020-12": jsonschema_rs.Draft202012Validator,
}
#: formats whose jsonschema-rs checker accepts nothing ``schemaops.formats`` refuses, each with
#: a value both refuse (used to ask a draft whether it asserts the format at all)
NATIVE_FORMATS = {
    "date": "x",
    "time": "x",
    "date-time": "x",
    "uuid": "x",
    "email": "x",
    "ipv4": "x",
    "ipv6": "x",
    "hostname": "-x-",
    "uri": "x",
    "uri-reference": "\\\\ x",
    "duration": "x",
    "json-pointer": "x",
}


class _MultipleOf:
    """``multipleOf`` as ``jsonschema`` 4.26.0 computes it (``_keywords.multipleOf``): a float
    divisor divides and asks whether the quotient is whole; an integer one takes ``%``."""

    def __init__(self, parent_schema: Any, value: Any, schema_path: Any) -> None:
        self.divisor = value

    def validate(self, instance: Any) -> None:
        if type(instance) not in (int, float):
            return
        d = self.divisor
        if isinstance(d, float):
            quotient = instance / d
            try:
                failed = int(quotient) != quotient
            except OverflowError:
                failed = True
        else:
            failed = bool(instance % d)
        if failed:
            raise ValueError(f"{instance!r} is not a multiple of {d!r}")


@lru_cache(maxsize=8)
def _formats(rs_cls: type) -> dict[str, Callable[[str], bool]]:
    """``schemaops.formats``' checkers for the formats this draft of jsonschema-rs does not
    assert natively the same way."""
    return rs_formats(native_formats(rs_cls))


@lru_cache(maxsize=8)
def native_formats(rs_cls: type) -> frozenset[str]:
    """The ``NATIVE_FORMATS`` this draft of jsonschema-rs asserts (asked, not assumed: each
    refuses its known-bad value only where the draft asserts the format)."""
    return frozenset(
        name
        for name, bad in NATIVE_FORMATS.items()
        if not rs_cls({"format": name}, validate_formats=True).is_valid(bad)
    )


_dumps = orjson.dumps


def ascii_text(value: Any) -> bool:
    """True when every string in ``value`` (keys included) is printable ASCII: orjson's text
    of it is ASCII (orjson writes non-ASCII as it is) and has no backslash (orjson escapes
    every control character, quote and backslash). False for what orjson cannot write (an
    integer beyond 64 bits): not known, so not admitted."""
    try:
        text = _dumps(value)
    except TypeError:
        return False
    return text.isascii() and b"\\" not in text


def ascii_gated(is_valid: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """``is_valid`` asked only of outputs ``ascii_text`` admits; any other output is "not
    known valid" (False), and ``jsonschema`` answers for it."""

    def gated(value: Any) -> bool:
        return ascii_text(value) and is_valid(value)

    return gated


class RsCheck(NamedTuple):
    """What ``compile_rs`` made of a schema."""

    #: jsonschema-rs's ``is_valid``, or None when it cannot answer exactly for this schema
    is_valid: Callable[[Any], bool] | None
    #: why not, when ``is_valid`` is None
    reason: str = ""
    #: ``is_valid`` calls back into Python's ``re`` (a ``"format": "regex"`` value is compiled
    #: there), so it must run under the audit's watchdog; fancy-regex bounds itself
    watched: bool = False
    #: the compiled jsonschema-rs validator (its ``iter_errors`` locates a failure's
    #: ``best_match``: ``rsexplain.py``), None with ``is_valid``
    validator: Any = None
    #: ``is_valid`` answers only for outputs ``ascii_text`` admits (gated here already): a
    #: pattern reads the same in both libraries on printable ASCII only (``ascii_fit``)
    ascii_only: bool = False
    #: ``scan_facts`` of the schema (what the facts cache keeps), None for a draft
    #: jsonschema-rs does not have
    facts: dict | None = None


def compile_rs(schema: Any, label: str, assert_format: bool, facts: dict | None = None) -> RsCheck:
    """jsonschema-rs's ``is_valid`` for ``schema`` read as draft ``label`` (the one Python
    jsonschema picks for it: ``drafts.dialect_label``), or the reason it cannot answer
    exactly. ``facts``: ``scan_facts(schema)`` from an earlier run (used when well formed)."""
    rs_cls = RS_DRAFTS.get(label)
    if rs_cls is None:
        return RsCheck(None, f"jsonschema-rs has no {label} validator")
    if not scan_facts_ok(facts):
        facts = scan_facts(schema)
    assert facts is not None
    portable, float_multiple = facts["portable"], facts["float_multiple"]
    regex_format, ascii_only = facts["regex_format"], facts["ascii_only"]
    if not portable and not ascii_only:
        reason = (
            "a pattern more lenient in ECMA-262 than in Python's re, or a nested $schema of"
            " another draft"
        )
        return RsCheck(None, reason, facts=facts)
    options: dict[str, Any] = {
        "validate_formats": assert_format,
        "ignore_unknown_formats": True,
        "offline": True,
        "pattern_options": jsonschema_rs.FancyRegexOptions(backtrack_limit=BACKTRACK_LIMIT),
    }
    if assert_format:
        named = frozenset(facts["formats"]) - native_formats(rs_cls)
        if named:
            options["formats"] = {k: v for k, v in _formats(rs_cls).items() if k in named}
    if float_multiple:
        options["keywords"] = {"multipleOf": _MultipleOf}
    try:
        validator = rs_cls(schema, **options)
    except Exception as exc:  # jsonschema-rs refuses the schema: jsonschema answers alone
        reason = f"jsonschema-rs refuses it: {str(exc).splitlines()[0][:200]}"
        return RsCheck(None, reason, facts=facts)
    is_valid = ascii_gated(validator.is_valid) if ascii_only else validator.is_valid
    return RsCheck(is_valid, "", assert_format and regex_format, validator, ascii_only, facts)
