"""What a provider's pattern rules look at, read from a scan of the pattern, not a regex over it.

JSON Schema patterns are ECMA-262 regular expressions; users also write Python's spellings.
``scan`` walks the pattern once, token by token: an escape is one token with its next
character, a character class ``[...]`` is one token (so ``\\b`` inside a class, a backspace,
and a ``{`` inside a class are not mistaken for a word boundary or a quantifier), and a
counted repeat is read only where ECMA reads one (``{n}``, ``{n,}``, ``{n,m}`` with digits and
no spaces: ``a{1, 2}`` is literal text there). Each construct a provider restricts is
reported with its offset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: ``{n}``, ``{n,}``, ``{n,m}`` exactly as ECMA-262 reads a quantifier (no spaces)
_COUNT = re.compile(r"\{(\d+)(?:,(\d*))?\}")
_LOOKAROUND = ("(?<=", "(?<!", "(?=", "(?!")


@dataclass
class PatternScan:
    """The restricted constructs found in one pattern, each as (what, offset)."""

    backreferences: list[tuple[str, int]] = field(default_factory=list)
    lookaround: list[tuple[str, int]] = field(default_factory=list)
    word_boundaries: list[tuple[str, int]] = field(default_factory=list)
    #: (text, offset, largest bound: the upper one, or the lower one for ``{n,}``)
    counted: list[tuple[str, int, int]] = field(default_factory=list)


def _class_end(p: str, i: int) -> int:
    """The index after the character class opening at ``p[i] == '['`` (the pattern's end for
    an unclosed one). A ``]`` right after ``[`` or ``[^`` is a literal in Python's reading and
    an empty class in ECMA's: taken as a literal here, so the class is never cut short."""
    j = i + 1
    if j < len(p) and p[j] == "^":
        j += 1
    if j < len(p) and p[j] == "]":
        j += 1
    while j < len(p):
        if p[j] == "\\":
            j += 2
            continue
        if p[j] == "]":
            return j + 1
        j += 1
    return len(p)


def scan(p: str) -> PatternScan:
    """One pass over ``p`` (see the module doc)."""
    out = PatternScan()
    i = 0
    while i < len(p):
        c = p[i]
        if c == "\\":
            nxt = p[i + 1 : i + 2]
            if nxt in ("b", "B"):
                out.word_boundaries.append((p[i : i + 2], i))
            elif nxt.isdigit() and nxt != "0":
                out.backreferences.append((p[i : i + 2], i))
            elif nxt == "k" and p[i + 2 : i + 3] == "<":
                out.backreferences.append((p[i : i + 3], i))
            i += 2
        elif c == "[":
            i = _class_end(p, i)
        elif c == "(" and p.startswith("(?", i):
            opener = next((o for o in _LOOKAROUND if p.startswith(o, i)), None)
            if opener is not None:
                out.lookaround.append((opener, i))
            elif p.startswith("(?P=", i):
                out.backreferences.append(("(?P=", i))
            i += 2
        elif c == "{":
            m = _COUNT.match(p, i)
            if m is None:
                i += 1
                continue
            low, high = int(m.group(1)), m.group(2)
            bound = max(low, int(high)) if high else low
            out.counted.append((m.group(0), i, bound))
            i = m.end()
        else:
            i += 1
    return out
