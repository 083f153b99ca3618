"""Harness overhead: per-token mask time as schemaops measures it vs a bare library loop.

Same process, same schema compiled cold on each side each round (llguidance builds lexer
states lazily, so a reused grammar would flatter whichever side came second), same token
ids, same bitmask, alternating rounds (schemaops first in even rounds, bare first in odd
ones) so drift on a shared machine and state a library keeps between compiles hit both alike. The
schemaops side is ``run_task`` (what ``measure`` runs inside its worker: protocol wrapper
objects, bitmask-bit check, detail bookkeeping); the bare side calls the library directly
with nothing but ``perf_counter_ns`` around the mask call. Prints, per backend, mean and p50
per-token mask µs of both and their ratio; the target is within 5% (ratio <= 1.05).
Two modes: ``cold`` (a fresh compile per round on each side: the figures ``measure``
reports) and ``warm`` (one compiled grammar shared by both sides: the loop alone).

    /work/venv/bin/python bench/harness_overhead.py [--rounds 11] [--reps 4] [--backends ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from schemaops.backends import BACKENDS  # noqa: E402
from schemaops.compare.core import make_backend, run_task  # noqa: E402
from schemaops.compare.enforce import walk  # noqa: E402
from schemaops.compare.instances import build_instances  # noqa: E402

# A tool-call shaped schema: nested object, enum, array, bounded integer, pattern.
SCHEMA = {
    "type": "object",
    "properties": {
        "tool": {"type": "string", "enum": ["search", "fetch", "calc"]},
        "query": {"type": "string", "minLength": 1},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50},
        "filters": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "field": {"type": "string"},
                    "op": {"type": "string", "enum": ["eq", "lt", "gt"]},
                    "value": {"type": "number"},
                },
                "required": ["field", "op", "value"],
            },
        },
        "lang": {"type": "string", "pattern": "^[a-z]{2}$"},
    },
    "required": ["tool", "query"],
}
INSTANCE = {
    "tool": "search",
    "query": "structured output reliability in LLM serving, grammar backends compared",
    "limit": 20,
    "filters": [
        {"field": "year", "op": "gt", "value": 2023},
        {"field": "score", "op": "lt", "value": 0.75},
    ],
    "lang": "en",
}


def bare_compile(name: str, backend: Any, text: str) -> Any:
    """A cold compile with the library's own calls (on the backend's tokenizer tables)."""
    if name == "xgrammar":
        return backend.compiler.compile_json_schema(text, any_whitespace=True)
    if name == "llguidance":
        import llguidance

        grammar = llguidance.LLMatcher.grammar_from_json_schema(text)
        return llguidance.LLMatcher(backend.lltok, grammar, log_level=0)
    import outlines_core
    from outlines_core.json_schema import build_regex_from_schema

    return outlines_core.Index(build_regex_from_schema(text), backend.vocabulary)


def bare_loop(name: str, raw: Any, ids: list[int], bitmask: Any) -> list[int]:
    """Per-token mask ns from the library's own objects, no schemaops code in the loop."""
    pc = time.perf_counter_ns
    out: list[int] = []
    if name == "xgrammar":
        import xgrammar as xgr

        m = xgr.GrammarMatcher(raw)
        for tid in ids:
            t0 = pc()
            m.fill_next_token_bitmask(bitmask, 0)
            out.append(pc() - t0)
            m.accept_token(tid)
        t0 = pc()
        m.fill_next_token_bitmask(bitmask, 0)
        out.append(pc() - t0)
    elif name == "llguidance":
        m = raw.deep_copy()
        ptr, nbytes = bitmask.ctypes.data, bitmask.nbytes
        for tid in ids:
            t0 = pc()
            m.unsafe_compute_mask_ptr(ptr, nbytes)
            out.append(pc() - t0)
            m.consume_token(tid)
        t0 = pc()
        m.unsafe_compute_mask_ptr(ptr, nbytes)
        out.append(pc() - t0)
    else:
        import outlines_core

        g = outlines_core.Guide(raw)
        ptr, size = bitmask.ctypes.data, bitmask.size
        for tid in ids:
            t0 = pc()
            g.write_mask_into(ptr, size, 4)
            out.append(pc() - t0)
            g.advance(tid, return_tokens=False)
        t0 = pc()
        g.write_mask_into(ptr, size, 4)
        out.append(pc() - t0)
    return out


