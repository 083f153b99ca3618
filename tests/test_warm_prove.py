"""Latency verdicts of the proof of warmth."""

from __future__ import annotations

from schemaops.warm.prove import ProofPolicy, baseline, verdict, worst


def test_compile_heavy_schema_then_fast_probe_is_a_hit() -> None:
    # A compile-heavy schema: cold far above the baseline, the probe near it (docs/findings.md).
    assert verdict(cold_ms=600, probe_ms=12, base_ms=10) == "hit"


def test_probe_paying_the_compile_again_is_a_miss() -> None:
    assert verdict(cold_ms=600, probe_ms=590, base_ms=10) == "miss"
    assert verdict(cold_ms=600, probe_ms=700, base_ms=10) == "miss"


def test_in_between_is_suspect() -> None:
    assert verdict(cold_ms=600, probe_ms=400, base_ms=10) == "suspect"


def test_cheap_or_already_cached_compile_is_unproven() -> None:
    assert verdict(cold_ms=14, probe_ms=12, base_ms=10) == "unproven"
    # below the absolute floor even though it is 2x the baseline
    assert (
        verdict(cold_ms=30, probe_ms=10, base_ms=10, policy=ProofPolicy(min_compile_ms=25))
        == "unproven"
    )


def test_baseline_is_the_median_and_worst_orders_proofs() -> None:
    assert baseline([9.0, 30.0, 10.0]) == 10.0
    assert worst(["hit", "unproven", None]) == "unproven"
    assert worst(["hit", "miss", "suspect"]) == "miss"
    assert worst([None]) is None
