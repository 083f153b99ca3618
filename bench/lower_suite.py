"""``lower``'s exactness claims over the official suite and a JSONSchemaBench sample.

Every draft 2020-12 case of the JSON-Schema-Test-Suite (labelled instances) and a stratified
JSONSchemaBench sample (``--per-subset`` seeded draws per subset; instances generated with
hypothesis-jsonschema plus mutations), lowered on each backend's measured capabilities and
with every capability forced ``ignored`` and ``refused`` (all at once; per probe too with
``--each``, always for the suite), judged by ``schemaops.lower.oracle``: (served accepts AND
residual passes) == (original accepts), and every ``exact`` claim exact. Prints the counts
docs/findings.md keeps (``--json`` for the document). tests/test_lower_suite.py runs the
suite and a 30-schema sample in CI.

    python bench/lower_suite.py --per-subset 50
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from schemaops.compare.suite import suite_cases  # noqa: E402
from schemaops.lower import probe_backend  # noqa: E402
from schemaops.lower.oracle import Tally, instances_for, judge  # noqa: E402

CORPORA = REPO.parent / "shared" / "corpora"


def jsb_sample(corpus: Path, per_subset: int, seed: int) -> list[tuple[str, object]]:
    out = []
    for f in sorted(corpus.glob("*.jsonl")):
        lines = f.read_text(encoding="utf-8").splitlines()
        for line in random.Random(f"{seed}:{f.stem}").sample(lines, min(per_subset, len(lines))):
            row = json.loads(line)
            try:
                out.append((f"{f.stem}/{row.get('unique_id')}", json.loads(row["json_schema"])))
            except (ValueError, KeyError, TypeError):
                continue
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", type=Path, default=CORPORA / "json-schema-test-suite")
    ap.add_argument("--jsb", type=Path, default=CORPORA / "jsonschemabench")
    ap.add_argument("--per-subset", type=int, default=50)
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--backends", default="xgrammar,llguidance")
    ap.add_argument("--each", action="store_true", help="per-probe forcing on the sample too")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    caps = {b: probe_backend(b) for b in backends}
    t0 = time.perf_counter()
    suite = {b: Tally() for b in backends}
    for case in suite_cases(args.suite):
        for b in backends:
            judge(suite[b], case.name, case.schema, case.valid + case.invalid, caps[b], b)
    t_suite = time.perf_counter() - t0
    sample = {b: Tally() for b in backends}
    with_instances = 0
    rows = jsb_sample(args.jsb, args.per_subset, args.seed)
    for name, schema in rows:
        xs = instances_for(schema, n=5, mutants=10, max_time_s=2.0)
        with_instances += bool(xs)
        for b in backends:
            judge(sample[b], name, schema, xs, caps[b], b, each=args.each)
    doc = {
        "suite": {b: t.to_dict() for b, t in suite.items()},
        "suite_s": round(t_suite, 1),
        "jsb": {
            "per_subset": args.per_subset,
            "seed": args.seed,
            "schemas": len(rows),
            "with_instances": with_instances,
            "per_backend": {b: t.to_dict() for b, t in sample.items()},
        },
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    if args.json:
        print(json.dumps(doc, indent=2))
        return
    print(f"JSON-Schema-Test-Suite draft2020-12 ({t_suite:.0f} s)")
    for b, t in suite.items():
        d = t.to_dict()
        print(
            f"  {b}: {d['schemas']} cases, {d['lowerings']} lowerings, {d['instances']} "
            f"instances judged ({d['unjudgeable']} unjudgeable), labels {d['labels']}, "
            f"disagreements {d['disagreements']}"
        )
        for p in d["first"]:
            print(f"    {p}")
    print(
        f"JSONSchemaBench sample: {len(rows)} schemas ({args.per_subset} per subset, seed "
        f"{args.seed}), {with_instances} with generated instances"
    )
    for b, t in sample.items():
        d = t.to_dict()
        print(
            f"  {b}: {d['lowerings']} lowerings, {d['instances']} instances judged "
            f"({d['unjudgeable']} unjudgeable), labels {d['labels']}, "
            f"disagreements {d['disagreements']}"
        )
        for p in d["first"]:
            print(f"    {p}")
    print(f"wall {doc['wall_s']} s")


if __name__ == "__main__":
    main()
