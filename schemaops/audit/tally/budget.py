"""A recommended token budget (``max_tokens``) per schema from the observed output lengths.

Why: a ``truncated_at_max_tokens`` count says the budget ran out, not how large it must be.
The lengths the server itself reports answer that: ``usage.completion_tokens`` (OpenAI/vLLM,
one choice per answer) and ``meta_info.completion_tokens`` (SGLang ``/generate``), each read
with the output's ``finish_reason``. An output stopped by ``length`` is **cut** (it needed
more than its length); any other finish reason (``stop``, ``tool_calls``, ...; not
``abort``) is **complete** (it needed exactly its length). Records without a finish reason
are not observed at all, so plain JSONL audits as before.

The budget is a quantile of the lengths a schema needs, with headroom, and never below the
cut lengths: cut outputs are right-censored observations, so with ``cut`` of ``n`` outputs
the ``QUANTILE`` of the needed length is observable only when ``cut / n <= 1 - QUANTILE``;
otherwise it lies above the longest cut and the recommendation is a lower bound (twice the
longest cut, or the longest complete output with headroom when that is more), marked so.
Lengths are never estimated from characters: without token counts there is no
recommendation, and the reason says so.

Memory is flat in the number of lines and merges exactly across ``--jobs`` workers and
shards (``merge``): per schema, counts, two maxima and a histogram of complete lengths over
fixed buckets (exact below ``EXACT``, then ``SUB`` buckets per power of two, so a bucket's
upper edge is at most 1/``SUB`` above any length in it; at most a few hundred buckets).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

QUANTILE = 0.99
HEADROOM = 1.25
EXACT = 128  # lengths below this have a bucket each
SUB_BITS = 5
SUB = 1 << SUB_BITS  # buckets per power of two above EXACT
_EXACT_BITS = EXACT.bit_length() - 1
NOT_COMPLETE = ("length", "abort")
BASIS = "completion_tokens (usage.completion_tokens, meta_info.completion_tokens)"
NO_COUNTS = (
    "the records carry no completion token count (usage.completion_tokens on a one-choice "
    "OpenAI/vLLM answer, meta_info.completion_tokens on SGLang /generate): no budget is "
    "estimated from characters"
)


def bucket(n: int) -> int:
    """The histogram bucket of a length ``n`` >= 0 (fixed edges: merges are exact)."""
    if n < EXACT:
        return n
    e = n.bit_length() - 1
    return EXACT + (e - _EXACT_BITS) * SUB + ((n >> (e - SUB_BITS)) & (SUB - 1))


def upper(b: int) -> int:
    """The largest length in bucket ``b`` (a quantile is reported as this: conservative)."""
    if b < EXACT:
        return b
    e, sub = divmod(b - EXACT, SUB)
    e += _EXACT_BITS
    return ((SUB + sub + 1) << (e - SUB_BITS)) - 1


# A dataclass of counters: the shape of stats.Tally and lower/prove.Differential, other facts.
@dataclass
class Lengths:
    """One schema's observed lengths (all exact sums, maxima and bucket counts)."""

    complete: int = 0
    cut: int = 0
    #: outputs with a finish reason but no usable token count (cut ones counted apart)
    uncounted: int = 0
    uncounted_cut: int = 0
    max_complete: int = 0
    max_cut: int = 0
    #: bucket (``bucket``) -> complete outputs
    hist: dict[int, int] = field(default_factory=dict)

    def merge(self, other: Lengths) -> None:
        self.complete += other.complete
        self.cut += other.cut
        self.uncounted += other.uncounted
        self.uncounted_cut += other.uncounted_cut
        self.max_complete = max(self.max_complete, other.max_complete)
        self.max_cut = max(self.max_cut, other.max_cut)
        for b, k in other.hist.items():
            self.hist[b] = self.hist.get(b, 0) + k


def note(lengths: dict[str, Lengths], schema: str, rec: Any, shared_usage: bool = False) -> None:
    """Observe one output of ``schema`` (``rec``: its record, or its choice's / element's view).

    ``shared_usage``: the record answered several choices, so its ``usage`` counts all of
    them and says nothing of this one (counted as without counts). A tool-call answer's count
    is observed for each call's schema: ``max_tokens`` must cover the whole answer.
    Runs for every output of a record that has a finish reason, so it is written for speed
    (plain lookups, the usual SGLang shape first).
    """
    meta = rec.get("meta_info")
    if meta.__class__ is dict:  # SGLang /generate (one per batch element)
        fr = meta.get("finish_reason")
        if fr.__class__ is dict:
            fr = fr.get("type")
        tokens = meta.get("completion_tokens")
    else:
        choices = rec.get("choices")
        if choices.__class__ is list and choices and choices[0].__class__ is dict:
            fr = choices[0].get("finish_reason")
        else:
            fr = rec.get("finish_reason")
        usage = rec.get("usage")
        tokens = usage.get("completion_tokens") if usage.__class__ is dict else None
        if shared_usage:
            tokens = None
    if fr.__class__ is not str:
        return
    s = lengths.get(schema)
    # The cut and the complete branch look alike (count, maximum) and stay inline: per output.
    if fr == "length":
        if s is None:
            s = lengths[schema] = Lengths()
        if tokens.__class__ is int and tokens >= 0:
            s.cut += 1
            if tokens > s.max_cut:
                s.max_cut = tokens
        else:
            s.uncounted += 1
            s.uncounted_cut += 1
        return
    if fr in NOT_COMPLETE:
        return
    if s is None:
        s = lengths[schema] = Lengths()
    if tokens.__class__ is int and tokens >= 0:
        s.complete += 1
        if tokens > s.max_complete:
            s.max_complete = tokens
        b = tokens if tokens < EXACT else bucket(tokens)
        h = s.hist
        h[b] = h.get(b, 0) + 1
    else:
        s.uncounted += 1


