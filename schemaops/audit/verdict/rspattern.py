"""Whether jsonschema-rs may judge a ``pattern``: decided from Python's own parse of it.

jsonschema-rs runs a pattern through its ECMA-262 translation and fancy-regex (Rust regex
syntax); ``jsonschema`` runs Python's ``re``. The fast path (``rscheck.py``) may only be
stricter than ``jsonschema``, so a pattern is left to jsonschema-rs only when every construct
in it reads the same in both or stricter in Rust. Issue 33 (items 6 and 18) found that a
regex over the pattern's text cannot decide this (``[^\\]\\w]``: a text rule stopping at the
first ``]`` missed the ``\\w``), so the decision is read from what Python's parser
(``re._parser``, the module ``re.compile`` itself uses) makes of the pattern:

- the parse tree (``re._parser.parse``), walked against an allow-list: literals, ``.``,
  classes of literals and ranges, ``\\d``/``\\w`` in a class that is not negated (ASCII in
  ECMA: stricter), ``^``/``$``/``\\A``, groups, alternation, greedy and lazy repeats,
  lookarounds, and the flags ``m`` and ``s``. Everything else is not portable: ``\\D``,
  ``\\W``, ``\\s``, ``\\S`` in any position and any category in a negated class (Rust's
  ``[^\\w]`` takes ``é``, Python's does not), ``\\b``/``\\B``, backreferences, conditionals,
  atomic groups, possessive repeats, the flags ``i``, ``x``, ``u``, ``a``, ``L``;
- the parser's warnings: Python warns (``FutureWarning``) where the text would be a nested
  class or a set operation (``[[``, ``&&``, ``--``, ``~~``, ``||``), which Rust's syntax has;
- the parser's tokens (``re._parser.Tokenizer``, which yields an escape as one token):
  ``\\<`` and ``\\>`` are literals in Python and word boundaries in Rust's regex
  (https://docs.rs/regex/latest/regex/#empty-matches);
- one pass over the parser's tokens that follows ``re._parser._parse`` step for step: which
  ``[`` opens a class and which ``{`` starts a repeat. A ``[`` inside a class is a nested class
  in Rust; a ``{`` Python reads as text outside a class is what Rust may read as a repeat count
  (``a{1, 2}``, ``a{ 2}``: Rust allows spaces in a count,
  https://docs.rs/regex/latest/regex/#repetitions); ``{,n}`` is a repeat in Python and not
  Rust's syntax. The tests hold this pass to an oracle that asks the parser itself (each
  ``[``/``{`` token escaped and the pattern parsed again: the tree unchanged means Python read
  a literal), which is too slow to run here (a parse per token: seconds on a long pattern).

Checked against jsonschema-rs 0.61.2 in ``tests/test_audit_rs_agreement.py`` (the issue's
examples, seeded random patterns and every JSONSchemaBench pattern against non-ASCII
strings, as ``pattern`` and as ``patternProperties`` keys).
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from typing import Any

# The parser ``re.compile`` itself runs (Python 3.11+; ``sre_parse`` before, now deprecated):
# the only source of Python's own reading of a pattern, private as it is.
try:
    from re import _constants as sre_c
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover (Python 3.10)
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

# Flags a pattern may set: ``m`` and ``s`` read the same in Rust; UNICODE is what Python adds
# to every str pattern (``fix_flags``), so it is allowed here and an explicit ``(?u)`` is
# looked for separately (``_explicit_unicode``).
_ALLOWED_FLAGS = sre_c.SRE_FLAG_MULTILINE | sre_c.SRE_FLAG_DOTALL | sre_c.SRE_FLAG_UNICODE
_SCOPED_FLAGS = sre_c.SRE_FLAG_MULTILINE | sre_c.SRE_FLAG_DOTALL
# in a class not negated: \d and \w are ASCII in ECMA-262, a subset of Python's
_STRICTER_CATEGORIES = frozenset({sre_c.CATEGORY_DIGIT, sre_c.CATEGORY_WORD})
_ANCHORS = frozenset({sre_c.AT_BEGINNING, sre_c.AT_END, sre_c.AT_BEGINNING_STRING})
_PLAIN = frozenset({sre_c.LITERAL, sre_c.NOT_LITERAL, sre_c.ANY})
_REPEATS = frozenset({sre_c.MAX_REPEAT, sre_c.MIN_REPEAT})
#: escapes Python reads as literal characters and Rust's regex as something else (``\\N{name}``
#: is Python's named character: Rust has no such escape)
_RUST_ESCAPES = frozenset({"\\<", "\\>", "\\N"})


def portable_pattern(pattern: str) -> bool:
    """True when no construct in ``pattern`` can make jsonschema-rs's matching more lenient
    than Python's ``re`` (a conservative test: False costs speed, never a verdict). Enough for
    a pattern whose match only ever makes an instance valid-or-not in the same direction (a
    ``pattern`` outside ``not``, ``if``, ``oneOf``)."""
    return why_not_portable(pattern) is None


def exact_pattern(pattern: str) -> bool:
    """True when jsonschema-rs matches ``pattern`` on exactly the strings Python's ``re`` does:
    what a ``patternProperties`` key needs (a key the Rust reading misses escapes its
    subschema), and any pattern where a failed match can make the instance valid (under
    ``not``, an ``if``, a ``oneOf`` branch). Stricter-in-Rust constructs are not exact:
    ``\\d``/``\\w`` (ASCII in ECMA), ``.`` (ECMA's excludes ``\\r``, U+2028, U+2029), ``$``
    (Python's also matches before a final newline), the ``m`` flag."""
    return why_not_portable(pattern, exact=True) is None


def ascii_pattern(pattern: str) -> bool:
    """True when jsonschema-rs matches ``pattern`` on exactly the strings Python's ``re``
    does *among strings of printable ASCII* (no control character, no non-ASCII): the
    reading ``rscheck.ascii_text`` gates an output on. There the constructs that differ only
    beyond ASCII or on line terminators read the same: ``\\d``/``\\w`` (ASCII in ECMA),
    ``\\D``/``\\W``/``\\s``/``\\S`` (Python's ``\\s`` adds U+001C..U+001F and
    Unicode spaces, ECMA's U+FEFF and Unicode spaces), a category in a negated class,
    ``\\b``/``\\B`` (word characters are ``[A-Za-z0-9_]`` on both sides there), ``.`` (ECMA
    also excludes ``\\r``, U+2028, U+2029), ``$`` (Python's also matches before a final
    ``\\n``) and the ``m`` flag (line terminators). Syntax Rust reads otherwise (nested
    classes, ``{`` as text, ``\\<``, backreferences, other flags) is refused as in
    ``portable_pattern``."""
    return why_not_portable(pattern, ascii=True) is None


@lru_cache(maxsize=4096)
def why_not_portable(pattern: str, exact: bool = False, ascii: bool = False) -> str | None:
    """None when ``pattern`` is portable (``exact``: exact; ``ascii``: exact on printable
    ASCII strings, ``ascii_pattern``), else the construct that is not."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a nested set / set operation warning: not portable
            tree = sre_parse.parse(pattern)
    except Warning as w:
        return f"Python warns: {w}"
    except Exception as exc:  # noqa: BLE001 (re.error, OverflowError, RecursionError...)
        return f"Python's re cannot parse it: {type(exc).__name__}"
    allowed = _ALLOWED_FLAGS & ~sre_c.SRE_FLAG_MULTILINE if exact else _ALLOWED_FLAGS
    if tree.state.flags & ~allowed:
        return f"a global flag other than {'s' if exact else 'm or s'}"
    found = _tree_problem(tree, exact, ascii)
    if found is not None:
        return found
    if _explicit_unicode(pattern):
        return "the u flag"
    return _token_problem(pattern)


def _tree_problem(tree: Any, exact: bool, ascii: bool = False) -> str | None:
    """The first construct of the parse tree outside the allow-list (iterative walk). Under a
    negative lookaround a stricter construct makes the whole match more lenient, so there
    the walk asks for exactness. ``ascii``: the ASCII reading (``ascii_pattern``), where
    every category and word boundary reads the same and nothing is ever strict."""
    if ascii:
        return _ascii_tree_problem(tree)
    stack = [(tree, exact)]
    while stack:
        sub, strict = stack.pop()
        for op, av in sub:
            if op is sre_c.ANY and strict:
                return "'.' (ECMA's excludes \\r, U+2028 and U+2029)"
            if op in _PLAIN:
                continue
            if op is sre_c.IN:
                negated = bool(av) and av[0][0] is sre_c.NEGATE
                for item_op, item in av:
                    if item_op is sre_c.CATEGORY and (
                        negated or strict or item not in _STRICTER_CATEGORIES
                    ):
                        return f"the category {item} in a{' negated' if negated else ''} class"
                    if item_op not in (sre_c.LITERAL, sre_c.RANGE, sre_c.NEGATE, sre_c.CATEGORY):
                        return f"{item_op} in a class"
            elif op is sre_c.AT:
                if av not in _ANCHORS or (strict and av is sre_c.AT_END):
                    return f"the assertion {av}"
            elif op in _REPEATS:
                stack.append((av[2], strict))
            elif op is sre_c.SUBPATTERN:
                _group, add_flags, del_flags, inner = av
                scoped = _SCOPED_FLAGS & ~sre_c.SRE_FLAG_MULTILINE if strict else _SCOPED_FLAGS
                if add_flags & ~scoped or del_flags & ~_SCOPED_FLAGS:
                    return "a scoped flag other than m or s"
                stack.append((inner, strict))
            elif op is sre_c.BRANCH:
                stack.extend((branch, strict) for branch in av[1])
            elif op is sre_c.ASSERT:
                stack.append((av[1], strict))
            elif op is sre_c.ASSERT_NOT:
                stack.append((av[1], True))
            else:  # GROUPREF, GROUPREF_EXISTS, ATOMIC_GROUP, POSSESSIVE_REPEAT, ...
                return f"{op}"
    return None


_ASCII_CATEGORIES = frozenset(
    {
        sre_c.CATEGORY_DIGIT,
        sre_c.CATEGORY_NOT_DIGIT,
        sre_c.CATEGORY_WORD,
        sre_c.CATEGORY_NOT_WORD,
        sre_c.CATEGORY_SPACE,
        sre_c.CATEGORY_NOT_SPACE,
    }
)
_ASCII_ANCHORS = _ANCHORS | {sre_c.AT_BOUNDARY, sre_c.AT_NON_BOUNDARY}


def _ascii_tree_problem(tree: Any) -> str | None:
    """``_tree_problem`` for the ASCII reading: the same allow-list, with every category
    (negated classes included) and ``\\b``/``\\B`` added, and no strict positions."""
    stack = [tree]
    while stack:
        sub = stack.pop()
        for op, av in sub:
            if op in _PLAIN:
                continue
            if op is sre_c.IN:
                for item_op, item in av:
                    if item_op is sre_c.CATEGORY and item not in _ASCII_CATEGORIES:
                        return f"the category {item}"
                    if item_op not in (sre_c.LITERAL, sre_c.RANGE, sre_c.NEGATE, sre_c.CATEGORY):
                        return f"{item_op} in a class"
            elif op is sre_c.AT:
                if av not in _ASCII_ANCHORS:
                    return f"the assertion {av}"
            elif op in _REPEATS:
                stack.append(av[2])
            elif op is sre_c.SUBPATTERN:
                _group, add_flags, del_flags, inner = av
                if add_flags & ~_SCOPED_FLAGS or del_flags & ~_SCOPED_FLAGS:
                    return "a scoped flag other than m or s"
                stack.append(inner)
            elif op is sre_c.BRANCH:
                stack.extend(av[1])
            elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
                stack.append(av[1])
            else:  # GROUPREF, GROUPREF_EXISTS, ATOMIC_GROUP, POSSESSIVE_REPEAT, ...
                return f"{op}"
    return None


def _explicit_unicode(pattern: str) -> bool:
    """True when the pattern sets ``u`` itself (Python adds UNICODE to every str pattern,
    so the parse alone cannot tell): parsed as ASCII, Python refuses the mix."""
    try:
        sre_parse.parse(pattern, sre_c.SRE_FLAG_ASCII)
    except Exception:  # noqa: BLE001
        return True
    return False


def _token_problem(pattern: str) -> str | None:
    """What the tokens show and the tree hides, in one pass over Python's own tokens: a
    Rust-only escape, a ``[`` inside a class, a ``{`` Python reads as text outside a class, a
    repeat ``{,n}``, a comment. Which ``[`` opens a class and which ``{`` is a repeat follows
    ``re._parser._parse`` step for step (Python 3.11: the ``"["`` branch's set loop and the
    ``"{"`` branch of ``REPEAT_CHARS``); ``tests/test_audit_rs_agreement.py`` holds this pass to
    an oracle that asks the parser itself (each token escaped and the pattern parsed again)."""
    src = sre_parse.Tokenizer(pattern)
    while True:
        tok = src.get()
        if tok is None:
            return None
        if tok in _RUST_ESCAPES:
            return f"the escape {tok} (read differently by Rust's regex)"
        if tok == "(" and src.match("?") and src.match("#"):
            return "a comment (?#...) (not in Rust's syntax)"
        if tok == "[":
            found = _class_problem(src)
            if found is not None:
                return found
        elif tok == "{":
            if src.next == "}":  # "{}": a literal in Python
                return "a { Python reads as text outside a class (Rust may read a repeat count)"
            lo = _digits(src)
            comma = src.match(",")
            if comma:
                _digits(src)
            if not src.match("}"):
                return "a { Python reads as text outside a class (Rust may read a repeat count)"
            if comma and not lo:
                return "a repeat count with no lower bound"


def _digits(src: Any) -> str:
    out = ""
    while src.next is not None and src.next in "0123456789":
        out += src.get()
    return out


def _class_problem(src: Any) -> str | None:
    """Walk one class after its ``[`` as Python's set loop does; a ``[`` inside is a nested
    class in Rust's syntax (Python warns only for ``[[``)."""
    src.match("^")
    first = True
    while True:
        this = src.get()
        if this is None:
            return "an unterminated class"
        if this == "]" and not first:
            return None
        if this == "[" or this in _RUST_ESCAPES:
            return "a [ inside a class (a nested class in Rust's regex)" if this == "[" else this
        if src.match("-"):
            that = src.get()
            if that is None:
                return "an unterminated class"
            if that == "]":
                return None
            if that == "[" or that in _RUST_ESCAPES:
                return "a [ inside a class (a nested class in Rust's regex)"
        first = False
