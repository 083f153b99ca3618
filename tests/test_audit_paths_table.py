"""The report's failing locations (``paths``) come from a table bounded at ``PATHS_CAP``
entries (memory flat in the line count). On a platform registry most locations are seen once
(an array index, a property name); the table is cut back by dropping those first
(``stats.trimmed``), so the locations seen again keep their exact counts through any number of
cuts, in one process and across a merge of workers' tallies."""

from __future__ import annotations

from schemaops.audit.tally.stats import PATHS_CAP, Tally, trimmed
from schemaops.audit.verdict.classify import Classification

REPEATED = [f"/items/{k}/id" for k in range(3)]


def _fail(tally: Tally, path: str) -> None:
    tally.add_failure("orders", Classification("schema_violation:type", None, path, "x"))


def _churn(tally: Tally, tag: str, n: int) -> None:
    """``n`` locations seen once, the ``REPEATED`` ones each twice up front and once every
    1,000 failures after (so each is seen again between any two cuts)."""
    for p in REPEATED:
        _fail(tally, p)
        _fail(tally, p)
    for i in range(n):
        _fail(tally, f"/{tag}/{i}")
        if i % 1000 == 0:
            for p in REPEATED:
                _fail(tally, p)


def _counts(tally: Tally) -> dict[str, int]:
    return {p: k for (_, _, p), k in tally.paths.items() if p in REPEATED}


def test_locations_seen_again_keep_exact_counts_through_every_cut() -> None:
    tally = Tally()
    n = 5 * PATHS_CAP  # several cuts
    _churn(tally, "once", n)
    assert len(tally.paths) <= PATHS_CAP
    want = 2 + (n + 999) // 1000
    assert _counts(tally) == {p: want for p in REPEATED}
    assert tally.categories["schema_violation:type"] == n + len(REPEATED) * want


def test_a_merge_of_two_full_tables_keeps_them_too() -> None:
    a, b = Tally(), Tally()
    _churn(a, "a", PATHS_CAP - 10)
    _churn(b, "b", PATHS_CAP - 10)
    a.merge(b)
    assert len(a.paths) <= PATHS_CAP
    want = 2 * (2 + (PATHS_CAP - 10 + 999) // 1000)
    assert _counts(a) == {p: want for p in REPEATED}


def test_more_repeated_locations_than_half_the_cap_keep_the_most_frequent() -> None:
    from collections import Counter

    table = Counter({("s", "c", f"/{i}"): 2 + i for i in range(PATHS_CAP + 1)})
    cut = trimmed(table)
    assert len(cut) == PATHS_CAP // 2
    assert min(cut.values()) == 2 + PATHS_CAP + 1 - PATHS_CAP // 2


def test_the_cut_keeps_what_most_common_keeps_ties_included() -> None:
    """Over half the cap repeated, the cut keeps exactly ``Counter.most_common``'s choice, in
    its order, ties by first insertion (the sort that stands for it is stable): tables with
    many equal counts, seeded."""
    import random
    from collections import Counter

    rng = random.Random(36)
    for _ in range(20):
        table = Counter()
        for i in range(PATHS_CAP + 1):
            table[("s", "c", f"/{rng.randrange(4 * PATHS_CAP)}/{i}")] = rng.choice([1, 2, 2, 3, 9])
        repeated = Counter({k: v for k, v in table.items() if v > 1})
        want = list(repeated.most_common(PATHS_CAP // 2))
        assert list(trimmed(table).items()) == want