def note_counted(
    lengths: dict[str, Lengths], schema: str, fr: Any, tokens: Any, n: int = 1
) -> None:
    """``n`` outputs of ``schema`` with finish reason ``fr`` (a ``str``, else not observed)
    and completion token count ``tokens``: what ``note`` does for each, in one step (the
    audit's lean path counts SGLang records by kind and notes each kind once)."""
    if fr.__class__ is not str or fr == "abort":
        return
    s = lengths.get(schema)
    if s is None:
        s = lengths[schema] = Lengths()
    counted = tokens.__class__ is int and tokens >= 0
    if fr == "length":
        if counted:
            s.cut += n
            s.max_cut = max(s.max_cut, tokens)
        else:
            s.uncounted += n
            s.uncounted_cut += n
    elif counted:
        s.complete += n
        s.max_complete = max(s.max_complete, tokens)
        b = bucket(tokens)
        s.hist[b] = s.hist.get(b, 0) + n
    else:
        s.uncounted += n


def merge(mine: dict[str, Lengths], theirs: dict[str, Lengths]) -> None:
    """Add another chunk's lengths (exact: order does not matter)."""
    for name, s in theirs.items():
        cur = mine.get(name)
        if cur is None:
            cur = mine[name] = Lengths()
        cur.merge(s)


def _quantile(hist: dict[int, int], rank: int) -> int:
    """The upper edge of the bucket holding the ``rank``-th smallest length (1-based)."""
    seen = 0
    for b in sorted(hist):
        seen += hist[b]
        if seen >= rank:
            return upper(b)
    return upper(max(hist))


def recommend(s: Lengths) -> dict[str, Any]:
    """One schema's budget: the figures it rests on, the recommendation and why."""
    n = s.complete + s.cut
    out: dict[str, Any] = {
        "complete": s.complete,
        "cut": s.cut + s.uncounted_cut,
        "without_counts": s.uncounted,
        "p50_complete": _quantile(s.hist, math.ceil(0.5 * s.complete)) if s.complete else None,
        "max_complete": s.max_complete if s.complete else None,
        "max_cut": s.max_cut if s.cut else None,
        f"p{int(QUANTILE * 100)}_needed": None,
        "recommended_max_tokens": None,
        "lower_bound": False,
        "basis": BASIS if n else None,
    }
    if n == 0:
        out["why"] = NO_COUNTS
        return out
    q = int(QUANTILE * 100)
    rank = math.ceil(QUANTILE * n)
    if rank <= s.complete:  # censored quantile: every cut length lies above it
        need = _quantile(s.hist, rank)
        rec = max(math.ceil(need * HEADROOM), math.ceil(s.max_cut * HEADROOM))
        out[f"p{q}_needed"] = need
        why = f"p{q} of the {n} counted outputs' lengths is {need} tokens"
        if s.cut:
            why += f" (the {s.cut} cut at up to {s.max_cut} needed more)"
        out["why"] = f"{why}; x{HEADROOM} headroom, never below the cut lengths"
    else:
        # never below what a complete output really used (with headroom): with budgets that
        # varied per request, a short cut says little about the lengths others needed
        longest = math.ceil(s.max_complete * HEADROOM) if s.complete else 0
        rec = max(2 * s.max_cut, longest)
        basis = (
            "twice the longest cut"
            if rec == 2 * s.max_cut
            else (f"the longest complete output, {s.max_complete}, x{HEADROOM}")
        )
        out["lower_bound"] = True
        out["why"] = (
            f"{s.cut} of {n} counted outputs were cut at up to {s.max_cut} tokens, more than "
            f"{100 - q}%: p{q} of the needed length lies above {s.max_cut}; raise to at least "
            f"{rec} ({basis}) and audit again"
        )
    out["recommended_max_tokens"] = rec
    return out


def budgets(lengths: dict[str, Lengths]) -> list[dict[str, Any]]:
    """Per schema with cut outputs (where the budget ran out): its recommendation."""
    return [
        {"schema": name, **recommend(s)}
        for name, s in sorted(lengths.items())
        if s.cut or s.uncounted_cut
    ]


def line(b: dict[str, Any]) -> str:
    """One plain-text line per schema, for the terminal, Markdown and HTML reports."""
    if b["recommended_max_tokens"] is None:
        return f"{b['schema']}: {b['cut']} cut at max_tokens; no budget: {b['why']}"
    at_least = "at least " if b["lower_bound"] else ""
    return (
        f"{b['schema']}: max_tokens {at_least}{b['recommended_max_tokens']} "
        f"({b['cut']} cut, {b['complete']} complete; {b['why']})"
    )
