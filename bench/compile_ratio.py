"""compare's xgrammar compile_ms vs a bare library compile with the same configuration.

Same run, same schemas, same tokenizer, same xgrammar configuration (``max_threads``,
``cache_enabled=False``, ``any_whitespace=True``). The compare side is ``measure_many`` (a
reused worker process, as ``schemaops compare`` runs it; its compile_ms is timed inside the
worker around ``backend.compile``); the bare side builds ``TokenizerInfo`` and
``GrammarCompiler`` in this process and times ``compile_json_schema`` alone. Rounds alternate
which side goes first, so drift on a shared machine hits both alike. Prints, per schema, the
median compile ms of both sides, and overall the ratio of the sums of medians and the median
of per-schema ratios (target <= 1.1), with the host's CPUs (a multi-threaded compile's time
depends on them).

    .venv/bin/python bench/compile_ratio.py [--threads 8] [--rounds 5] [--registry schemas]
    .venv/bin/python bench/compile_ratio.py --corpus FILE.jsonl --limit 30
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from schemaops.compare.measure import measure_many  # noqa: E402
from schemaops.compare.run import corpus_items, host_cpus, registry_items  # noqa: E402


def bare_side(tokenizer: str, threads: int) -> Any:
    """A bare xgrammar compile function configured like ``XGrammarBackend``."""
    import xgrammar as xgr

    from schemaops.tokenizers import load_tokenizer

    tok = load_tokenizer(tokenizer)
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=len(tok))
    compiler = xgr.GrammarCompiler(info, max_threads=threads, cache_enabled=False)

    def compile_ms(text: str) -> float | None:
        t0 = time.perf_counter()
        try:
            compiler.compile_json_schema(text, any_whitespace=True)
        except RuntimeError:
            return None
        return (time.perf_counter() - t0) * 1000

    compile_ms('{"type":"object","properties":{"a":{"type":"string"}}}')  # as compare warms up
    return compile_ms


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=8, help="xgrammar max_threads (8)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--registry", type=Path, default=Path("schemas"))
    ap.add_argument("--corpus", type=Path, help="a JSONSchemaBench-style JSONL instead")
    ap.add_argument("--limit", type=int, default=30)
    ap.add_argument("--tokenizer", default="qwen2.5")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args(argv)

    items = corpus_items(args.corpus, args.limit) if args.corpus else registry_items(args.registry)
    items = items[: args.limit]
    payload = [{"name": it.name, "schema": it.schema_text} for it in items]
    bare = bare_side(args.tokenizer, args.threads)
    ours: dict[str, list[float]] = {it.name: [] for it in items}
    theirs: dict[str, list[float]] = {it.name: [] for it in items}

    def run_ours() -> None:
        for r in measure_many(
            payload, ["xgrammar"], args.tokenizer, compile_threads=args.threads, timeout_s=120
        ):
            if r["status"] == "ok" and r["compile_ms"] is not None:
                ours[r["schema"]].append(r["compile_ms"])

    def run_bare() -> None:
        for it in items:
            ms = bare(it.schema_text)
            if ms is not None:
                theirs[it.name].append(ms)

    for rnd in range(args.rounds):
        for side in (run_ours, run_bare) if rnd % 2 == 0 else (run_bare, run_ours):
            side()

    rows = []
    for it in items:
        a, b = ours[it.name], theirs[it.name]
        if a and b:
            rows.append((it.name, statistics.median(a), statistics.median(b)))
    if not rows:
        print("no schema compiled on both sides", file=sys.stderr)
        return 1
    ratio_sum = sum(r[1] for r in rows) / max(1e-9, sum(r[2] for r in rows))
    ratio_med = statistics.median(r[1] / max(1e-9, r[2]) for r in rows)
    host = host_cpus()
    doc = {
        "threads": args.threads,
        "rounds": args.rounds,
        "host": host,
        "schemas": len(rows),
        "ratio_of_sums": round(ratio_sum, 3),
        "median_ratio": round(ratio_med, 3),
        "per_schema": [
            {"schema": n, "compare_ms": round(a, 3), "bare_ms": round(b, 3)} for n, a, b in rows
        ],
    }
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    w = max(len(r[0]) for r in rows)
    print(f"{'schema':<{w}}  {'compare ms':>10}  {'bare ms':>9}  ratio")
    for n, a, b in rows:
        print(f"{n:<{w}}  {a:>10.2f}  {b:>9.2f}  {a / max(1e-9, b):.2f}")
    print(
        f"\nxgrammar max_threads={args.threads}, {args.rounds} rounds, host {host['cpus']} CPUs "
        f"({host['usable']} usable): compare/bare = {ratio_sum:.3f} (sums of medians), "
        f"{ratio_med:.3f} (median per-schema ratio); target <= 1.1"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
