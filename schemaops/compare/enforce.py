"""The enforcement walk: push a known instance token by token through a fresh matcher.

A valid instance must be *producible*: every token allowed and, at the end, the stop token
too. An invalid instance must be *refused* somewhere before the stop; one that reaches the
stop is ``accepts_invalid``: the backend would let a model emit it, i.e. the backend ignores
some keyword. Per invalid example the keyword comes from jsonschema's ``best_match`` (computed
by the caller, see ``instances.violated_keyword``), which gives per-keyword attribution.

Rejections of valid instances are located (see ``locate``): a rejection inside a string
literal holding any character outside printable ASCII is ``content``, anything else is
``structure``. A content rejection may be the canonical tokenization's fault rather than the
value's, so the caller tries the other tokenizations a model could emit (``retokenize``:
shorter tokens, byte tokens, ``\\u`` escapes); a valid example none of them can produce is
``rejects_valid`` like a structural one (a service whose users write "Zoë" needs it), and
one another tokenization produces is counted as ``accepted_retokenized``.

The same loop times ``fill_mask`` and ``accept_token`` per token (``perf_counter_ns`` around
the library call only), so enforcement and per-token figures come from one walk.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from schemaops.backends.base import CompiledGrammar
from schemaops.compare.model import (
    ACCEPTS_INVALID,
    ENFORCED,
    OK,
    REJECTS_VALID,
    UNCHECKED,
    not_compiled_verdict,
)
from schemaops.compare.retokenize import printable_ascii, string_spans


@dataclass
class Walk:
    """What happened to one instance."""

    n_tokens: int
    accepted_tokens: int
    reached_stop: bool  # every token and then the stop token were accepted
    reject_token: int | None = None  # index of the first refused token (None: all accepted)
    reject_offset: int | None = None  # char offset of that token in the text
    reject_end: int | None = None  # char offset just after it
    mask_mismatch: int = 0  # tokens whose mask bit disagreed with accept_token
    mask_ns: Sequence[int] = field(default_factory=list)
    advance_ns: Sequence[int] = field(default_factory=list)


def walk(
    compiled: CompiledGrammar,
    bitmask: np.ndarray,
    ids: list[int],
    offsets: list[tuple[int, int]],
    stop_token_id: int,
) -> Walk:
    """Walk ``ids`` through a fresh matcher, timing each mask fill and advance."""
    m = compiled.matcher()
    fill, accept = m.mask_filler(bitmask), m.accept_token
    pc = time.perf_counter_ns
    n = len(ids)
    # Preallocated C arrays, not lists of ints: kept-alive int objects make each later walk
    # allocate fresh, cache-cold memory, which showed up as ~7% per-token "overhead".
    mask_ns = array("q", bytes(8 * (n + 1)))
    adv_ns = array("q", bytes(8 * n))
    words = bitmask[0]
    mismatch = 0
    for k, tid in enumerate(ids):
        t0 = pc()
        fill()
        t1 = pc()
        ok = accept(tid)
        t2 = pc()
        mask_ns[k] = t1 - t0
        adv_ns[k] = t2 - t1
        if ((int(words[tid >> 5]) >> (tid & 31)) & 1) != ok:
            mismatch += 1
        if not ok:
            off, end = offsets[k] if k < len(offsets) else (None, None)
            return Walk(n, k, False, k, off, end, mismatch, mask_ns[: k + 1], adv_ns[: k + 1])
    t0 = pc()
    fill()
    mask_ns[n] = pc() - t0
    stop_ok = m.accept_token(stop_token_id)
    return Walk(n, n, bool(stop_ok), None, None, None, mismatch, mask_ns, adv_ns)


def locate(text: str, start: int | None, end: int | None = None) -> tuple[str, bool]:
    """Where a refused token ``text[start:end]`` sits: (``"string"``|``"structure"``|``"end"``,
    content?). Content means the token is inside a string literal that holds characters
    outside printable ASCII: control characters, C1 controls, astral or rare code points,
    non-Latin digits in a ``format`` string... Backends legitimately differ there (escaping
    rules, ASCII-only format regexes), and hypothesis-generated strings are full of them, so
    such refusals are reported apart from structural ones. A refusal inside an ASCII string
    (an ``enum``, ``pattern`` or ``maxLength`` at work) stays structural."""
    if start is None:
        return "end", False
    for s, e in string_spans(text):
        if s - 1 <= start < e:  # the token may begin with the opening quote
            return "string", not printable_ascii(text[s:e])
    return "structure", False


def summarize(
    details: list[dict[str, Any]], status: str = OK, reason: str | None = None
) -> dict[str, Any]:
    """The ``enforcement`` block of a result from per-instance ``details``.

    ``status`` is the result's compile status: anything but ``ok`` means nothing was walked
    and the verdict is ``unsupported`` or ``failed`` (see ``model``). Otherwise precedence:
    ``accepts_invalid`` (the silent failure: a model may emit schema-violating output) >
    ``rejects_valid`` (a valid example no tokenization tried could produce) > ``unchecked``
    (no example walked: no evidence) > ``enforced``. Of the ``rejects_valid``,
    ``rejects_valid_content`` were refused inside a non-ASCII string; ``accepted_retokenized``
    counts valid examples refused in their canonical tokenization but produced by another.
    ``reason`` (why nothing was walked) is kept for an ``unchecked`` verdict.
    """
    compiled = status == OK
    acc = sum(1 for d in details if d["kind"] == "invalid" and d["outcome"] == "accepted")
    refused = [d for d in details if d["kind"] == "valid" and not produced(d)]
    rej = len(refused)
    rej_content = sum(1 for d in refused if d.get("content"))
    retok = sum(1 for d in details if d["kind"] == "valid" and d.get("accepted_as"))
    keywords: dict[str, dict[str, int]] = {}
    for d in details:
        if d["kind"] != "invalid":
            continue
        kw = d.get("keyword") or "?"
        row = keywords.setdefault(kw, {"enforced": 0, "ignored": 0, "rejected": 0})
        if not compiled:
            row["rejected"] += 1
        elif d["outcome"] == "accepted":
            row["ignored"] += 1
        else:
            row["enforced"] += 1
    n_valid = sum(1 for d in details if d["kind"] == "valid")
    n_invalid = sum(1 for d in details if d["kind"] == "invalid")
    if not compiled:
        verdict = not_compiled_verdict(status)
    elif acc:
        verdict = ACCEPTS_INVALID
    elif rej:
        verdict = REJECTS_VALID
    elif n_valid + n_invalid == 0:
        verdict = UNCHECKED  # "enforced" over zero examples would be vacuous
    else:
        verdict = ENFORCED
    out = {
        "verdict": verdict,
        "accepts_invalid": acc,
        "rejects_valid": rej,
        "rejects_valid_content": rej_content,
        "accepted_retokenized": retok,
        "valid": n_valid if compiled else 0,
        "invalid": n_invalid if compiled else 0,
        "keywords": keywords,
        "details": [d for d in details if _interesting(d)],
    }
    if verdict == UNCHECKED:
        out["reason"] = reason or "no valid or invalid examples to walk"
    return out


def produced(d: dict[str, Any]) -> bool:
    """Whether a walked example reached a stop, canonically or in another tokenization."""
    return d.get("outcome") == "accepted" or bool(d.get("accepted_as"))


def _interesting(d: dict[str, Any]) -> bool:
    """Details kept in results: every failure, and every invalid example (for attribution)."""
    return d["kind"] == "invalid" or d["outcome"] != "accepted"
