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
then independent of the tokens, so it hits a given token with probability about
``1/62**16`` and one of an enum of ``k`` about ``k/62**16``. A JSON canary needs its enum,
const and pattern token all right: at most ``ENUM_SIZE / (S (S-1) (S-2))`` per answer with
``S = 62**16 - MAX_DRAWN`` (tokens are distinct), ~3.7e-86 (``false_enforced_bound``).
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
import secrets
import string
from dataclasses import dataclass, field
from fractions import Fraction
from math import prod
from typing import Any, Literal

import jsonschema

from schemaops.probe import jsonscan

ALPHABET = string.ascii_letters + string.digits
TOKEN_LEN = 16
ENUM_SIZE = 4
# The most tokens one probe run draws (20 canaries x 16 paths x 6 tokens = 1,920): each
# canary's tokens come from those not drawn yet, so the bounds below hold for the last one too.
MAX_DRAWN = 4096
# How many of its canary's tokens an answer must name to satisfy it: one of the enum, then
# the const and the pattern's (json), the const (regex, ebnf), nothing more (choice).
HITS = {"json": 3, "regex": 2, "ebnf": 2, "choice": 1}


def false_enforced_bound(
    kind: str,
    space: int = len(ALPHABET) ** TOKEN_LEN,
    enum: int = ENUM_SIZE,
    drawn: int = MAX_DRAWN,
) -> Fraction | None:
    """The most probability with which an answer that does not depend on the canary's tokens
    satisfies it (``None``: no bound, ``json_object``).

    A canary's tokens are distinct, drawn uniformly from the ``space - drawn`` tokens not
    drawn before. An answer naming ``h = HITS[kind]`` distinct tokens satisfies the canary
    only if they are one of the ``enum`` choices and the ``h - 1`` single tokens: exactly
    ``enum / (S (S-1) ... (S-h+1))`` with ``S = space - drawn``; an answer naming a token
    twice cannot satisfy it. ``tests/test_probe_canary.py`` checks this against every draw
    of a small alphabet."""
    hits = HITS.get(kind)
    if hits is None:
        return None
    free = space - drawn
    return Fraction(enum, prod(free - j for j in range(hits)))


P_TOKEN = float(len(ALPHABET)) ** -TOKEN_LEN  # one given token: 2.1e-29
P_FALSE_ENFORCED_JSON = float(false_enforced_bound("json"))  # type: ignore[arg-type]  # 3.7e-86
P_FALSE_ENFORCED_TEXT = float(false_enforced_bound("regex"))  # type: ignore[arg-type]  # 1.8e-57
P_FALSE_ENFORCED_CHOICE = float(false_enforced_bound("choice"))  # type: ignore[arg-type]  # 8.4e-29
P_FALSE_UNCONSTRAINED = 0.0

Kind = Literal["json", "regex", "ebnf", "choice", "json_object"]
Judgement = Literal["satisfied", "broken", "inconclusive"]


class Tokens:
    """Distinct random tokens for one probe run (no two canaries share one).

    ``alphabet`` and ``length`` are the probe's own outside tests (a small alphabet lets a
    test enumerate every draw); more than ``limit`` tokens would void ``false_enforced_bound``.
    """

    def __init__(
        self, alphabet: str = ALPHABET, length: int = TOKEN_LEN, limit: int = MAX_DRAWN
    ) -> None:
        self._seen: set[str] = set()
        self.alphabet, self.length, self.limit = alphabet, length, limit

    def take(self) -> str:
        if len(self._seen) >= self.limit:
            raise RuntimeError(f"more than {self.limit} canary tokens in one run")
        while True:
            tok = "".join(secrets.choice(self.alphabet) for _ in range(self.length))
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
        bound = false_enforced_bound(self.kind)
        return None if bound is None else float(bound)


_ORDERS = [
    ("pick", "same", "shape"),
    ("pick", "shape", "same"),
    ("same", "pick", "shape"),
    ("same", "shape", "pick"),
    ("shape", "pick", "same"),
    ("shape", "same", "pick"),
]


def make(kind: Kind, tokens: Tokens, enum: int = ENUM_SIZE) -> Canary:
    """A fresh canary of ``kind`` with its own tokens (``enum`` choices)."""
    choices = [tokens.take() for _ in range(enum)]
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


def judge(
    canary: Canary, text: str | None, truncated: bool, deadline: float | None = None
) -> tuple[Judgement, str]:
    """``(judgement, why)`` for one answer's text; ``truncated``: stopped by the token budget;
    ``deadline`` (``time.monotonic``): past it, a cut-off answer not yet told apart from free
    text is ``inconclusive`` (the check is linear, but a answer may be megabytes)."""
    if text is None:
        return "broken", "no text in the answer"
    if canary.kind in ("json", "json_object"):
        return _judge_json(canary, text, truncated, deadline)
    answer = text if canary.kind != "choice" else text.strip()
    if answer in canary.answers():
        return "satisfied", "the answer is one the constraint allows"
    if truncated and any(a.startswith(answer) for a in canary.answers()):
        return "inconclusive", "cut off by the token budget while still a possible answer"
    return "broken", f"not an allowed answer: {_show(text)}"


def _judge_json(
    canary: Canary, text: str, truncated: bool, deadline: float | None
) -> tuple[Judgement, str]:
    try:
        value = json.loads(text)
    except RecursionError:
        # nested deeper than Python's parser goes ("[" x 1,500): the scan decides, no stack
        return _judge_deep(canary, text, truncated, deadline)
    except ValueError:
        if not truncated:
            return "broken", f"not JSON: {_show(text)}"
        state = jsonscan.scan(text, deadline).state
        if state == "prefix":
            return "inconclusive", "cut off by the token budget inside a JSON value"
        if state == "unknown":
            return "inconclusive", _unchecked(text)
        return "broken", f"not JSON: {_show(text)}"
    if not isinstance(value, dict) and canary.kind == "json_object":
        return "broken", f"JSON but not an object: {_show(text)}"
    errors = sorted(jsonschema.Draft202012Validator(canary.schema).iter_errors(value), key=str)
    if errors:
        return "broken", f"violates the canary schema ({errors[0].validator}): {_show(text)}"
    return "satisfied", "valid against the canary schema"


def _judge_deep(
    canary: Canary, text: str, truncated: bool, deadline: float | None
) -> tuple[Judgement, str]:
    """An answer nested deeper than ``json.loads`` can go: no canary answer is (a JSON canary
    is one flat object), so a complete one breaks a JSON canary and is an object or not for
    ``json_object``; a cut-off one is judged like any cut-off answer."""
    found = jsonscan.scan(text, deadline)
    deep = f"JSON nested {found.depth:,} levels deep"
    if found.state == "unknown":
        return "inconclusive", _unchecked(text)
    if found.state == "complete":
        if canary.kind == "json_object" and text.lstrip().startswith("{"):
            return "satisfied", f"a JSON object ({deep})"
        return "broken", f"{deep}, not the canary's flat object: {_show(text)}"
    if found.state == "prefix" and truncated:
        return "inconclusive", f"cut off by the token budget inside a JSON value ({deep})"
    return "broken", f"not JSON ({deep} at most): {_show(text)}"


def _unchecked(text: str) -> str:
    return (
        f"cut off by the token budget; the {len(text):,}-character answer could not be "
        "checked within --timeout: no evidence"
    )


def _show(text: str, limit: int = 80) -> str:
    from schemaops.http.answer import clean

    return clean(json.dumps(text, ensure_ascii=False), limit)
