"""An SGLang structured-output case study reproduced on a real server: tool calls constrained
vs prompt only, and the first-request TTFT spike (cold vs cached grammar compile).

The case study (published, source not identified: see docs/findings.md) compared prompt-only
and constrained tool calls ("case 4") and reported first requests after a deploy raising P99
TTFT; this script measures both on the server it is given.

1. N tool-call prompts over the shipped registry, each sent twice to ``/generate``: prompt only,
   and with ``sampling_params.json_schema`` = ``Schema.wire("native")`` (the exact string an
   application sends). Both runs are saved as JSONL in SGLang's response format (plus
   ``id``, ``schema``, ``run``) and audited with ``schemaops audit --json``. The constrained run
   must have 0 parse failures and 0 violations; the unconstrained one is whatever a random
   model writes (the contrast is the point).
2. Compile-heavy schemas (``schemaops.warm.heavy``: dozens of properties, each with its own
   pattern), each made unique to this run: the first request (cold: the grammar compiles)
   against the second (cached), ``max_new_tokens: 1``, one at a time. Prints p50/p99 of both.

Usage: ``python bench/ttft_case_study.py [--server URL] [--n 40] [--out out/ttft_case_study]``.
Exit 1 when the constrained run has any parse failure or violation.

Measured (2026-11, dev server, xgrammar 0.2.7, 40 prompts over all 9 shipped schemas,
temperature 1): unconstrained 0/40 ok; constrained 28/40 ok, 0 violations. The constrained
failures are real, not noise: 7 runs hit ``max_new_tokens`` inside an unbounded string (a
random model rarely closes one), and 5 carry a raw control character (TAB, U+0001: invalid
JSON per RFC 8259) inside a string with ``minLength``/``maxLength``, which xgrammar admits
while plain strings do not. An earlier run also saw ``format: date-time`` admit an
impossible date (Nov 31) that jsonschema's checker rejects.
Without ``--server`` it starts a dev server (``--constrained-json-disable-any-whitespace``:
with free whitespace a random model never finishes a value) and stops it at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from schemaops.registry import load_registry
from schemaops.warm.heavy import heavy_schema

REPO = Path(__file__).resolve().parents[1]
REQUESTS = [
    "Where is order ORD-20481234? It was due last week.",
    "Please refund me, the blender arrived broken.",
    "Cancel my subscription at the end of the month.",
    "I need to change the email on my account.",
    "Can someone call me back tomorrow morning?",
    "Show me all my orders that were shipped.",
    "How do I reset my password?",
    "I was charged twice for the same order!",
]


def chatml(system: str, user: str) -> str:
    """The tiny model's chat template, applied by hand (``/generate`` takes raw text)."""
    return (
        f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def server_rejects(url: str, registry_dir: Path) -> dict[str, str]:
    """Registry schemas the server refuses to compile (name -> error), by a 1-token request.

    xgrammar refuses keywords it would otherwise ignore (e.g. ``uniqueItems``): such a tool
    cannot be constrained on this server at all, so it is left out of both runs and reported.
    """
    rejected = {}
    with httpx.Client(base_url=url, timeout=600) as client:
        for schema in load_registry(registry_dir):
            params = {"max_new_tokens": 1, "json_schema": schema.wire("native")}
            resp = client.post("/generate", json={"text": "x", "sampling_params": params})
            if resp.status_code != 200:
                rejected[schema.name] = resp.json().get("error", {}).get("message", resp.text)
    return rejected


def make_prompts(registry_dir: Path, n: int, skip: set[str]) -> list[dict[str, Any]]:
    """``n`` tool-call requests cycling over the registry's schemas and a few user messages."""
    schemas = [s for s in load_registry(registry_dir) if s.name not in skip]
    prompts = []
    for i in range(n):
        schema = schemas[i % len(schemas)]
        system = (
            f"You are a support agent. Call the tool `{schema.name}` "
            f"({schema.description or schema.name}). Reply with its JSON arguments only."
        )
        user = REQUESTS[(i // len(schemas)) % len(REQUESTS)]
        prompts.append(
            {
                "id": f"p{i:03d}",
                "schema": schema.name,
                "text": chatml(system, user),
                "wire": schema.wire("native"),
            }
        )
    return prompts


async def run_batch(
    url: str,
    prompts: list[dict[str, Any]],
    constrained: bool,
    max_new_tokens: int,
    conc: int,
    temperature: float,
) -> list[dict[str, Any]]:
    """Send every prompt (``conc`` at a time); return SGLang's responses with id/schema/run."""
    sem = asyncio.Semaphore(conc)
    run = "constrained" if constrained else "unconstrained"

    async def one(client: httpx.AsyncClient, p: dict[str, Any]) -> dict[str, Any]:
        params: dict[str, Any] = {"max_new_tokens": max_new_tokens, "temperature": temperature}
        if constrained:
            params["json_schema"] = p["wire"]
        async with sem:
            resp = await client.post(
                "/generate", json={"text": p["text"], "sampling_params": params}
            )
        body = resp.json()
        if resp.status_code != 200:
            raise RuntimeError(f"{p['id']} ({p['schema']}): HTTP {resp.status_code}: {body}")
        return {"id": f"{run}-{p['id']}", "schema": p["schema"], "run": run, **body}

    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        return await asyncio.gather(*(one(client, p) for p in prompts))


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def audit(path: Path, registry_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``schemaops audit FILE --registry DIR --json --records`` (the CLI, as a user runs it).

    Returns the summary document and the records that are not ``ok``.
    """
    records = path.with_suffix(".audit.jsonl")
    cmd = [sys.executable, "-m", "schemaops", "audit", str(path), "--registry", str(registry_dir)]
    cmd += ["--json", "--records", str(records)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"audit failed ({proc.returncode}): {proc.stderr[-2000:]}")
    bad = [r for r in map(json.loads, records.open()) if r.get("category") != "ok"]
    return json.loads(proc.stdout), bad


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile (exact for small samples: p99 of 20 is the maximum)."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


def cold_vs_cached(url: str, count: int, n_props: int) -> dict[str, Any]:
    """First (compile) vs second (cached) request latency per compile-heavy schema, in ms."""
    # Patterns unique to this run: xgrammar reuses work for sub-patterns it has compiled
    # before, so re-sending last run's patterns under a new key would not be cold.
    base = random.SystemRandom().randrange(1000, 10**6) * 100
    cold, cached = [], []
    with httpx.Client(base_url=url, timeout=600) as client:
        for i in range(count):
            schema = heavy_schema(base + i, n_props)
            wire = json.dumps(schema, separators=(",", ":"))
            for bucket in (cold, cached):
                body = {"text": "x", "sampling_params": {"max_new_tokens": 1, "json_schema": wire}}
                t0 = time.perf_counter()
                resp = client.post("/generate", json=body)
                bucket.append((time.perf_counter() - t0) * 1000)
                if resp.status_code != 200:
                    raise RuntimeError(f"heavy schema {i}: HTTP {resp.status_code}: {resp.text}")

    def dist(xs: list[float]) -> dict[str, float]:
        return {
            "p50": round(pct(xs, 50), 1),
            "p99": round(pct(xs, 99), 1),
            "mean": round(statistics.fmean(xs), 1),
        }

    ratio = round(pct(cold, 50) / pct(cached, 50), 1)
    return {
        "schemas": count,
        "properties": n_props,
        "cold_ms": dist(cold),
        "cached_ms": dist(cached),
        "ratio_p50": ratio,
    }


def summarise(doc: dict[str, Any]) -> dict[str, Any]:
    cats = doc.get("categories", {})
    violations = sum(v for k, v in cats.items() if k.startswith("schema_violation"))
    return {
        "total": doc.get("total"),
        "ok": doc.get("ok"),
        "p": doc.get("p"),
        "parse_failures": sum(doc.get("parse_failures", {}).values()),
        "parse_failure_subtypes": doc.get("parse_failures", {}),
        "violations": violations,
        "input_errors": doc.get("input_errors"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", help="base URL of a running SGLang (default: start a dev server)")
    ap.add_argument("--grammar-backend", default="xgrammar", help="for the dev server it starts")
    ap.add_argument("--registry", type=Path, default=REPO / "schemas")
    ap.add_argument("--n", type=int, default=40, help="prompts per run")
    ap.add_argument("--max-new-tokens", type=int, default=512)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument(
        "--temperature",
        type=float,
        default=1.0,
        help="sampling: diverse outputs exercise more grammar",
    )
    ap.add_argument("--heavy", type=int, default=20, help="compile-heavy schemas")
    ap.add_argument("--props", type=int, default=50, help="properties per heavy schema")
    ap.add_argument("--out", type=Path, default=REPO / "out" / "ttft_case_study")
    args = ap.parse_args(argv)

    servers = []
    url = args.server
    if not url:
        from schemaops.devserver import start_servers

        print("starting a dev server ...", file=sys.stderr)
        servers = start_servers(
            1, grammar_backend=args.grammar_backend, disable_any_whitespace=True
        )
        url = servers[0].url
    try:
        rejected = server_rejects(url, args.registry)
        prompts = make_prompts(args.registry, args.n, set(rejected))
        result: dict[str, Any] = {"server": url, "prompts": args.n, "rejected_schemas": rejected}
        for constrained in (False, True):
            run = "constrained" if constrained else "unconstrained"
            t0 = time.perf_counter()
            records = asyncio.run(
                run_batch(
                    url,
                    prompts,
                    constrained,
                    args.max_new_tokens,
                    args.concurrency,
                    args.temperature,
                )
            )
            path = args.out / f"{run}.jsonl"
            write_jsonl(path, records)
            lengths = sum(1 for r in records if r["meta_info"]["finish_reason"]["type"] == "length")
            doc, bad = audit(path, args.registry)
            result[run] = {
                "file": str(path),
                "seconds": round(time.perf_counter() - t0, 1),
                "hit_max_new_tokens": lengths,
                "audit": summarise(doc),
            }
            if constrained:
                # Under a grammar every failure is a finding: say which schema, what, where.
                finish = {
                    f"{run}-{p['id']}": r["meta_info"]["finish_reason"]["type"]
                    for p, r in zip(prompts, records, strict=True)
                }
                result[run]["failures"] = [
                    {
                        "id": b.get("id"),
                        "schema": b.get("schema"),
                        "finish": finish.get(b.get("id")),
                        "category": b["category"],
                        "subtype": b.get("subtype"),
                        "path": b.get("path"),
                        "message": (b.get("message") or "")[:160],
                    }
                    for b in bad
                ]
        result["cold_vs_cached"] = cold_vs_cached(url, args.heavy, args.props)
    finally:
        for s in servers:
            s.stop()
    (args.out / "summary.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    c, u = result["constrained"]["audit"], result["unconstrained"]["audit"]
    cv = result["cold_vs_cached"]
    for f in result["constrained"]["failures"]:
        print(f"constrained failure: {f}", file=sys.stderr)
    for name, err in rejected.items():
        print(f"left out: the server rejects {name}: {err}", file=sys.stderr)
    print(
        f"\nunconstrained: {u['ok']}/{u['total']} ok, {u['parse_failures']} parse failures, "
        f"{u['violations']} violations\nconstrained:   {c['ok']}/{c['total']} ok, "
        f"{c['parse_failures']} parse failures, {c['violations']} violations\n"
        f"first request per schema (cold) p50 {cv['cold_ms']['p50']} ms p99 "
        f"{cv['cold_ms']['p99']} ms; second (cached) p50 {cv['cached_ms']['p50']} ms p99 "
        f"{cv['cached_ms']['p99']} ms; cold/cached at p50 = {cv['ratio_p50']}x",
        file=sys.stderr,
    )
    return 0 if c["parse_failures"] == 0 and c["violations"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
