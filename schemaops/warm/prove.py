"""Proof of warmth from latency alone.

SGLang 0.5.23 exports no grammar-cache metrics (the names exist in its code but are never
set), so the evidence is time: a request whose grammar is cached costs about what an
unconstrained 1-token request costs (``base_ms``), and a request that compiles costs that
plus the compile. After warming, each schema is sent once more (the *probe*); its latency is
compared with the first (*cold*) request and with the baseline.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Literal

Proof = Literal["hit", "miss", "suspect", "unproven"]

PROOF_ORDER: dict[str, int] = {"hit": 0, "unproven": 1, "suspect": 2, "miss": 3}

NOTES: dict[str, str] = {
    "hit": "probe clearly faster than the cold request: the probe found the compiled grammar",
    "miss": (
        "probe as slow as the cold request: it compiled again. The warm request reached a "
        "different cache (another DP replica, another worker behind a router), the key "
        "differs from what was warmed, or the entry was lost (restart, /flush_cache)"
    ),
    "suspect": (
        "probe faster than the cold request but not clearly so: part of the compile may have "
        "been paid again, or the server was busy; rerun, and check routing and load"
    ),
    "unproven": (
        "cold request no slower than an unconstrained one: the compile is too cheap to see, "
        "or the schema was already cached before this run (warmth cannot be shown by latency)"
    ),
}


@dataclass(frozen=True)
class ProofPolicy:
    """Thresholds for reading latencies.

    ``min_compile_ms``: how much slower than the baseline a cold request must be before a
    compile is considered visible (below it, jitter on a busy host dominates).
    ``hit_fraction``: a probe is a hit when it paid at most this fraction of the visible
    compile time; ``miss_fraction``: a miss when it paid at least this fraction.
    """

    min_compile_ms: float = 25.0
    hit_fraction: float = 0.5
    miss_fraction: float = 0.8


def baseline(samples_ms: list[float]) -> float:
    """The baseline latency: the median of a few unconstrained 1-token requests."""
    if not samples_ms:
        raise ValueError("no baseline samples")
    return float(statistics.median(samples_ms))


def verdict(
    cold_ms: float, probe_ms: float, base_ms: float, policy: ProofPolicy = ProofPolicy()
) -> Proof:
    """Classify one (cold, probe) pair against the server's baseline."""
    compile_ms = cold_ms - base_ms
    if compile_ms < max(policy.min_compile_ms, base_ms):
        return "unproven"
    paid = probe_ms - base_ms
    if paid <= policy.hit_fraction * compile_ms:
        return "hit"
    if paid >= policy.miss_fraction * compile_ms:
        return "miss"
    return "suspect"


def worst(proofs: list[str | None]) -> str | None:
    """The least reassuring proof among replicas (``None`` when nothing was probed)."""
    present = [p for p in proofs if p]
    return max(present, key=lambda p: PROOF_ORDER[p]) if present else None
