"""What cutting the table of failing locations costs (``stats.trimmed``), against picking
half of it by count on every overflow (``most_common``, before 2026-12-05).

    python bench/audit_paths_table.py [--failures 600000] [--rounds 3]

A platform audit (issue 36's (b): 9,435 schemas, ~600,000 failures) sees most failing
locations once, so the bounded table (``PATHS_CAP``) overflows again and again. Both ways
count the same failures into a fresh ``Tally`` in this process, alternating, best of
``--rounds`` in process CPU time; the locations are seeded and do not repeat in pattern
(random array indices under random schema names), as on that workload."""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter

from schemaops.audit.tally import stats
from schemaops.audit.verdict.classify import Classification


def by_count(paths: Counter) -> Counter:
    """The cut before: the ``PATHS_CAP // 2`` most frequent, whatever they are."""
    return Counter(dict(paths.most_common(stats.PATHS_CAP // 2)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--failures", type=int, default=600_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    n = args.failures
    outcomes = [
        Classification("schema_violation:type", None, f"/items/{rng.randrange(400_000)}", "m")
        for _ in range(n)
    ]
    names = [f"schema_{rng.randrange(9_435)}" for _ in range(n)]
    today = stats.trimmed
    best: dict[str, float] = {}
    try:
        for _ in range(args.rounds):
            for label, cut in (("most_common", by_count), ("trimmed", today)):
                stats.trimmed = cut  # Tally.add_failure looks it up at each overflow
                tally = stats.Tally()
                t0 = time.process_time()
                for name, outcome in zip(names, outcomes, strict=True):
                    tally.add_failure(name, outcome)
                best[label] = min(best.get(label, float("inf")), time.process_time() - t0)
    finally:
        stats.trimmed = today
    print(f"{n:,} failures counted, best of {args.rounds} rounds (CPU s):")
    for label, t in best.items():
        print(f"  {label:<12} {t:6.3f} s  {t / n * 1e6:5.2f} us a failure")
    print(f"  trimmed / most_common: {best['trimmed'] / best['most_common']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
