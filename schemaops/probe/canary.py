"""Canaries: requests whose correct answer is practically impossible without enforcement.

A canary carries fresh random tokens (16 characters from ``[A-Za-z0-9]``, drawn with
``secrets``) in an ``enum``, a ``const`` and a one-string ``pattern`` (or the same tokens in a
regex, an EBNF grammar or a ``choice`` list). Its answer is checked three ways:

- ``satisfied``: the complete output is one the constraint allows (evidence of enforcement);
- ``broken``: the output can no longer become an allowed answer (the constraint was not
  applied);
- ``inconclusive``: the output stopped early (``finish_reason: length``) while it could still
  have become an allowed answer (free whitespace run to the token budget, for instance).

False verdicts. *False "enforced"*: the tokens are drawn after everything the model has seen
and, on every path but tools, never reach the model's input (neither engine puts a
``json_schema``, regex, grammar or choice list into the prompt). An unconstrained output is
then independent of the tokens, so it hits a given token with probability at most
``1/62**16`` and one of an enum of ``k`` with at most ``k/62**16``. A JSON canary needs its
enum, const and pattern token all right: at most ``ENUM_SIZE * 62**-48`` per answer, ~4e-86.
*False "unconstrained"*: an enforcing server cannot emit a complete answer outside the
grammar, and a cut-off answer that is still a possible prefix is ``inconclusive``, never
``broken``: probability 0 (a backend bug that lets an output out IS a constraint not applied).
Two paths carry no such bound and say so: ``response_format: json_object`` (any object is
allowed, there is no secret) and tools (chat templates show the tool's parameters, tokens
included, to the model; a model that copies them could pass unconstrained: the prompt tells
it not to call tools, to make that unlikely).
"""

from __future__ import annotations

import json
import re
import secrets
import string
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema

ALPHABET = string.ascii_letters + string.digits
TOKEN_LEN = 16
ENUM_SIZE = 4
# One canary's bound on a false "enforced" when its tokens are not shown to the model.
P_TOKEN = float(len(ALPHABET)) ** -TOKEN_LEN  # one given token: 2.1e-29
P_FALSE_ENFORCED_JSON = ENUM_SIZE * P_TOKEN**3  # enum hit and const and pattern: ~3.7e-86
P_FALSE_ENFORCED_TEXT = ENUM_SIZE * P_TOKEN**2  # regex/ebnf: one of the enum, then a const
P_FALSE_ENFORCED_CHOICE = ENUM_SIZE * P_TOKEN  # a choice list: one of ENUM_SIZE tokens
P_FALSE_UNCONSTRAINED = 0.0

Kind = Literal["json", "regex", "ebnf", "choice", "json_object"]
Judgement = Literal["satisfied", "broken", "inconclusive"]


class Tokens:
    """Distinct random tokens for one probe run (no two canaries share one)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def take(self) -> str:
        while True:
            tok = "".join(secrets.choice(ALPHABET) for _ in range(TOKEN_LEN))
            if tok not in self._seen:
                self._seen.add(tok)
                return tok


@dataclass
class Canary:
    """One constraint and the finite set of compact answers it allows (``answers``)."""

    kind: Kind
    choices: list[str]
    fixed: str
    shape: str
    schema: dict[str, Any] = field(default_factory=dict)

    @property
    def regex(self) -> str:
        alts = "|".join(self.choices)
        return f"({alts})-{self.fixed}"

    @property
    def ebnf(self) -> str:
        alts = " | ".join(f'"{c}"' for c in self.choices)
        return f'root ::= ({alts}) "-{self.fixed}"'

    def answers(self) -> list[str]:
        """Every compact answer (no insignificant whitespace), in any property order."""
        if self.kind in ("regex", "ebnf"):
            return [f"{c}-{self.fixed}" for c in self.choices]
        if self.kind == "choice":
            return list(self.choices)
        if self.kind == "json":
            out = []
            for c in self.choices:
                parts = {"pick": c, "same": self.fixed, "shape": self.shape}
                for order in _ORDERS:
                    items = ",".join(f'"{k}":"{parts[k]}"' for k in order)
                    out.append("{" + items + "}")
            return out
        return []

    def bound(self) -> float | None:
        """The false-"enforced" bound of one satisfied answer (``None``: no bound)."""
        return {
            "json": P_FALSE_ENFORCED_JSON,
            "regex": P_FALSE_ENFORCED_TEXT,
            "ebnf": P_FALSE_ENFORCED_TEXT,
            "choice": P_FALSE_ENFORCED_CHOICE,
        }.get(self.kind)


_ORDERS = [
    ("pick", "same", "shape"),
    ("pick", "shape", "same"),
    ("same", "pick", "shape"),
    ("same", "shape", "pick"),
    ("shape", "pick", "same"),
    ("shape", "same", "pick"),
]


def make(kind: Kind, tokens: Tokens) -> Canary:
    """A fresh canary of ``kind`` with its own tokens."""
    choices = [tokens.take() for _ in range(ENUM_SIZE)]
    fixed, shape = tokens.take(), tokens.take()
    schema: dict[str, Any] = {}
    if kind == "json":
        schema = {
            "type": "object",
            "properties": {
                "pick": {"type": "string", "enum": choices},
                "same": {"type": "string", "const": fixed},
                "shape": {"type": "string", "pattern": f"^{shape}$"},
            },
            "required": ["pick", "same", "shape"],
            "additionalProperties": False,
        }
    elif kind == "json_object":
        schema = {"type": "object"}
    return Canary(kind, choices, fixed, shape, schema)


_WS = re.compile(r"\s+")


def judge(canary: Canary, text: str | None, truncated: bool) -> tuple[Judgement, str]:
    """``(judgement, why)`` for one answer's text; ``truncated``: stopped by the token budget."""
    if text is None:
        return "broken", "no text in the answer"
    if canary.kind in ("json", "json_object"):
        return _judge_json(canary, text, truncated)
    answer = text if canary.kind != "choice" else text.strip()
    if answer in canary.answers():
        return "satisfied", "the answer is one the constraint allows"
    if truncated and any(a.startswith(answer) for a in canary.answers()):
        return "inconclusive", "cut off by the token budget while still a possible answer"
    return "broken", f"not an allowed answer: {_show(text)}"


