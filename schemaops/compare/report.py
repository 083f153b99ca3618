"""The compare report: per-result dicts in, per-backend summaries and a JSON document out.

The measurement layer (``schemaops.compare.measure``) returns one plain dict per schema and
backend (its fields: docs/contracts/compare.md). Everything here is pure: it only reads
those dicts, so the summaries, the recommendation and the HTML can be tested and
re-rendered from a saved ``--json`` document without any backend installed.

Aggregation choices (why):

- compile percentiles are over schemas that compiled (``status == "ok"``); schemas that did
  not are counted in ``coverage`` and ``status`` instead, because a timeout has no compile
  time and mixing in the timeout value would invent one.
- mask/advance "p50" is the median over schemas of each schema's own p50 (the typical token
  on a typical schema); "p99" is the 99th percentile over schemas of each schema's own p99
  (the slow tokens on the slow schemas: what tail latency sees), "worst" the maximum.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from schemaops.compare.model import (
    KW_COUNTS,
    OK,
    STATUSES,
    UNCHECKED,
    VERDICTS,
    not_compiled_verdict,
)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) with linear interpolation (numpy's default); None if empty."""
    xs = sorted(v for v in values if v is not None and not math.isnan(v))
    if not xs:
        return None
    if len(xs) == 1:
        return float(xs[0])
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return float(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo))


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def verdict_of(result: dict[str, Any]) -> str:
    """The enforcement verdict of one result (see ``model``); ``unchecked`` when nothing
    was walked, also for results saved before the measurement layer said so itself."""
    enf = result.get("enforcement") or {}
    v = enf.get("verdict")
    if result.get("status") != OK:
        return not_compiled_verdict(str(result.get("status")))
    walked = [enf.get(k) for k in ("valid", "invalid")]
    if all(isinstance(n, int) for n in walked) and sum(walked) == 0:
        return UNCHECKED  # "enforced" over zero examples would be vacuous
    return v if v in VERDICTS else UNCHECKED


def keyword_outcomes(result: dict[str, Any]) -> dict[str, str]:
    """Per-keyword attribution of one result: keyword -> enforced|ignored|unsupported.

    Reads ``enforcement.keywords`` as the measurement layer writes it (keyword -> example
    counts ``{"enforced", "ignored", "rejected"}``, where ``rejected`` means the schema did
    not compile); a keyword with any invalid example walked to a stop is ``ignored``.
    """
    found: dict[str, str] = {}
    for kw, val in keyword_counts(result).items():
        if val["ignored"]:
            found[kw] = "ignored"
        elif val["enforced"]:
            found[kw] = "enforced"
        elif val["rejected"]:
            found[kw] = "unsupported"
    return found


def keyword_counts(result: dict[str, Any]) -> dict[str, dict[str, int]]:
    """keyword -> {enforced, ignored, rejected} example counts of one result."""
    kws = (result.get("enforcement") or {}).get("keywords")
    if not isinstance(kws, dict):
        return {}
    return {
        str(k): {o: int(v.get(o, 0)) for o in KW_COUNTS}
        for k, v in kws.items()
        if isinstance(v, dict)
    }


