"""Benchmark: does `schemaops warm` make first requests as fast as cached ones, and how fast
is it compared with a sequential curl loop (the warm-up of the SGLang case study in
docs/findings.md)? Real SGLang dev server, real xgrammar.

(a) First request per schema: on a cold server (after /flush_cache), after `schemaops warm`,
    and cached (the request right after). Target: after warm, the median first request
    within 1.2x of the cached median, and the worst within 1.5x of the cached worst.
(b) Warm wall time: the curl loop (one real `curl` process per schema, sequential, no
    checks) against `schemaops warm` at concurrency 1, 2, 4, 8 over the same schemas
    (/flush_cache before each run). Reported: the engine's wall time (warm + probes, and
    --no-probe) and the CLI process's wall time, and the ratio curl/warm for each.

    python bench/warm.py                      # starts (and stops) a dev server
    python bench/warm.py --server URL --json  # an existing server

--engine vllm: (a) only, on the vLLM dev server (started and stopped unless --server). vLLM
has no /flush_cache, so "cold" uses schemas no request sent before (a fresh numbering each
run) and "after warm" another fresh set that `warm` compiled first; the requests are chat
completions with response_format, the path warm uses on vLLM (same key).

    python bench/warm.py --engine vllm --schemas 8 --props 120
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from schemaops.registry import load_registry
from schemaops.warm import WarmOptions, plan_from_registry, report, warm
from schemaops.warm.heavy import heavy_schema, write_heavy_registry
from schemaops.warm.measure import first_chat_ms, first_request_ms, flush_cache

REPO = Path(__file__).resolve().parents[1]


def _stats(xs: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(xs), 1),
        "max": round(max(xs), 1),
        "min": round(min(xs), 1),
    }


def _ratios(cold: list[float], after: list[float], cached: list[float]) -> dict[str, Any]:
    """First-request times cold, after warm-up and cached, and the ratios the target reads."""
    med_ratio = statistics.median(after) / statistics.median(cached)
    worst_ratio = max(after) / max(cached)
    return {
        "cold_first_ms": _stats(cold),
        "after_warm_first_ms": _stats(after),
        "cached_ms": _stats(cached),
        "median_ratio_after_vs_cached": round(med_ratio, 3),
        "worst_ratio_after_vs_cached": round(worst_ratio, 3),
        "cold_vs_cached_median": round(statistics.median(cold) / statistics.median(cached), 2),
        "target_met": med_ratio <= 1.2 and worst_ratio <= 1.5,
    }


def first_requests(url: str, texts: list[str]) -> tuple[list[float], list[float]]:
    """Per schema: the first request, then the same again (cached), back to back."""
    first, cached = [], []
    for t in texts:
        s1, a = first_request_ms(url, t)
        s2, b = first_request_ms(url, t)
        assert s1 == s2 == 200, (s1, s2)
        first.append(a)
        cached.append(b)
    return first, cached


def part_a(url: str, reg_dir: Path, texts: list[str], concurrency: int) -> dict[str, Any]:
    flush_cache(url)
    cold, cached_cold = first_requests(url, texts)
    flush_cache(url)
    items = plan_from_registry(load_registry(reg_dir))
    opts = WarmOptions(servers=[url], concurrency=concurrency)
    runs, wall = warm(items, opts)
    doc = report.document(items, runs, opts, wall)
    assert doc["ok"], doc["results"]
    after, cached = first_requests(url, texts)
    return {**_ratios(cold, after, cached), "warm_proof": doc["summary"]["proof"]}


def _fresh_registry(folder: Path, first: int, count: int, props: int) -> Path:
    """``count`` heavy schemas numbered from ``first`` (each number is a new cache key)."""
    folder.mkdir(parents=True)
    for i in range(first, first + count):
        (folder / f"heavy_{i}.json").write_text(json.dumps(heavy_schema(i, props)))
    return folder


def part_a_vllm(url: str, tmp: Path, count: int, props: int) -> dict[str, Any]:
    """(a) on vLLM: first request cold, after warm, and cached, in one run."""
    import random

    base = random.randrange(100, 10**6) * 1000  # numbers no earlier run used
    cold_reg = _fresh_registry(tmp / "cold", base, count, props)
    warm_reg = _fresh_registry(tmp / "warm", base + count, count, props)

    def firsts(reg: Path) -> tuple[list[float], list[float]]:
        """Per schema the first request, then the median of 3 cached ones right after it
        (one cached sample is at the mercy of whatever else shares the cores)."""
        first, cached = [], []
        for s in load_registry(reg):
            s1, a = first_chat_ms(url, s.bundled())
            again = [first_chat_ms(url, s.bundled()) for _ in range(3)]
            assert s1 == 200 and all(st == 200 for st, _ in again), (s1, again)
            first.append(a)
            cached.append(statistics.median(ms for _, ms in again))
        return first, cached

    cold, _ = firsts(cold_reg)
    items = plan_from_registry(load_registry(warm_reg), "openai")
    opts = WarmOptions(servers=[url], api="openai", concurrency=2, engine="vllm")
    runs, wall = warm(items, opts)
    doc = report.document(items, runs, opts, wall)
    assert doc["ok"], doc["results"]
    after, cached = firsts(warm_reg)
    return {
        **_ratios(cold, after, cached),
        "warm_wall_s": round(wall, 2),
        "load_average_1m": round(os.getloadavg()[0], 2),  # other work on the same cores
        "warm_proof": doc["summary"]["proof"],
    }


def main_vllm(a: argparse.Namespace) -> int:
    """``--engine vllm``: part (a) on the vLLM dev server."""
    srv = None
    if a.server is None:
        from schemaops.devserver.vllm import start_vllm_servers

        srv = start_vllm_servers(n=1)[0]
    url = (a.server or srv.url).rstrip("/")  # type: ignore[union-attr]
    try:
        with tempfile.TemporaryDirectory() as d:
            fa = part_a_vllm(url, Path(d), a.schemas, a.props)
    finally:
        if srv is not None:
            srv.stop()
    doc = {"engine": "vllm", "server": url, "schemas": a.schemas, "props_per_schema": a.props}
    doc["a_first_request"] = fa
    if a.json:
        print(json.dumps(doc, indent=2))
    else:
        print(
            f"(a) vLLM first request, ms (median/max): cold {fa['cold_first_ms']}, after warm "
            f"{fa['after_warm_first_ms']}, cached {fa['cached_ms']}"
        )
        print(
            f"    after-warm/cached: median {fa['median_ratio_after_vs_cached']}x (target 1.2), "
            f"worst {fa['worst_ratio_after_vs_cached']}x (target 1.5): "
            f"{'met' if fa['target_met'] else 'NOT met'}; cold/cached median "
            f"{fa['cold_vs_cached_median']}x"
        )
    return 0


def part_c(url: str, reg_dir: Path, n: int = 5) -> dict[str, Any]:
    """Cost of a byte variant: warm the compact text, then send ``json.dumps`` defaults.

    A variant is its own SGLang cache entry, but xgrammar's compiler keeps its own cache of
    sub-results, so the variant's compile may be far cheaper than a cold one.
    """
    flush_cache(url)
    schemas = list(load_registry(reg_dir))[:n]
    items = plan_from_registry(load_registry(reg_dir))[:n]
    opts = WarmOptions(servers=[url], probe=False)
    warm(items, opts)
    variant, cached = first_requests(url, [s.wire("openai") for s in schemas])
    return {"variant_first_ms": _stats(variant), "cached_ms": _stats(cached)}


def curl_loop(url: str, texts: list[str], tmp: Path) -> float:
    """The baseline warm-up: a sequential shell-style loop, one curl process per schema."""
    bodies = []
    for i, t in enumerate(texts):
        p = tmp / f"body_{i}.json"
        p.write_text(
            json.dumps({"text": "Hi", "sampling_params": {"max_new_tokens": 1, "json_schema": t}})
        )
        bodies.append(p)
    t0 = time.perf_counter()
    for p in bodies:
        subprocess.run(
            [
                "curl",
                "-s",
                "-o",
                "/dev/null",
                "-X",
                "POST",
                url + "/generate",
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                f"@{p}",
            ],
            check=True,
        )
    return time.perf_counter() - t0


def part_b(
    url: str, reg_dir: Path, texts: list[str], levels: list[int], tmp: Path
) -> dict[str, Any]:
    flush_cache(url)
    curl_s = curl_loop(url, texts, tmp)
    items = plan_from_registry(load_registry(reg_dir))
    rows = []
    for c in levels:
        row: dict[str, Any] = {"concurrency": c}
        for probe in (False, True):
            flush_cache(url)
            opts = WarmOptions(servers=[url], concurrency=c, probe=probe)
            runs, wall = warm(items, opts)
            assert report.document(items, runs, opts, wall)["ok"]
            key = "with_probe" if probe else "no_probe"
            row[f"{key}_s"] = round(wall, 3)
            row[f"ratio_curl_over_{key}"] = round(curl_s / wall, 2)
        flush_cache(url)
        t0 = time.perf_counter()
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "schemaops",
                "warm",
                "--server",
                url,
                "-r",
                str(reg_dir),
                "-c",
                str(c),
                "--no-probe",
                "--json",
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        row["cli_process_no_probe_s"] = round(time.perf_counter() - t0, 3)
        assert r.returncode == 0, r.stderr[-2000:]
        rows.append(row)
    best = max(rows, key=lambda r: r["ratio_curl_over_no_probe"])
    return {
        "curl_loop_s": round(curl_s, 3),
        "runs": rows,
        "best_concurrency": best["concurrency"],
        "best_ratio_curl_over_warm": best["ratio_curl_over_no_probe"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--server", help="existing server URL (default: start a dev server)")
    ap.add_argument("--schemas", type=int, default=20)
    ap.add_argument("--props", type=int, default=50, help="pattern properties per schema")
    ap.add_argument("--levels", default="1,2,4,8")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    ap.add_argument("--engine", choices=("sglang", "vllm"), default="sglang")
    a = ap.parse_args()
    if a.engine == "vllm":
        return main_vllm(a)
    if shutil.which("curl") is None:
        sys.exit("curl is needed for the baseline loop")
    srv = None
    if a.server is None:
        from schemaops.devserver import start_servers

        srv = start_servers(1)[0]
    url = (a.server or srv.url).rstrip("/")  # type: ignore[union-attr]
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            reg_dir = write_heavy_registry(tmp / "heavy", a.schemas, a.props)
            texts = [s.wire("native") for s in load_registry(reg_dir)]
            levels = [int(x) for x in a.levels.split(",")]
            doc = {
                "server": url,
                "schemas": a.schemas,
                "props_per_schema": a.props,
                "a_first_request": part_a(url, reg_dir, texts, concurrency=2),
                "b_warm_vs_curl": part_b(url, reg_dir, texts, levels, tmp),
                "c_byte_variant": part_c(url, reg_dir),
            }
    finally:
        if srv is not None:
            srv.stop()
    if a.json:
        print(json.dumps(doc, indent=2))
    else:
        fa, fb = doc["a_first_request"], doc["b_warm_vs_curl"]
        print(
            f"(a) first request, ms (median/max): cold {fa['cold_first_ms']}, after warm "
            f"{fa['after_warm_first_ms']}, cached {fa['cached_ms']}"
        )
        print(
            f"    after-warm/cached: median {fa['median_ratio_after_vs_cached']}x (target 1.2), "
            f"worst {fa['worst_ratio_after_vs_cached']}x (target 1.5): "
            f"{'met' if fa['target_met'] else 'NOT met'}"
        )
        print(
            f"(b) curl loop {fb['curl_loop_s']} s; best: concurrency {fb['best_concurrency']}, "
            f"{fb['best_ratio_curl_over_warm']}x faster"
        )
        for r in fb["runs"]:
            print(
                f"    c={r['concurrency']}: warm {r['no_probe_s']} s "
                f"({r['ratio_curl_over_no_probe']}x), with probes {r['with_probe_s']} s "
                f"({r['ratio_curl_over_with_probe']}x), CLI process {r['cli_process_no_probe_s']} s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
