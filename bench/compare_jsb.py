"""Backends over JSONSchemaBench: coverage and compile/mask percentiles per backend and subset.

Usage::

    python bench/compare_jsb.py                      # 100 schemas per subset (10 subsets)
    python bench/compare_jsb.py --per-subset 5 -j 2  # a quick smoke run
    python bench/compare_jsb.py --all                # all 9,557 schemas (hours)

A stratified sample: the same number of schemas drawn (seeded) from every subset, because the
subsets differ by orders of magnitude in difficulty (Github_trivial vs Kubernetes) and the
whole-corpus mix is dominated by the Github subsets. Every compile runs in an isolated
worker with a timeout and a memory cap (``schemaops.compare.measure_many``), so one schema
that hangs or crashes a backend is reported as ``timeout``/``crash`` and the run finishes.

The baseline printed next to our figures is MaskBench's published median compile times over
~11k real schemas (llguidance ~1 ms, outlines ~0.6 s, xgrammar ~0.9 s). Those were measured
on other hardware with other versions and a different tokenizer; the ratio says whether this
machine and these versions look like that picture, not who is "right".
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from schemaops.compare.report import backend_summary  # noqa: E402
from schemaops.compare.run import BACKENDS, Item, iter_corpus, measure_items  # noqa: E402
from schemaops.corpora import jsb_dir  # noqa: E402

DEFAULT_CORPUS = jsb_dir()  # schemaops.corpora: $SCHEMAOPS_CORPORA, ../shared, the cache
# MaskBench (guidance-ai/jsonschemabench maskbench, ~11k schemas): median compile time, ms.
MASKBENCH_MEDIAN_COMPILE_MS = {"llguidance": 1.0, "outlines": 600.0, "xgrammar": 900.0}


def sample(corpus: Path, per_subset: int | None, seed: int) -> list[tuple[str, Item]]:
    """(subset, item) pairs: ``per_subset`` seeded draws per subset file, or all when None."""
    files = sorted(corpus.glob("*.jsonl"))
    if not files:
        raise SystemExit(f"no *.jsonl under {corpus}")
    out: list[tuple[str, Item]] = []
    for f in files:
        items = list(iter_corpus(f))
        if per_subset is not None and per_subset < len(items):
            items = random.Random(f"{seed}:{f.stem}").sample(items, per_subset)
        # unique names across subsets (ids are unique per subset only)
        out += [(f.stem, Item(f"{f.stem}/{it.name}", it.schema_text)) for it in items]
    return out


def _f(x: float | None, nd: int = 1) -> str:
    return "-" if x is None else f"{x:,.{nd}f}"


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for j, r in enumerate(rows):
        lines.append(
            "  ".join(
                c.ljust(w) if i < 2 else c.rjust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def summarise(results: list[dict[str, Any]], subset_of: dict[str, str], backends: list[str]) -> str:
    head = [
        "backend",
        "subset",
        "n",
        "coverage",
        "compile p50 ms",
        "p90",
        "p99",
        "mask p50 µs",
        "mask p99 µs",
        "not ok",
    ]
    rows = [head]
    subsets = sorted(set(subset_of.values()))
    for b in backends:
        rb = [r for r in results if r.get("backend") == b]
        for sub in [*subsets, "ALL"]:
            rs = rb if sub == "ALL" else [r for r in rb if subset_of.get(r["schema"]) == sub]
            s = backend_summary(rs)
            bad = " ".join(f"{k}={v}" for k, v in s["status"].items() if k != "ok") or "-"
            rows.append(
                [
                    b,
                    sub,
                    str(s["schemas"]),
                    f"{s['coverage']:.0%}" if s["coverage"] is not None else "-",
                    _f(s["compile_ms"]["p50"], 2),
                    _f(s["compile_ms"]["p90"]),
                    _f(s["compile_ms"]["p99"]),
                    _f(s["mask_us"]["p50"]),
                    _f(s["mask_us"]["p99"]),
                    bad,
                ]
            )
    return table(rows)


def versus_maskbench(results: list[dict[str, Any]], backends: list[str]) -> str:
    rows = [
        [
            "backend",
            "",
            "coverage",
            "median compile ms (here)",
            "MaskBench median ms",
            "ratio here/MaskBench",
        ]
    ]
    for b in backends:
        s = backend_summary([r for r in results if r.get("backend") == b])
        med, ref = s["compile_ms"]["p50"], MASKBENCH_MEDIAN_COMPILE_MS[b]
        rows.append(
            [
                b,
                "",
                f"{s['coverage']:.0%}" if s["coverage"] is not None else "-",
                _f(med, 2),
                _f(ref),
                "-" if med is None else f"{med / ref:.2f}x",
            ]
        )
    return table(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--per-subset", type=int, default=100, help="schemas per subset (100)")
    g.add_argument("--all", action="store_true", help="the whole corpus")
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--tokenizer", default="qwen2.5")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per schema+backend")
    ap.add_argument("--mem-mb", type=int, default=4096)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    # argparse lines look like ttft_case_study.py's: each benchmark its own flags
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--generate",
        type=int,
        default=1,
        help="generated valid instances per schema to walk (mask figures need one; 0: none)",
    )
    ap.add_argument("--json", type=Path, help="also write every result to this file")
    a = ap.parse_args(argv)
    backends = [b.strip() for b in a.backends.split(",") if b.strip()]

    picked = sample(a.corpus, None if a.all else a.per_subset, a.seed)
    subset_of = {it.name: sub for sub, it in picked}
    print(
        f"{len(picked)} schemas from {len(set(subset_of.values()))} subsets; backends "
        f"{','.join(backends)}; tokenizer {a.tokenizer}; timeout {a.timeout:g} s; "
        f"mem {a.mem_mb} MiB; jobs {a.jobs}; generate {a.generate}",
        file=sys.stderr,
    )
    done = {"n": 0}
    total = len(picked) * len(backends)

    def progress(*args: Any, **kwargs: Any) -> None:
        done["n"] += 1
        if done["n"] % 25 == 0 or done["n"] == total:
            print(f"  {done['n']}/{total} measured", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    results = measure_items(
        [it for _, it in picked],
        backends,
        a.tokenizer,
        jobs=a.jobs,
        timeout_s=a.timeout,
        mem_mb=a.mem_mb,
        progress=progress,
        generate=a.generate,
    )
    wall = time.perf_counter() - t0
    print(summarise(results, subset_of, backends))
    print()
    print(versus_maskbench(results, backends))
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(
        f"\nwall {wall:.1f} s for {total} schema x backend measurements; jobs {a.jobs}, "
        f"{os.cpu_count()} CPUs, load average {load[0]:.1f}"
        if load
        else f"\nwall {wall:.1f} s for {total} schema x backend measurements"
    )
    print(
        f"coverage counts a compile over --timeout ({a.timeout:g} s) as not covered; "
        "MaskBench medians come from other hardware and versions (context, not a target)"
    )
    if a.json:
        a.json.write_text(json.dumps({"results": results, "subset_of": subset_of}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