def bench(name: str, rounds: int, reps: int) -> list[dict[str, Any]]:
    backend = make_backend(name, "qwen2.5")
    text = json.dumps(SCHEMA)
    ids = backend.tokenizer.encode(backend.serialize(INSTANCE), add_special_tokens=False)
    bitmask = backend.allocate_bitmask()
    instances = build_instances(SCHEMA, [INSTANCE] * reps)

    def ours() -> tuple[float, float]:
        res = run_task(backend, text, instances)
        assert res["enforcement"]["verdict"] == "enforced", res["enforcement"]
        return res["mask_us"]["mean"], res["mask_us"]["p50"]

    def bare() -> tuple[float, float]:
        raw = bare_compile(name, backend, text)  # fresh each round, like run_task's
        ns: list[int] = []
        for _ in range(reps):
            ns += bare_loop(name, raw, ids, bitmask)
        return _us(ns)

    row = _row(name, "cold", len(ids) + 1, _alternate(rounds, ours, bare))
    return [row, warm_bench(name, backend, text, ids, bitmask, rounds * reps)]


def _us(ns: list[int]) -> tuple[float, float]:
    """Mean and median of mask times in ns, in µs."""
    return statistics.fmean(ns) / 1000, statistics.median(ns) / 1000


def _alternate(
    rounds: int, ours: Callable[[], tuple[float, float]], bare: Callable[[], tuple[float, float]]
) -> dict[str, float]:
    """Both sides ``rounds`` times, alternating which goes first (a library may keep state
    across compiles); the median over rounds of each side's (mean, p50): robust to a noisy
    round."""
    got: dict[str, list[tuple[float, float]]] = {"ours": [], "bare": []}
    for k in range(rounds):
        for side in ("ours", "bare") if k % 2 == 0 else ("bare", "ours"):
            got[side].append(ours() if side == "ours" else bare())
    o, b = (statistics.median(m for m, _ in got[s]) for s in ("ours", "bare"))
    o50, b50 = (statistics.median(p for _, p in got[s]) for s in ("ours", "bare"))
    return {
        "schemaops_mean_us": o,
        "bare_mean_us": b,
        "ratio_mean": o / b,
        "schemaops_p50_us": o50,
        "bare_p50_us": b50,
        "ratio_p50": o50 / b50,
    }


def _row(name: str, mode: str, tokens: int, figures: dict[str, float]) -> dict[str, Any]:
    return {"backend": name, "mode": mode, "tokens": tokens, **figures}


def warm_bench(name: str, backend: Any, text: str, ids: list[int], bitmask: Any, n: int) -> dict:
    """Steady state: one compiled grammar, already walked once, shared by both sides.

    Isolates the harness loop itself (schemaops' ``walk`` vs the bare loop) from the
    variance of cold compiles (llguidance's lazily built lexer states differ run to run).
    """
    compiled = backend.compile(text)
    raw = {"xgrammar": "compiled", "llguidance": "proto", "outlines": "index"}[name]
    raw = getattr(compiled, raw)
    offsets = [(0, 0)] * len(ids)
    walk(compiled, bitmask, ids, offsets, backend.stop_token_id)

    def ours() -> tuple[float, float]:
        return _us(walk(compiled, bitmask, ids, offsets, backend.stop_token_id).mask_ns)

    def bare() -> tuple[float, float]:
        return _us(bare_loop(name, raw, ids, bitmask))

    return _row(name, "warm", len(ids) + 1, _alternate(n, ours, bare))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--reps", type=int, default=4, help="instance walks per round")
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = [row for n in args.backends.split(",") for row in bench(n, args.rounds, args.reps)]
    # JSON or a table: the shape of bench/warm.py's output, other figures
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(
            f"{'backend':11} {'mode':5} {'tokens':>6} {'schemaops µs':>13} {'bare µs':>9}"
            f" {'ratio':>6}"
            f" {'p50 ours':>9} {'p50 bare':>9} {'ratio':>6}"
        )
        for r in rows:
            print(
                f"{r['backend']:11} {r['mode']:5} {r['tokens']:6d} {r['schemaops_mean_us']:13.2f}"
                f" {r['bare_mean_us']:9.2f} {r['ratio_mean']:6.3f} {r['schemaops_p50_us']:9.2f}"
                f" {r['bare_p50_us']:9.2f} {r['ratio_p50']:6.3f}"
            )
    for mode in ("cold", "warm"):
        worst = max(max(r["ratio_mean"], r["ratio_p50"]) for r in rows if r["mode"] == mode)
        print(f"{mode}: worst ratio {worst:.3f} (target <= 1.05)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
