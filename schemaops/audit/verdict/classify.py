"""Text -> parse -> validate -> one category (the categories: docs/contracts/audit.md).

Parsing is strict RFC 8259: ``NaN``/``Infinity`` are rejected (Python's ``json`` accepts them
by default). ``orjson`` is only an accelerator: when it refuses a text, or might have read a
number differently (orjson reads integers outside [-2^63, 2^64) as floats: any integer of 19+
digits may be one, e.g. ``-9223372036854775810``), the stdlib decoder with
strict constants decides, so the verdict never depends on which parser ran.

A number beyond double range (``1e999``: orjson refuses it, the stdlib would read ±inf) is read
as its exact integer (``exactjson.exact_float``), so every checker compares the number that was
sent.

RFC 8259 §9 lets a parser limit nesting depth and number size; values beyond the limits here
(``MAX_DEPTH`` levels, integers Python refuses to convert, a number beyond double range with
more than 4300 digits or a fraction) are ``json_parse_failure`` with the subtype
``limit_exceeded`` instead of a crash.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import orjson

from schemaops.exactjson import exact_float, may_have_long_int
from schemaops.watchdog import WatchdogTimeout, watched
from schemaops.watchdog import timeout as watchdog_timeout

#: How a message cut off by the ``--timeout`` watchdog starts (counted as a timeout).
TIMEOUT_PREFIX = "validation exceeded"

OK = "ok"
PARSE = "json_parse_failure"
#: the provider refused to answer (OpenAI ``refusal``, Gemini ``SAFETY``, ...): a failed
#: step, but neither a parse failure of an empty text nor a schema violation
REFUSAL = "refusal"
VIOLATION = "schema_violation"
SUBTYPES = (
    "empty",
    "prose_prefix",
    "code_fence",
    "truncated",
    "trailing_text",
    "non_standard_literal",
    "invalid_syntax",
    "limit_exceeded",
    "unclassified",
)
# Deep enough for any real tool call, shallow enough that jsonschema's recursive validation
# stays far below Python's recursion limit (it fails near 300 levels for ``items``).
MAX_DEPTH = 128

_orjson_loads = orjson.loads

_FENCE = re.compile(r"```[^\n`]*\n?")
_NONSTD = re.compile(r"(?:[-+]?(?:NaN|nan|Infinity|infinity|inf|Inf)|None|True|False|undefined)\b")
_OPENERS = re.compile(r"[{\[]")
_MAX_PROSE_TRIES = 32
# A text that ends part-way through a literal or a number was cut (token limit), e.g.
# ``{"ok": fal`` or ``{"n": 1.``; ``part`` is where the unfinished token starts.
_CUT_TAIL = re.compile(
    r"(?:^|[\[,:\s])(?P<part>t|tr|tru|f|fa|fal|fals|n|nu|nul|-|-?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?)?"
    r"|-?[0-9]+\.)$"
)
#: ``_CUT_TAIL``'s ``part`` alone, and the characters any part is made of: a part is the whole
#: run of those at the end of the text (no delimiter is one of them), so it is found with
#: ``rstrip`` and one short match instead of a search from 64 places (3.5 us a parse failure)
_CUT_PART = re.compile(
    r"t|tr|tru|f|fa|fal|fals|n|nu|nul|-|-?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?)?|-?[0-9]+\."
)
_PART_CHARS = "truefalsn0123456789.eE+-"
# A string cut in or right after a \u escape ("caf\u00", "caf\u00e9"): Python's decoder
# reports both as an invalid escape, at the "u".
_CUT_ESCAPE = re.compile(r"\\u[0-9a-fA-F]{0,4}$")
_JSON_WORDS = ("true", "false", "null")
_WORD = re.compile(r"[A-Za-z]+")


class NonStandardLiteral(ValueError):
    """Raised by the strict decoder on NaN / Infinity / -Infinity."""


def _reject_constant(name: str) -> Any:
    raise NonStandardLiteral(f"{name} is not JSON (RFC 8259)")


# A number beyond double range is read exactly (``exact_float``), not as ±inf: jsonschema-rs
# skips the bounds for an infinity (issue 33 item 19).
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=exact_float)


@dataclass(frozen=True)
class Classification:
    """The classification of one output. ``category`` is ``ok``, ``json_parse_failure`` or
    ``schema_violation:<keyword>``; ``path`` is a JSON pointer ("" is the document root)."""

    category: str
    subtype: str | None = None
    path: str | None = None
    message: str | None = None

    @property
    def timed_out(self) -> bool:
        """Whether the watchdog cut this verdict off (its message says so)."""
        return (self.message or "").startswith(TIMEOUT_PREFIX)

    def settled(self) -> Classification:
        """This classification with every field written (``WordedLater`` writes its message)."""
        return self


class WordedLater(Classification):
    """A schema violation whose keyword and path are known and whose message is written when
    first read (``word()``, once): most failures are only counted, and only an example or a
    ``--records`` row prints the message (``rsexplain.LAZY_WORDED``). Never a timeout (the
    keywords it is used for run no regex)."""

    def __init__(self, category: str, path: str, word: Any) -> None:
        # the frozen fields written into the instance's dict at once (``object.__setattr__``
        # per field cost as much again: one is made per located failure)
        self.__dict__.update(category=category, subtype=None, path=path, _word=word)

    @property  # type: ignore[override]
    def message(self) -> str:  # type: ignore[override]
        word = self.__dict__["_word"]
        if callable(word):
            word = word()
            object.__setattr__(self, "_word", word)
        return word

    @property
    def timed_out(self) -> bool:
        return False

    def settled(self) -> Classification:
        return Classification(self.category, None, self.path, self.message)

    def __reduce__(self) -> Any:  # pickled (a worker's result) as the plain classification
        return (Classification, (self.category, None, self.path, self.message))


OUTCOME_OK = Classification(OK)
#: an answer in ``` fences (its classifications are all alike)
FENCED = Classification(PARSE, "code_fence", None, "JSON wrapped in ``` code fences")


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Iterative nesting-depth test (no recursion, so it cannot itself overflow)."""
    stack = [(value, 1)]
    while stack:
        node, d = stack.pop()
        if d > limit:
            return True
        if type(node) is dict:
            stack.extend((v, d + 1) for v in node.values() if type(v) in (dict, list))
        elif type(node) is list:
            stack.extend((v, d + 1) for v in node if type(v) in (dict, list))
    return False


