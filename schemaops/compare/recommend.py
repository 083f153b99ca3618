"""Pick a backend for a registry and say why, from compare results alone.

The order of what matters, and why:

1. **Coverage**: a schema that does not compile on the backend cannot be served constrained
   at all (SGLang caches it as invalid and every request for it fails).
2. **Enforcement**: a backend that lets invalid output through (a keyword it ignores) makes
   "0% violations with constrained decoding" false; one that cannot produce a valid example
   forces the model into other outputs. Both are correctness, so they rank before speed.
3. **Compile p99**: a cold compile stalls the first request of each schema on each replica
   (and SGLang caches a compile that times out as invalid); the tail is what hurts.
4. **Mask time per token**: paid on every generated token, so among backends whose compile
   tails are close (within a band) the faster per-token one wins.

Compile times within ``max(COMPILE_BAND_MS, COMPILE_BAND_RATIO * faster)`` are treated as
equal, because a compile that is warmed at deploy (``schemaops warm``) costs nothing at
request time, while mask time never goes away.
"""

from __future__ import annotations

from typing import Any

from schemaops.compare.report import CompareReport, keyword_outcomes, verdict_of

COMPILE_BAND_MS = 10.0
COMPILE_BAND_RATIO = 0.25
# Per-token differences smaller than this factor are within run-to-run noise on shared CPUs.
FASTER_RATIO = 1.5


def _fmt_ms(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.0f} ms" if x >= 100 else f"{x:.1f} ms" if x >= 1 else f"{x:.2f} ms"


def _fmt_us(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0f} µs" if x >= 10 else f"{x:.1f} µs"


def _profile(backend: str, report: CompareReport, summ: dict[str, Any]) -> dict[str, Any]:
    rs = [r for r in report.results if r.get("backend") == backend]
    bad_status = {r["schema"]: r.get("status") for r in rs if r.get("status") != "ok"}
    acc = sorted({str(r["schema"]) for r in rs if verdict_of(r) == "accepts_invalid"})
    rej = sorted({str(r["schema"]) for r in rs if verdict_of(r) == "rejects_valid"})
    unchecked = sorted({str(r["schema"]) for r in rs if verdict_of(r) == "unchecked"})
    ignored = sorted(
        {kw for r in rs for kw, out in keyword_outcomes(r).items() if out == "ignored"}
    )
    n = summ["schemas"]
    full = n > 0 and summ["ok"] == n
    tier = 0 if full and not acc and not rej else 1 if full else 2
    return {
        "backend": backend,
        "tier": tier,
        "schemas": n,
        "coverage": summ["coverage"],
        "not_ok": bad_status,
        "accepts_invalid": acc,
        "rejects_valid": rej,
        "unchecked": unchecked,
        "ignored_keywords": ignored,
        "compile_p99_ms": summ["compile_ms"]["p99"],
        "compile_p50_ms": summ["compile_ms"]["p50"],
        "mask_p50_us": summ["mask_us"]["p50"],
        "mask_p99_us": summ["mask_us"]["p99"],
    }


def _within_band(anchor: float, x: float) -> bool:
    """Whether compile p99 ``x`` counts as equal to the faster ``anchor`` (see module doc)."""
    return x - anchor <= max(COMPILE_BAND_MS, COMPILE_BAND_RATIO * anchor)


def _correctness(p: dict[str, Any]) -> tuple[int, float, int]:
    """Tier, then coverage (higher first), then the number of schemas with wrong answers."""
    return (p["tier"], -(p["coverage"] or 0), len(p["accepts_invalid"]) + len(p["rejects_valid"]))


def _compile_bands(profiles: list[dict[str, Any]]) -> dict[str, int]:
    """backend -> compile band index (0 = fastest band) among equally correct profiles.

    Bands are anchored, not pairwise: sorted by compile p99, a band starts at its fastest
    member and takes every later one within the band *of that anchor*. A pairwise "close"
    test is not transitive (0 ~ 9 ~ 18 ms but 0 !~ 18), and a non-transitive comparator
    makes the sort, and so the recommendation, depend on the order of ``--backends``.
    Anchored bands depend only on the values, so the ranking is a total order.
    """
    inf = float("inf")
    out: dict[str, int] = {}
    classes: dict[tuple, list[dict[str, Any]]] = {}
    for p in profiles:
        classes.setdefault(_correctness(p), []).append(p)
    for members in classes.values():
        members = sorted(
            members,
            key=lambda p: (
                p["compile_p99_ms"] if p["compile_p99_ms"] is not None else inf,
                p["backend"],
            ),
        )
        band, anchor = -1, None
        for p in members:
            c = p["compile_p99_ms"]
            if c is None:  # no compile time at all: one band after every measured one
                out[p["backend"]] = 1 << 20
                continue
            if anchor is None or not _within_band(anchor, c):
                band, anchor = band + 1, c
            out[p["backend"]] = band
    return out


