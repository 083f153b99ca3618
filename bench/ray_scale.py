"""``compare`` (and ``audit``) on Ray: local vs 1 vs 2 Ray workers, ratios in one run (issue 12).

Usage::

    python bench/ray_scale.py --quick          # 2 schemas per subset (20), one round
    python bench/ray_scale.py                  # 10 per subset (100), best of 2 rounds
    python bench/ray_scale.py --per-subset 30 --rounds 3 --no-audit

Input: a seeded, stratified JSONSchemaBench sample (the same number of schemas from each of
the 10 subsets, as ``bench/compare_jsb.py`` draws it), backends xgrammar and llguidance,
``--generate 1`` (compare's default for a corpus), ``--compile-threads 1`` so that one task
uses one core (with xgrammar's default 8 threads a single worker already spreads over every
core and there is nothing left for a second worker to scale into).

Measured in one run, interleaved round by round (the machine is shared), each in a fresh
process and the best of ``--rounds``:

- ``local``: ``run_compare(..., jobs=1)``: schemaops' own pool with one worker process;
- ``local2``: the same with ``jobs=2``: what two processes of schemaops' own pool gain on
  this host under the same load (for comparison, not a ceiling: it schedules differently);
- ``ray1`` / ``ray2``: ``run_compare(..., ray=...)`` on a fresh local Ray with 1, then 2,
  worker CPUs (``ray.init(num_cpus=N)``; starting Ray is not timed, since a deployment
  starts its cluster once; starting Ray's worker processes and our isolated workers inside
  them is, as it is for ``local``).

Ratios: scaling efficiency = (t_ray1 / t_ray2) / 2 (target >= 0.85); the overhead of Ray with
one worker = t_ray1 / t_local - 1 (target <= 10 %). The results of the three runs are
checked equal (timings aside) before any figure is printed. Two workers need two free cores:
on a 2-core machine the driver, Ray's own processes and everything else running share them
with the workers, so 2-worker figures there are a floor, not the scaling of a real node.

From the per-worker rate it sizes the full JSONSchemaBench (9,557 schemas) x the measured
backends on N nodes. The sample over-represents the hard subsets (equal draws from each),
so that estimate errs on the slow side.

The ``audit`` half lives in ``bench/ray_scale_audit.py`` (its ``run(quick)``), called at the
end when that file exists.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from schemaops.corpora import jsb_dir

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

JSB = jsb_dir()  # schemaops.corpora: $SCHEMAOPS_CORPORA, ../shared, the cache
JSB_SCHEMAS = 9_557
BACKENDS = "xgrammar,llguidance"
TIMINGS = {"compile_ms", "mask_us", "advance_us"}
TARGET_EFFICIENCY = 0.85
TARGET_OVERHEAD = 0.10
NODE_CPUS = 16  # the estimate's node: an ordinary 16-core machine
SEED = 12


def make_sample(per_subset: int, seed: int = SEED) -> Path:
    """A stratified sample of JSONSchemaBench (written once under the bench cache)."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    out = root / "schemaops" / "bench" / "ray_compare" / f"jsb-{per_subset}-{seed}.jsonl"
    if out.exists():
        return out
    rng = random.Random(seed)
    lines: list[str] = []
    for sub in sorted(JSB.glob("*.jsonl")):
        with sub.open() as f:
            rows = [line for line in f if line.strip()]
        lines += rng.sample(rows, min(per_subset, len(rows)))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text("".join(lines))
    tmp.replace(out)
    return out


def _one(corpus: str, workers: int, backends: str) -> dict[str, Any]:
    """One measured compare in this (fresh) process: 0 workers = local, -2 = local -j 2,
    else Ray with that many worker CPUs."""
    from schemaops.compare.run import run_compare

    ray_address = None
    jobs = 2 if workers == -2 else 1
    if workers > 0:
        import ray

        ray.init(
            num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level="error"
        )
        ray_address = "local"  # connect() finds this process's Ray already running
    t0 = time.perf_counter()
    doc = run_compare(
        corpus=corpus, backends=backends, jobs=jobs, compile_threads=1, ray=ray_address
    ).to_dict()
    wall = time.perf_counter() - t0
    results = [{k: v for k, v in r.items() if k not in TIMINGS} for r in doc["results"]]
    return {"wall_s": wall, "results": results, "ray": doc["settings"].get("ray")}