def strict_loads(text: str) -> Any:
    """Parse one whole JSON text strictly; raise ``ValueError`` (or RecursionError) if not."""
    return _DECODER.decode(text)


def parse_output(text: str, orjson_failed: bool = False) -> tuple[Any, Classification | None]:
    """Parse a model output. Returns ``(value, None)`` or ``(None, failure outcome)``.

    ``orjson_failed``: the caller's ``orjson.loads(text)`` raised already (the audit's lean
    loop), so the strict decoder is asked at once: orjson refuses the same text every time."""
    try:
        if orjson_failed:
            raise ValueError
        value = _orjson_loads(text)
        if may_have_long_int(text):
            value = strict_loads(text)
    except Exception:
        if text.lstrip().startswith("```"):
            # never JSON (a backtick, or whitespace JSON does not allow, comes first), and
            # ``classify_parse_failure`` names any such text a fence: no parse asked
            return None, FENCED
        try:
            value = strict_loads(text)
        except RecursionError:
            return None, Classification(
                PARSE, "limit_exceeded", None, f"nesting deeper than {MAX_DEPTH}"
            )
        except Exception as exc:
            return None, _classify_watched(text, exc)
    if (
        type(value) in (dict, list)
        and len(text) > 2 * MAX_DEPTH
        and text.count("[") + text.count("{") > MAX_DEPTH
        and _depth_exceeds(value, MAX_DEPTH)
    ):
        return None, Classification(
            PARSE, "limit_exceeded", None, f"nesting deeper than {MAX_DEPTH}"
        )
    return value, None