def backend_summary(results: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Coverage, compile/mask percentiles and enforcement counts for one backend's results."""
    rs = list(results)
    n = len(rs)
    status = Counter(r.get("status", "error") for r in rs)
    ok = [r for r in rs if r.get("status") == "ok"]
    comp = [c for c in (_num(r.get("compile_ms")) for r in ok) if c is not None]

    def stat(key: str, sub: str) -> list[float]:
        vals = (_num((r.get(key) or {}).get(sub)) for r in ok)
        return [v for v in vals if v is not None]

    enf = Counter(verdict_of(r) for r in rs)
    return {
        "schemas": n,
        "ok": status.get("ok", 0),
        "coverage": (status.get("ok", 0) / n) if n else None,
        "status": {s: status.get(s, 0) for s in STATUSES if status.get(s)},
        "compile_ms": {
            "p50": percentile(comp, 50),
            "p90": percentile(comp, 90),
            "p99": percentile(comp, 99),
            "mean": (sum(comp) / len(comp)) if comp else None,
            "max": max(comp) if comp else None,
        },
        "mask_us": {
            "p50": percentile(stat("mask_us", "p50"), 50),
            "p99": percentile(stat("mask_us", "p99"), 99),
            "median_p99": percentile(stat("mask_us", "p99"), 50),
            "worst": max(stat("mask_us", "p99"), default=None),
        },
        "advance_us": {
            "p50": percentile(stat("advance_us", "p50"), 50),
            "p99": percentile(stat("advance_us", "p99"), 99),
        },
        "enforcement": {v: enf.get(v, 0) for v in VERDICTS},
        # valid examples: refused inside a non-ASCII string under every tokenization tried /
        # refused canonically but produced by another tokenization (see compare.retokenize)
        "rejects_valid_content": _enf_sum(rs, "rejects_valid_content"),
        "accepted_retokenized": _enf_sum(rs, "accepted_retokenized"),
    }


def keyword_cell(cell: dict[str, int] | None, empty: str) -> str:
    """A keyword-matrix cell as every report prints it: ``enforced / ignored / rejected``."""
    if not cell:
        return empty
    return f"{cell.get('enforced', 0)} / {cell.get('ignored', 0)} / {cell.get('rejected', 0)}"


def keyword_status(cell: dict[str, int]) -> str:
    """One word for a keyword_matrix cell: enforces / ignores / partial / rejects."""
    if cell["ignored"] and cell["enforced"]:
        return "partial"
    if cell["ignored"]:
        return "ignores"
    if cell["enforced"]:
        return "enforces"
    return "rejects"


def _enf_sum(results: list[dict[str, Any]], key: str) -> int:
    """Sum of one example count over results' enforcement blocks (missing counts as 0)."""
    total = 0
    for r in results:
        n = (r.get("enforcement") or {}).get(key)
        total += n if isinstance(n, int) and not isinstance(n, bool) else 0
    return total


def keyword_matrix(results: Iterable[dict[str, Any]]) -> dict[str, dict[str, dict[str, int]]]:
    """keyword -> backend -> {enforced, ignored, rejected}: invalid examples violating that
    keyword which the backend refused / let through to a stop / could not compile at all
    (keywords sorted). The one keyword aggregation: reports, HTML and tests all use it."""
    table: dict[str, dict[str, dict[str, int]]] = {}
    for r in results:
        for kw, counts in keyword_counts(r).items():
            cell = table.setdefault(kw, {}).setdefault(
                r.get("backend", "?"), dict.fromkeys(KW_COUNTS, 0)
            )
            for k in KW_COUNTS:
                cell[k] += counts.get(k, 0)
    return dict(sorted(table.items()))


@dataclass
class CompareReport:
    """What ``run_compare`` returns: raw results plus everything derived from them."""

    results: list[dict[str, Any]]
    backends: list[str]
    tokenizer: str
    source: str
    settings: dict[str, Any] = field(default_factory=dict)
    recommendation: dict[str, Any] | None = None
    #: tool-set results (``compare/toolsets.py``), apart from the schemas' summary
    toolsets: list[dict[str, Any]] = field(default_factory=list)

    def by_backend(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {b: [] for b in self.backends}
        for r in self.results:
            out.setdefault(r.get("backend", "?"), []).append(r)
        return out

    def summary(self) -> dict[str, dict[str, Any]]:
        return {b: backend_summary(rs) for b, rs in self.by_backend().items()}

    def keywords(self) -> dict[str, dict[str, dict[str, int]]]:
        return keyword_matrix(self.results)

    def schemas(self) -> list[str]:
        seen: dict[str, None] = {}
        for r in self.results:
            seen.setdefault(str(r.get("schema")), None)
        return list(seen)

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` document (docs/contracts/compare.md): ``results``, then summaries."""
        return {
            "results": self.results,
            "summary": self.summary(),
            "keywords": self.keywords(),
            "recommendation": self.recommendation,
            "backends": self.backends,
            "tokenizer": self.tokenizer,
            "source": self.source,
            "settings": self.settings,
            "toolsets": self.toolsets,
        }

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> CompareReport:
        """Rebuild a report from a saved ``--json`` document (to re-render HTML offline)."""
        results = list(doc.get("results") or [])
        backends = doc.get("backends") or sorted({r.get("backend", "?") for r in results})
        return cls(
            results=results,
            backends=list(backends),
            tokenizer=str(doc.get("tokenizer", "?")),
            source=str(doc.get("source", "?")),
            settings=dict(doc.get("settings") or {}),
            recommendation=doc.get("recommendation"),
            toolsets=list(doc.get("toolsets") or []),
        )
