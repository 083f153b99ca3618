"""The registry's metaschema check on every JSONSchemaBench schema: the first-use cost per schema.

Issue 24: ``drafts.metaschema_problems`` was about a third of a cold audit. This times it once
per corpus schema (each schema is met once, as on a cold cache) after one warm-up call per
draft (the per-draft validators are built once per process and timed apart), and counts how
often the fast path answered. Run it against another checkout with ``PYTHONPATH`` to compare:

    PYTHONPATH=$PWD .venv/bin/python bench/meta_check.py [--corpus DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def corpus_schemas(root: Path) -> list[tuple[Any, str]]:
    """(schema, draft label) of every JSONSchemaBench schema that parses and names a draft."""
    from schemaops.registry.drafts import UnknownDraft, draft_label

    out = []
    for f in sorted(root.glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            try:
                value = json.loads(json.loads(line)["json_schema"])
                label = draft_label(value.get("$schema") if isinstance(value, dict) else None)
            except (ValueError, KeyError, AttributeError, UnknownDraft):
                continue
            out.append((value, label))
    return out


def main(argv: list[str] | None = None) -> int:
    from schemaops import corpora
    from schemaops.registry import drafts

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, help="JSONSchemaBench's folder of <Subset>.jsonl")
    ap.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = ap.parse_args(argv)
    root = args.corpus or corpora.locate().jsb
    if root is None or not Path(root).is_dir():
        print("JSONSchemaBench not found (scripts/get_corpora.py, or --corpus)", file=sys.stderr)
        return 2
    schemas = corpus_schemas(Path(root))
    clock = time.perf_counter
    t0 = clock()
    for label in sorted({label for _, label in schemas}):
        drafts.metaschema_problems({}, label)  # builds the draft's validators
    setup = clock() - t0
    total, fast, refused, deep = 0.0, 0, 0, 0
    for schema, label in schemas:
        t = clock()
        try:
            problems = drafts.metaschema_problems(schema, label)
        except RecursionError:
            deep += 1
            continue
        total += clock() - t
        refused += bool(problems)
        fast += drafts.meta_valid(schema, label)
    n = len(schemas)
    figures = {
        "schemas": n,
        "validators built (s, once per draft)": round(setup, 3),
        "metaschema check total (s)": round(total, 3),
        "per schema (ms)": round(total / max(n, 1) * 1000, 4),
        "fast path answered": fast,
        "with problems": refused,
        "RecursionError": deep,
    }
    for k, v in figures.items():
        print(f"{k:40} {v}")
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