def _classify_watched(text: str, failed: Exception | None = None) -> Classification:
    """``classify_parse_failure`` under the watchdog: naming the subtype of a huge output can
    take seconds (up to 32 prose-prefix parses), and ``--timeout`` bounds every record. Cut
    off, the output is still a ``json_parse_failure`` (the strict parse failed); its subtype
    is ``unclassified``."""
    try:
        with watched():
            return classify_parse_failure(text, failed)
    except WatchdogTimeout:
        return Classification(
            PARSE,
            "unclassified",
            None,
            f"{TIMEOUT_PREFIX} {watchdog_timeout():g}s while naming why a {len(text):,}-character"
            " output is not JSON",
        )


def _raw_decode(s: str, pos: int) -> tuple[Any, int] | Exception:
    try:
        return _DECODER.raw_decode(s, pos)
    except (ValueError, RecursionError) as exc:
        return exc


def classify_parse_failure(text: str, failed: Exception | None = None) -> Classification:
    """Name why ``text`` is not one JSON value. Only called on failures, so it may be slow.

    Order matters: an empty output first; fences (the whole answer wrapped in ```) before the
    prose test, since "Here it is: ```json ...```" is fixed by stripping fences; then what the
    strict decoder says at the start of the text.

    ``failed``: what ``strict_loads(text)`` raised (``parse_output``). For a text with no
    whitespace around it, that is what the strict decoder says at its start (``decode`` is
    ``raw_decode`` from 0, then the "Extra data" test), so the decode is not run a second
    time (one stdlib parse of the whole text per parse failure; ``tests/test_audit_classify``
    compares both ways).
    """
    s = text.strip()
    if not s:
        return Classification(PARSE, "empty", None, "output is empty or whitespace")
    if s.startswith("```"):  # fenced whatever follows: nothing to parse
        return FENCED
    fence = _FENCE.search(s)
    if fence is not None:
        inner = s[fence.end() :].lstrip()
        if not isinstance(_raw_decode(inner, 0), Exception):
            return FENCED
    # ``failed`` is also the stripped text's error when only whitespace was cut from the end
    # and the decoder stopped before it: the decoder reads left to right, so up to that point
    # it read the same characters (a padded output cut short: half of a platform's parse
    # failures, each decoded a second time before)
    reuse = (
        failed is not None
        and not isinstance(failed, RecursionError)
        and (
            len(s) == len(text)
            or (
                isinstance(failed, json.JSONDecodeError)
                and failed.pos < len(s)
                and text.startswith(s)
            )
        )
    )
    if reuse and not (isinstance(failed, json.JSONDecodeError) and failed.msg == "Extra data"):
        got: Any = failed
    else:
        got = _raw_decode(s, 0)
    if not isinstance(got, Exception):
        value, end = got
        if _cut_inside_token(s, end):  # "1." / "-1e": the number was cut, not followed
            return Classification(PARSE, "truncated", None, "input ends inside a number")
        if type(value) not in (dict, list) and _prose_after_scalar(s, end):
            found = _prose_prefix(s, end)  # 'true story: {"a": 1}' is prose, then JSON
            if found is not None:
                return found
        return Classification(
            PARSE,
            "trailing_text",
            None,
            f"text after the JSON value at char {end}: {s[end : end + 40]!r}",
        )
    err = got
    if isinstance(err, NonStandardLiteral):
        return Classification(PARSE, "non_standard_literal", None, str(err))
    if isinstance(err, RecursionError):
        return Classification(PARSE, "limit_exceeded", None, f"nesting deeper than {MAX_DEPTH}")
    pos = getattr(err, "pos", None)
    msg = getattr(err, "msg", str(err))
    if pos and msg.startswith("Invalid \\uXXXX") and _CUT_ESCAPE.match(s, pos - 1):
        return Classification(PARSE, "truncated", None, f"input ends inside a \\u escape ({msg})")
    if pos is not None and _cut_inside_token(s, pos):
        return Classification(
            PARSE, "truncated", None, f"input ends inside a literal or number ({msg})"
        )
    if pos == 0 and _starts_with_prose(s):
        found = _prose_prefix(s)
        if found is not None:
            return found
    if pos is not None and msg == "Expecting value" and _NONSTD.match(s, pos):
        lit = _NONSTD.match(s, pos).group(0)  # type: ignore[union-attr]
        return Classification(
            PARSE, "non_standard_literal", None, f"{lit} at char {pos} is not JSON (RFC 8259)"
        )
    if pos is not None and (msg.startswith("Unterminated string") or pos >= len(s)):
        return Classification(PARSE, "truncated", None, f"input ends inside a value ({msg})")
    if isinstance(err, ValueError) and not isinstance(err, json.JSONDecodeError):
        return Classification(PARSE, "limit_exceeded", None, str(err)[:200])
    return Classification(PARSE, "invalid_syntax", None, f"{msg} at char {pos}")


