"""``lower`` over the official JSON-Schema-Test-Suite (draft 2020-12) and a stratified
JSONSchemaBench sample, on xgrammar's and llguidance's measured capabilities (outlines on
half the suite) and with every capability forced ``ignored`` and ``refused`` in turn (issue
23, item 4).

For each labelled instance (the suite) or generated instance and its mutations (the bench
sample): ``(served accepts AND residual passes) == (original accepts)``, and every ``exact``
claim holds exactly (``schemaops.lower.oracle``). The passes are pure Python: this checks
the model, not the backends (the enforcement walk does that). CI runs every suite case and a
small bench sample (about a minute on 2 cores); ``python bench/lower_suite.py`` runs the
full sample and prints the counts docs/findings.md keeps.
"""

from __future__ import annotations

import json
import random

import pytest
from corpus_paths import JSB, JSTS

from schemaops.compare.suite import suite_cases
from schemaops.lower import probe_backend
from schemaops.lower.oracle import Tally, judge

BACKENDS = ("xgrammar", "llguidance")


@pytest.mark.slow(reason="every suite case under ~20 capability variants, two backends")
@pytest.mark.corpus("json-schema-test-suite@pinned")  # counts the pinned suite's cases
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_official_suite_agrees(backend: str) -> None:
    if not JSTS.is_dir():
        pytest.fail(f"corpus not found: {JSTS}")
    caps = probe_backend(backend)
    tally = Tally()
    for case in suite_cases(JSTS):
        judge(tally, case.name, case.schema, case.valid + case.invalid, caps, backend)
    assert tally.schemas >= 350 and tally.instances >= 10_000, tally.to_dict()
    # the forced variants reach the rewriting paths: widenings and exact rewrites both occur
    assert tally.labels.get("relaxed", 0) > 1000 and tally.labels.get("exact", 0) > 1000
    assert not tally.problems, tally.to_dict()


def jsb_sample(per_subset: int, seed: int) -> list[tuple[str, object]]:
    """``per_subset`` seeded draws from each JSONSchemaBench subset (stratified)."""
    if not JSB.is_dir():
        pytest.fail(f"corpus not found: {JSB}")
    out = []
    for f in sorted(JSB.glob("*.jsonl")):
        lines = f.read_text(encoding="utf-8").splitlines()
        for line in random.Random(f"{seed}:{f.stem}").sample(lines, min(per_subset, len(lines))):
            row = json.loads(line)
            text = row["json_schema"]
            out.append((f"{f.stem}/{row.get('unique_id')}", json.loads(text)))
    return out


@pytest.mark.slow(reason="hypothesis generation for the sample")
@pytest.mark.corpus("jsonschemabench")
def test_a_jsonschemabench_sample_agrees() -> None:
    from schemaops.lower.oracle import instances_for

    tally = {b: Tally() for b in BACKENDS}
    caps = {b: probe_backend(b) for b in BACKENDS}
    with_instances = 0
    for name, schema in jsb_sample(3, seed=23):
        xs = instances_for(schema, n=3, mutants=8, max_time_s=1.5)
        with_instances += bool(xs)
        for b in BACKENDS:
            judge(tally[b], name, schema, xs, caps[b], b, each=False)
    assert with_instances >= 15, with_instances  # evidence, not an empty pass
    for b in BACKENDS:
        assert not tally[b].problems, tally[b].to_dict()


@pytest.mark.slow(reason="half the suite cases on outlines' capabilities")
@pytest.mark.corpus("json-schema-test-suite@pinned")  # counts the pinned suite's cases
def test_half_the_official_suite_agrees_on_outlines() -> None:
    """outlines on a smaller sample (every other case): its probes are the costly ones, and
    test_lower_e2e has measured them already in a CI run (the probe cache)."""
    caps = probe_backend("outlines")
    tally = Tally()
    for i, case in enumerate(suite_cases(JSTS)):
        if i % 2 == 0:
            judge(tally, case.name, case.schema, case.valid + case.invalid, caps, "outlines")
    assert tally.schemas >= 170 and tally.instances >= 5_000, tally.to_dict()
    assert not tally.problems, tally.to_dict()
