"""Load and validate all of JSONSchemaBench through the registry; compare with a bare loop.

Baseline, measured in the same run on the same schemas: ``validator_for(s).check_schema(s)``
(jsonschema's own metaschema check, stopping at the first error). The registry does more
per schema (every metaschema error, draft detection, offline ``$ref`` resolution, ref-cycle
detection, depth and lone-surrogate checks, the wire hash), so the ratio says what that
extra safety costs. A second ratio: the registry's strict reading of schema text
(``jsontext.parse``: duplicate keys, lone surrogates, depth) against plain ``json.loads``.

    python bench/registry_load.py [--corpus DIR] [--limit N]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

import jsonschema.validators

from schemaops.registry import validate_schema_object
from schemaops.registry.jsontext import parse

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "corpora" / "jsonschemabench"


def corpus(root: Path, limit: int | None = None) -> list[tuple[str, object, str]]:
    """(subset/unique_id, parsed schema, schema text) for every line of every subset file."""
    out = []
    for f in sorted(root.glob("*.jsonl")):
        with f.open(encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                text = rec["json_schema"]
                out.append((f"{f.stem}/{rec['unique_id']}", json.loads(text), text))
    return out[:limit] if limit else out


def parse_ratio(schemas: list[tuple[str, object, str]]) -> tuple[float, float]:
    """Seconds for json.loads and for the registry's strict parse over every schema text."""
    texts = [t for _, _, t in schemas]
    t0 = time.perf_counter()
    for t in texts:
        json.loads(t)
    t1 = time.perf_counter()
    for t in texts:
        parse(t)
    return t1 - t0, time.perf_counter() - t1


def baseline(schemas: list[tuple[str, object, str]]) -> tuple[float, int]:
    """Seconds for the bare check_schema loop, and how many schemas it rejected."""
    bad = 0
    t0 = time.perf_counter()
    for _, s, _ in schemas:
        try:
            jsonschema.validators.validator_for(s).check_schema(s)
        except jsonschema.exceptions.SchemaError:
            bad += 1
    return time.perf_counter() - t0, bad


def registry(schemas: list[tuple[str, object, str]]) -> tuple[float, collections.Counter, int]:
    """Seconds for validate_schema_object over all, problem kinds, schemas with problems."""
    kinds: collections.Counter = collections.Counter()
    bad = 0
    t0 = time.perf_counter()
    for name, s, _ in schemas:
        problems = validate_schema_object(s, name=name.replace("/", "_"))
        if problems:
            bad += 1
            kinds.update({p["kind"] for p in problems})
    return time.perf_counter() - t0, kinds, bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT)
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args()
    schemas = corpus(args.corpus, args.limit)
    if not schemas:
        print(f"no schemas under {args.corpus}", file=sys.stderr)
        return 2
    n = len(schemas)
    # warm both paths once (metaschema validators are built lazily) so neither pays setup
    baseline(schemas[:50])
    registry(schemas[:50])
    tb, bad_b = baseline(schemas)
    tr, kinds, bad_r = registry(schemas)
    print(f"schemas: {n}")
    print(f"baseline check_schema loop: {tb:.2f} s, {n / tb:,.0f} schemas/s, {bad_b} rejected")
    rate = f"{n / tr:,.0f} schemas/s"
    print(f"registry load+validate:     {tr:.2f} s, {rate}, {n - bad_r} load, {bad_r} not")
    for kind, count in kinds.most_common():
        print(f"  {kind}: {count} schemas")
    print(f"ratio registry/baseline time: {tr / tb:.2f}x (throughput {tb / tr:.2f} of baseline)")
    tj, tp = parse_ratio(schemas)
    print(f"parse: json.loads {tj:.2f} s, strict parse {tp:.2f} s, ratio {tp / tj:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