def _cut_inside_token(s: str, pos: int) -> bool:
    """True when the text ends inside a literal or number that starts at or before ``pos``
    (the decoder's error position): ``{"ok": fal``, ``{"n": 1.``, ``[1, -``.

    What ``_CUT_TAIL.search(s, len(s) - 64)`` finds, found cheaply (``_CUT_PART``; held to
    the search by ``tests/test_audit_classify.py``): the part is the run of ``_PART_CHARS``
    that ends the text, after a delimiter at most 64 characters from the end, or from the
    text's very start. A text ending in a newline (``$`` also matches before one) is
    searched as before."""
    if s.endswith("\n"):
        m = _CUT_TAIL.search(s, max(0, len(s) - 64))
        if m is None or m.start("part") > pos:
            return False
        part = m.group("part")
    else:
        start = len(s.rstrip(_PART_CHARS))
        lo = max(0, len(s) - 64)
        if start == len(s) or start > pos:
            return False
        if start == 0:
            if lo:
                return False
        elif start - 1 < lo or not (s[start - 1] in "[,:" or s[start - 1].isspace()):
            return False
        part = s[start:]
        if _CUT_PART.fullmatch(part) is None:
            return False
    if part[0].isalpha():
        return True
    # A complete number at the very end ("[1, 2") is not cut inside the number.
    return part == "-" or part[-1] in ".eE+-"


def _starts_with_prose(s: str) -> bool:
    """True unless ``s`` starts like a JSON value (an opener, a digit, a sign, the word
    ``true``/``false``/``null``, or the whole text being a prefix of one). "the tool call:
    {...}" is prose."""
    if s[0] in '{["-0123456789':
        return False
    word = _WORD.match(s)
    if word is None:
        return True
    w = word.group(0)
    if w in _JSON_WORDS:
        return False
    # "tr" at the very end is a cut literal; "t: {...}" or "fa {...}" is a word of prose.
    return word.end() < len(s) or not any(lit.startswith(w) for lit in _JSON_WORDS)


def _prose_after_scalar(s: str, end: int) -> bool:
    """True when the JSON scalar ``s[:end]`` is the first word of a sentence, not an output:
    a letter follows it ("true story: ...", "null pointer", '"Sure" is ...', "42 is ..."), or
    it is a number used as a list marker ("1. ", "2) "). A string followed by ``:`` (a member
    without its object) or one value right after another is not prose: that stays
    ``trailing_text``, as does a scalar followed by prose with no JSON value after it."""
    rest = s[end:]
    word = rest.lstrip()
    if word[:1].isalpha():
        return True
    return s[0] in "-0123456789" and rest[:1] in (".", ")") and rest[1:2].isspace()


def _prose_prefix(s: str, start: int = 0) -> Classification | None:
    """``prose_prefix`` when a JSON value starts after some text (or ``truncated`` when one
    starts and is cut); None when no opener within the first tries starts a value. Openers
    are looked for from ``start`` (after a leading scalar, so braces inside a leading string
    are not taken for a value)."""
    tries = 0
    for m in _OPENERS.finditer(s, start):
        tries += 1
        if tries > _MAX_PROSE_TRIES:
            break
        got = _raw_decode(s, m.start())
        if not isinstance(got, Exception):
            return Classification(
                PARSE,
                "prose_prefix",
                None,
                f"text before the JSON value: {s[: min(m.start(), 40)]!r}",
            )
        sub_pos = getattr(got, "pos", None)
        if sub_pos is not None and (
            getattr(got, "msg", "").startswith("Unterminated string") or sub_pos >= len(s)
        ):
            return Classification(
                PARSE, "truncated", None, "text before a JSON value that ends early"
            )
    return None
