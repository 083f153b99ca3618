"""What explaining one failure costs, jsonschema-rs's locator on and off (issue 36).

    python bench/audit_explain_cost.py WORKDIR [--schemas 800] [--rounds 3] [--by-kind]

``WORKDIR`` holds ``outputs.jsonl`` and ``registry/`` (the many-schema workload that
``audit_many_schemas.py --build-only --workdir WORKDIR`` writes, or any file of records with a
``schema`` and a ``text`` beside a registry folder). In one process: ``--schemas`` registry
schemas (seeded sample) are set up through the audit's own resolver, every distinct output of
theirs that jsonschema-rs refuses is parsed once, and the checker classifies all of them
with ``rsexplain`` (jsonschema-rs locates the ``best_match``) and without it (``jsonschema``
walks the failing part, the closure tree skipping what is valid), alternating, best of
``--rounds`` in process CPU time. The two classifications of every output are compared
first (a difference is printed and the exit code is 1). Then jsonschema-rs's own list of
every error of the located outputs, each error's kind and path read: the part of an exact
explanation no Python code can make cheaper. ``--by-kind``: the same per
(category, path depth), each output timed alone.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import orjson


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("workdir", type=Path)
    ap.add_argument("--schemas", type=int, default=800)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--by-kind", action="store_true")
    args = ap.parse_args()
    from schemaops.audit.verdict.classify import parse_output
    from schemaops.audit.verdict.resolver import SchemaResolver

    by: dict = defaultdict(list)
    with open(args.workdir / "outputs.jsonl", "rb") as fh:
        for line in fh:
            rec = orjson.loads(line)
            by[rec.get("schema")].append(rec.get("text"))
    names = sorted(n for n in by if n)
    names = random.Random(36).sample(names, min(args.schemas, len(names)))
    res = SchemaResolver(None, args.workdir / "registry", cache_dir=tempfile.mkdtemp())
    items = []
    for name in names:
        try:
            checker = res.get(name)
            fast = checker.fast
        except Exception:  # noqa: BLE001 (a schema the registry refuses: not timed)
            continue
        for text in dict.fromkeys(by[name]):
            value, failure = parse_output(text)
            if failure is None and not (fast and fast(value)):
                items.append((checker, value))
    saved = {id(c): c._rs for c, _ in items}

    def switch(c, on: bool) -> None:
        c._rs = saved[id(c)] if on else None

    differ = 0
    for c, v in items:
        switch(c, True)
        a = c.check(v)
        switch(c, False)
        b = c.check(v)
        differ += a.settled() != b.settled()  # a lazily worded message, written
    located = sum(saved[id(c)] is not None for c, _ in items)
    print(f"{len(items):,} failing outputs of {len(names)} schemas, {located:,} locatable")
    print(f"classifications differing: {differ}")
    best = {True: float("inf"), False: float("inf")}
    for _ in range(args.rounds):
        for on in (False, True):
            for c, _ in items:
                switch(c, on)
            t = time.process_time()
            for c, v in items:
                c.check(v)
            best[on] = min(best[on], time.process_time() - t)
    n = max(len(items), 1)
    print(
        f"jsonschema explains {best[False] / n * 1e6:.1f} µs a failure, located by jsonschema-rs"
        f" {best[True] / n * 1e6:.1f} µs: {best[False] / best[True]:.2f}x"
        f" (process CPU, best of {args.rounds})"
    )
    # the native part of any exact explanation: jsonschema-rs's own list of every error of
    # a located output (``best_match`` ranks them all), and reading each one's kind and path
    native = [(saved[id(c)], v) for c, v in items if saved[id(c)] is not None]
    if native:
        least = float("inf")
        for _ in range(args.rounds):
            t = time.process_time()
            for validator, v in native:
                [(e.kind, e.instance_path) for e in validator.iter_errors(v)]
            least = min(least, time.process_time() - t)
        print(
            f"jsonschema-rs lists every error (kind and path read) {least / len(native) * 1e6:.1f}"
            f" µs a located failure: the native floor under the {best[True] / n * 1e6:.1f} µs"
        )
    if args.by_kind:
        clock = time.perf_counter
        agg: dict = defaultdict(lambda: [0, 0.0, 0.0])
        for c, v in items:
            if saved[id(c)] is None:
                continue
            switch(c, True)
            got = c.check(v)
            key = (got.category, got.path.count("/") if got.path is not None else -1)
            times = []
            for on in (False, True, False, True):
                switch(c, on)
                t = clock()
                c.check(v)
                times.append(clock() - t)
            row = agg[key]
            row[0] += 1
            row[1] += min(times[0], times[2])
            row[2] += min(times[1], times[3])
        for key, (k, old, new) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:12]:
            print(f"  {key}: {k} outputs, {old / k * 1e6:.0f} -> {new / k * 1e6:.0f} µs,"
                  f" {old / new:.2f}x")  # fmt: skip
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