def measure(corpus: Path, workers: int, backends: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [sys.executable, __file__, "--one", str(corpus), "--workers", str(workers)]
    out = subprocess.run(
        [*args, "--backends", backends], capture_output=True, text=True, env=env, check=False
    )
    if out.returncode != 0:
        raise RuntimeError(f"run with {workers} Ray workers failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _budget_hit(res: dict[str, Any]) -> bool:
    """Whether a result depends on a wall-clock budget (instance generation's 10 s, the
    compile ``--timeout``): under load such a result can differ between any two runs."""
    errs = " ".join(res.get("instance_errors") or [])
    return "stopped after" in errs or res.get("status") == "timeout"


def check_equal(best: dict[str, dict[str, Any]]) -> list[str]:
    """Every run's results equal the local run's (timings aside). A difference where either
    side hit a wall-clock budget is load, not Ray: listed and tolerated; any other is fatal."""
    tolerated: list[str] = []
    base = best["local"]["results"]
    for k in ("local2", "ray1", "ray2"):
        other = best[k]["results"]
        if [(r["schema"], r["backend"]) for r in other] != [
            (r["schema"], r["backend"]) for r in base
        ]:
            raise RuntimeError(f"{k}: not the same (schema, backend) pairs as local")
        for a, b in zip(base, other, strict=True):
            if a == b:
                continue
            keys = sorted(x for x in a if a.get(x) != b.get(x))
            what = f"{k} {a['schema']} {a['backend']}: {keys}"
            if _budget_hit(a) or _budget_hit(b):
                tolerated.append(what + " (a wall-clock budget was hit)")
                continue
            detail = {x: (str(a.get(x))[:300], str(b.get(x))[:300]) for x in keys}
            raise RuntimeError(f"{what} differ from local: {detail}")
    return tolerated


def estimate(per_worker_tasks_s: float, efficiency: float, n_backends: int) -> list[dict]:
    """The full corpus x backends on N nodes of NODE_CPUS workers, at the measured
    per-worker rate and scaling efficiency (capped at 1)."""
    eff = min(efficiency, 1.0)
    tasks = JSB_SCHEMAS * n_backends
    return [
        {
            "nodes": nodes,
            "workers": NODE_CPUS * nodes,
            "hours": tasks / (per_worker_tasks_s * NODE_CPUS * nodes * eff) / 3600,
        }
        for nodes in (1, 4, 16)
    ]


def run(quick: bool = False, per_subset: int | None = None, rounds: int | None = None,
        backends: str = BACKENDS) -> dict[str, Any]:  # fmt: skip
    """Measure local, Ray 1 worker and Ray 2 workers; print the table; return the figures."""
    per_subset = per_subset or (2 if quick else 10)
    rounds = rounds or (1 if quick else 2)
    corpus = make_sample(per_subset)
    best: dict[str, dict[str, Any]] = {}
    for _ in range(rounds):  # interleaved, so a busy spell hits all three alike
        for name, workers in (("local", 0), ("local2", -2), ("ray1", 1), ("ray2", 2)):
            m = measure(corpus, workers, backends)
            if name not in best or m["wall_s"] < best[name]["wall_s"]:
                best[name] = m
    budget_hits = check_equal(best)
    t = {k: v["wall_s"] for k, v in best.items()}
    tasks = len(best["local"]["results"])
    efficiency = (t["ray1"] / t["ray2"]) / 2
    host_efficiency = (t["local"] / t["local2"]) / 2  # schemaops' own pool, same host
    overhead = t["ray1"] / t["local"] - 1
    per_worker = tasks / t["ray1"]
    statuses: dict[str, int] = {}
    for r in best["local"]["results"]:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    result = {
        "schemas": tasks // len(backends.split(",")),
        "backends": backends,
        "tasks": tasks,
        "statuses": statuses,
        "rounds": rounds,
        "quick": quick,
        "cpus": os.cpu_count(),
        "wall_s": t,
        "tasks_per_s": {k: tasks / v for k, v in t.items()},
        "scaling_efficiency": efficiency,
        "efficiency_target": TARGET_EFFICIENCY,
        "local_j2_efficiency": host_efficiency,
        "ray1_overhead": overhead,
        "overhead_target": TARGET_OVERHEAD,
        "per_worker_tasks_per_s": per_worker,
        "full_jsb": estimate(per_worker, efficiency, len(backends.split(","))),
        "results_equal": not budget_hits,
        "budget_dependent": budget_hits,
    }
    print_table(result)
    return result


def print_table(r: dict[str, Any]) -> None:
    print(
        f"compare on Ray: {r['schemas']} JSONSchemaBench schemas x {r['backends']} "
        f"({r['tasks']} tasks; {r['statuses']}), best of {r['rounds']}, {r['cpus']} host CPUs"
        f"{' (quick)' if r['quick'] else ''}"
    )
    print(f"{'run':<8}{'wall s':>9}{'tasks/s':>10}")
    for k, v in r["wall_s"].items():
        print(f"{k:<8}{v:>9.2f}{r['tasks_per_s'][k]:>10.2f}")
    eff, ovh = r["scaling_efficiency"], r["ray1_overhead"]
    print(
        f"scaling efficiency 2 vs 1 worker: {eff:.2f} (target >= {r['efficiency_target']}:"
        f" {'met' if eff >= r['efficiency_target'] else 'NOT met'})"
    )
    print(
        f"  for comparison, schemaops' own pool on this host, -j 2 vs -j 1: "
        f"{r['local_j2_efficiency']:.2f} (the same cores and load, its own scheduling)"
    )
    print(
        f"overhead of Ray, 1 worker vs local: {ovh:+.1%} (target <= {r['overhead_target']:.0%}:"
        f" {'met' if ovh <= r['overhead_target'] else 'NOT met'})"
    )
    print(f"results equal (local, local2, ray1, ray2; timings aside): {r['results_equal']}")
    for line in r["budget_dependent"]:
        print(f"  differs only where a wall-clock budget was hit (load, not Ray): {line}")
    print(
        f"full JSONSchemaBench ({JSB_SCHEMAS:,} schemas) x {r['backends']} at "
        f"{r['per_worker_tasks_per_s']:.2f} tasks/s per worker:"
    )
    for e in r["full_jsb"]:
        print(f"  {e['nodes']:>3} nodes x {NODE_CPUS} workers: {e['hours']:.2f} h")


# ---- audit (issue 12 part 2) ------------------------------------------------------------
# bench/ray_scale_audit.py is written with the audit side; its run(quick) measures audit over
# shards on the same local / 1 / 2 worker plan and prints its own table.
def audit_section(quick: bool) -> dict[str, Any] | None:
    path = Path(__file__).with_name("ray_scale_audit.py")
    if not path.exists():
        print("audit: bench/ray_scale_audit.py not present; skipped")
        return None
    spec = importlib.util.spec_from_file_location("ray_scale_audit", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.run(quick=quick)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 schemas per subset, one round")
    ap.add_argument("--per-subset", type=int)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--backends", default=BACKENDS)
    ap.add_argument("--no-audit", action="store_true", help="only the compare half")
    ap.add_argument("--json", action="store_true", help="also print the figures as JSON")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--workers", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(_one(args.one, args.workers, args.backends)))
        return
    out = {"compare": run(args.quick, args.per_subset, args.rounds, args.backends)}
    if not args.no_audit:
        print()
        out["audit"] = audit_section(args.quick)
    if args.json:
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
