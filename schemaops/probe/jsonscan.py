"""One linear pass over a model's answer: is it one JSON value, a cut-off start of one, or
neither?

Why a scanner of its own: ``json.loads`` says only "not JSON" for an answer cut off by the
token budget, and a cut-off answer that could still become valid is no evidence against a
grammar (``canary.judge`` calls it ``inconclusive``, never ``broken``). The scan is a small
pushdown automaton that looks at each character once (a string, a number or a run of
whitespace is consumed by one regex match each), keeps its nesting on an explicit stack (an
answer of ``[`` x 100,000 is no RecursionError) and remembers whether the open container is
still empty (the old check re-read everything before each ``]``/``}``: quadratic, 47 s for a
1.8 MB answer). ``steps`` counts the loop's iterations, each of which consumes at least one
character, so ``steps <= len(text) + 1``; a ``deadline`` (``time.monotonic`` seconds) is
checked every ``CHECK_EVERY`` steps and ends the scan as ``unknown``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

State = Literal["complete", "prefix", "invalid", "unknown"]
CHECK_EVERY = 4096

_WS = re.compile(r"[ \t\r\n]*")
# a string's body: plain characters and valid escapes; what stops it is the closing quote,
# the end of the text, a cut escape or an invalid character
_STRING_BODY = re.compile(r'(?:[^"\\\x00-\x1f]+|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*')
_CUT_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{0,3})?")
_NUMBER_HEAD = re.compile(r"-?(0|[1-9]\d*)?(\.\d*)?([eE][+-]?\d*)?")
_NUMBER = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?")
_LITERALS = ("true", "false", "null")


@dataclass(frozen=True)
class Scan:
    """``complete``: one whole JSON value (surrounding whitespace allowed); ``prefix``: the
    text ends inside a value that can still be completed (empty or blank text included);
    ``invalid``: no continuation makes it JSON; ``unknown``: the deadline passed first."""

    state: State
    steps: int
    depth: int = 0  # the deepest nesting seen


def scan(
    text: str, deadline: float | None = None, clock: Callable[[], float] = time.monotonic
) -> Scan:
    """Classify ``text`` in one pass (see the module docstring)."""
    stack: list[str] = []  # "{" or "["
    # value | key | key_or_close | value_or_close | colon | comma_or_close | end
    expect = "value"
    i, n, steps, deepest = 0, len(text), 0, 0
    while True:
        steps += 1
        if deadline is not None and steps % CHECK_EVERY == 0 and clock() > deadline:
            return Scan("unknown", steps, deepest)
        if i < n and text[i] in " \t\r\n":
            i = _WS.match(text, i).end()  # type: ignore[union-attr]
        if i >= n:
            return Scan("complete" if expect == "end" else "prefix", steps, deepest)
        ch = text[i]
        if expect == "end":
            return Scan("invalid", steps, deepest)
        if expect == "colon":
            if ch != ":":
                return Scan("invalid", steps, deepest)
            i, expect = i + 1, "value"
            continue
        if expect == "comma_or_close":
            if ch == ",":
                i, expect = i + 1, "key" if stack[-1] == "{" else "value"
            elif ch == ("}" if stack[-1] == "{" else "]"):
                stack.pop()
                i, expect = i + 1, "comma_or_close" if stack else "end"
            else:
                return Scan("invalid", steps, deepest)
            continue
        if (ch == "}" and expect == "key_or_close") or (ch == "]" and expect == "value_or_close"):
            stack.pop()  # an empty container
            i, expect = i + 1, "comma_or_close" if stack else "end"
            continue
        if expect in ("key", "key_or_close"):
            if ch != '"':
                return Scan("invalid", steps, deepest)
            j = _string_end(text, i + 1)
            if j is None:
                return Scan("prefix", steps, deepest)
            if j < 0:
                return Scan("invalid", steps, deepest)
            i, expect = j, "colon"
            continue
        # a value
        if ch == '"':
            j = _string_end(text, i + 1)
            if j is None:
                return Scan("prefix", steps, deepest)
            if j < 0:
                return Scan("invalid", steps, deepest)
            i = j
        elif ch in "{[":
            stack.append(ch)
            deepest = max(deepest, len(stack))
            i, expect = i + 1, "key_or_close" if ch == "{" else "value_or_close"
            continue
        elif ch in "-0123456789":
            j = _NUMBER_HEAD.match(text, i).end()  # type: ignore[union-attr]
            if j == n:
                return Scan("prefix", steps, deepest)  # "1." or "-" at the cut
            if _NUMBER.fullmatch(text, i, j) is None:
                return Scan("invalid", steps, deepest)
            i = j
        elif ch in "tfn":
            word = next(w for w in _LITERALS if w[0] == ch)
            got = text[i : i + len(word)]
            if not word.startswith(got):
                return Scan("invalid", steps, deepest)
            if len(got) < len(word):
                return Scan("prefix", steps, deepest)
            i += len(word)
        else:
            return Scan("invalid", steps, deepest)
        expect = "comma_or_close" if stack else "end"


def _string_end(text: str, i: int) -> int | None:
    """Index after the closing quote of a string whose body starts at ``i``; ``None`` if the
    text ends inside it; -1 if it is invalid (a raw control character, a bad escape). One
    regex match in C, however long the string or however many escapes it holds."""
    j = _STRING_BODY.match(text, i).end()  # type: ignore[union-attr]
    if j >= len(text):
        return None
    if text[j] == '"':
        return j + 1
    if _CUT_ESCAPE.fullmatch(text, j):
        return None  # "\" or "\u00" at the cut
    return -1


def is_json_prefix(text: str) -> bool:
    """Whether ``text`` is one JSON value or can be continued into one."""
    return scan(text).state in ("complete", "prefix")