def rank(profiles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Profiles best first: correctness, then compile band, then mask p50, then name.

    A sort on one key tuple per profile: a total order, independent of the input order.
    """
    inf = float("inf")
    bands = _compile_bands(profiles)

    def key(p: dict[str, Any]) -> tuple:
        mask = p["mask_p50_us"] if p["mask_p50_us"] is not None else inf
        return (*_correctness(p), bands[p["backend"]], mask, p["backend"])

    return sorted(profiles, key=key)


def _problems(p: dict[str, Any]) -> list[str]:
    out = []
    if p["not_ok"]:
        by: dict[str, list[str]] = {}
        for s, st in p["not_ok"].items():
            by.setdefault(str(st), []).append(str(s))
        out += [f"{st} on {len(ss)} schema(s) ({', '.join(ss[:4])})" for st, ss in by.items()]
    if p["accepts_invalid"]:
        kws = f" (ignores {', '.join(p['ignored_keywords'])})" if p["ignored_keywords"] else ""
        out.append(f"lets invalid examples through on {len(p['accepts_invalid'])} schema(s){kws}")
    if p["rejects_valid"]:
        out.append(f"cannot produce valid examples of {len(p['rejects_valid'])} schema(s)")
    return out


def recommend(report: CompareReport) -> dict[str, Any]:
    """A recommendation for the report's registry: ``backend`` (or None), reasons, trade-offs.

    Returns ``{"backend", "reasons": [...], "tradeoffs": [...], "ranking": [profile, ...]}``;
    ``backend`` is None when no backend compiled a single schema.
    """
    summ = report.summary()
    profiles = [_profile(b, report, summ[b]) for b in report.backends if b in summ]
    ranking = rank(profiles)
    if not ranking or not any(p["coverage"] for p in ranking):
        return {
            "backend": None,
            "reasons": ["no backend compiled any schema: see each result's error"],
            "tradeoffs": [],
            "ranking": ranking,
        }
    best, others = ranking[0], ranking[1:]
    b = best["backend"]
    reasons: list[str] = []
    if best["tier"] == 0:
        reasons.append(
            f"{b} compiles all {best['schemas']} schema(s) and enforces every example walked "
            "(valid ones reach a stop, invalid ones are refused)"
        )
    else:
        reasons.append(
            f"no backend both compiles and enforces every schema; {b} comes closest: "
            + "; ".join(_problems(best))
        )
    comp_others = ", ".join(f"{o['backend']} {_fmt_ms(o['compile_p99_ms'])}" for o in others)
    reasons.append(
        f"compile p99 {_fmt_ms(best['compile_p99_ms'])}"
        + (f" (vs {comp_others})" if comp_others else "")
        + f"; mask p50 {_fmt_us(best['mask_p50_us'])}/token"
    )
    tradeoffs: list[str] = []
    for o in others:
        probs = _problems(o)
        if probs:
            tradeoffs.append(f"{o['backend']}: " + "; ".join(probs))
        faster_mask = (
            o["mask_p50_us"] is not None
            and best["mask_p50_us"] is not None
            and o["mask_p50_us"] * FASTER_RATIO < best["mask_p50_us"]
        )
        if faster_mask:
            ratio = best["mask_p50_us"] / max(o["mask_p50_us"], 1e-9)
            tradeoffs.append(
                f"{o['backend']} masks {ratio:.1f}x faster per token "
                f"({_fmt_us(o['mask_p50_us'])} vs {_fmt_us(best['mask_p50_us'])}); "
                + (
                    "worth it only with its gaps above covered (application validation)"
                    if probs
                    else f"its compile p99 {_fmt_ms(o['compile_p99_ms'])} is the price: "
                    "warm it at deploy (schemaops warm) if throughput matters more"
                )
            )
        elif not probs:
            tradeoffs.append(
                f"{o['backend']}: also covers and enforces everything, but compile p99 "
                f"{_fmt_ms(o['compile_p99_ms'])}, mask p50 {_fmt_us(o['mask_p50_us'])}/token"
            )
    slow_tail = [
        o
        for o in others
        if o["mask_p99_us"] is not None
        and best["mask_p99_us"] is not None
        and o["mask_p99_us"] * 10 < best["mask_p99_us"]
    ]
    if slow_tail:
        tradeoffs.append(
            f"{b}'s slowest tokens (mask p99 {_fmt_us(best['mask_p99_us'])}) are far slower "
            f"than {', '.join(o['backend'] for o in slow_tail)}'s "
            f"({', '.join(_fmt_us(o['mask_p99_us']) for o in slow_tail)}): usually the first "
            "tokens, where work deferred from compile is done; it adds to time-to-first-token"
        )
    if best["unchecked"]:
        tradeoffs.append(
            f"{len(best['unchecked'])} schema(s) have no examples, so enforcement is unchecked "
            "for them: add NAME.examples.json with valid and invalid instances"
        )
    return {"backend": b, "reasons": reasons, "tradeoffs": tradeoffs, "ranking": ranking}