def _judge_json(canary: Canary, text: str, truncated: bool) -> tuple[Judgement, str]:
    try:
        value = json.loads(text)
    except ValueError:
        if truncated and is_json_prefix(text):
            return "inconclusive", "cut off by the token budget inside a JSON value"
        return "broken", f"not JSON: {_show(text)}"
    if not isinstance(value, dict) and canary.kind == "json_object":
        return "broken", f"JSON but not an object: {_show(text)}"
    errors = sorted(jsonschema.Draft202012Validator(canary.schema).iter_errors(value), key=str)
    if errors:
        return "broken", f"violates the canary schema ({errors[0].validator}): {_show(text)}"
    return "satisfied", "valid against the canary schema"


def _show(text: str, limit: int = 80) -> str:
    from schemaops.warm.answer import clean

    return clean(json.dumps(text, ensure_ascii=False), limit)


_LITERALS = ("true", "false", "null")


def is_json_prefix(text: str) -> bool:
    """Whether ``text`` can be continued into one JSON value (leading whitespace allowed).

    A small pushdown scan: it only has to be right about *possible* continuations, which is
    what tells a cut-off constrained answer from free text.
    """
    stack: list[str] = []  # "{" or "["
    expect = "value"  # value | key | colon | comma_or_close | end
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\r\n":
            i += 1
            continue
        if expect == "end":
            return False
        if expect in ("value", "key"):
            if ch == '"':
                j = _scan_string(text, i + 1)
                if j is None:
                    return True  # inside a string at the cut
                if j < 0:
                    return False
                i = j
                expect = "colon" if expect == "key" else "comma_or_close"
            elif expect == "key":
                if ch == "}" and text[:i].rstrip().endswith("{"):
                    stack.pop()
                    i += 1
                    expect = _after(stack)
                else:
                    return False
            elif ch in "{[":
                stack.append(ch)
                i += 1
                expect = "key" if ch == "{" else "value"
            elif ch == "]" and stack and stack[-1] == "[" and text[:i].rstrip().endswith("["):
                stack.pop()
                i += 1
                expect = _after(stack)
            elif ch in "-0123456789":
                m = re.compile(r"-?(0|[1-9]\d*)?(\.\d*)?([eE][+-]?\d*)?").match(text, i)
                j = m.end() if m else i + 1
                if j == n:
                    return True
                if not re.fullmatch(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?", text[i:j]):
                    return False
                i = j
                expect = "comma_or_close"
            elif ch in "tfn":
                word = next((w for w in _LITERALS if w.startswith(text[i : i + len(w)])), None)
                if word is None:
                    return False
                if i + len(word) > n:
                    return True
                i += len(word)
                expect = "comma_or_close"
            else:
                return False
        elif expect == "colon":
            if ch != ":":
                return False
            i += 1
            expect = "value"
        else:  # comma_or_close
            if not stack:
                return False
            if ch == ",":
                i += 1
                expect = "key" if stack[-1] == "{" else "value"
            elif (ch == "}" and stack[-1] == "{") or (ch == "]" and stack[-1] == "["):
                stack.pop()
                i += 1
                expect = _after(stack)
            else:
                return False
    return True


def _after(stack: list[str]) -> str:
    return "comma_or_close" if stack else "end"


def _scan_string(text: str, i: int) -> int | None:
    """Index after the closing quote; ``None`` if the text ends inside; -1 if invalid."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            return i + 1
        if ch == "\\":
            if i + 1 >= n:
                return None
            esc = text[i + 1]
            if esc == "u":
                hexpart = text[i + 2 : i + 6]
                if not re.fullmatch(r"[0-9a-fA-F]*", hexpart):
                    return -1
                if len(hexpart) < 4:
                    return None
                i += 6
                continue
            if esc not in '"\\/bfnrt':
                return -1
            i += 2
            continue
        if ord(ch) < 0x20:
            return -1
        i += 1
    return None
