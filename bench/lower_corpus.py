"""``schemaops lower`` over JSONSchemaBench: which schemas lowering turns into ones a backend
compiles *and* enforces, which need a residual, and which cannot be helped (and why).

Usage::

    python bench/lower_corpus.py --per-subset 10 --backends xgrammar,llguidance
    python bench/lower_corpus.py --per-subset 3 --backends outlines --timeout 30

The corpus has no examples, so each sampled schema gets evidence first: valid instances
generated from it (hypothesis-jsonschema, known formats spelled as patterns) and invalid ones
made by mutating them (kept only when jsonschema rejects them). Then, per backend, the
original and the lowered schema are compiled and walked with ``compare``'s isolated workers
over the same instances (the lowered one over the invalid instances it can express; the
rest must be flagged by the residual). A served schema whose compile runs out of time or memory
climbs ``lower``'s relaxation ladder, one class of constraints to the residual per step, as
``lower`` does. A schema with no generated instance is ``unchecked``: without examples nothing
can be said about enforcement.

Outcomes: ``before``: the original's verdict (``enforced``, ``accepts_invalid``,
``rejects_valid``, ``unsupported``, ``failed``); ``unchanged``: lowering rewrote nothing;
``enforced already``: enforced before and after (``(lowered)``: the served form differs:
keywords the generated evidence did not exercise were rewritten or moved to the residual);
``helped``: not enforced before, compiled and enforced after (``exact``: no residual,
``residual``: with one, ``relaxed for compile``: only after ladder steps); ``still not
enforced``: neither; ``why``: the most common reasons lowering could not help.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from schemaops.compare import measure_many  # noqa: E402
from schemaops.compare.instances import validator  # noqa: E402
from schemaops.compare.run import iter_corpus  # noqa: E402
from schemaops.corpora import jsb_dir  # noqa: E402
from schemaops.lower import lower_schema, probe_backend  # noqa: E402
from schemaops.lower.passes import refine  # noqa: E402
from schemaops.lower.prove import generable, mutations  # noqa: E402
from schemaops.lower.relax import LADDER, reason, triggered  # noqa: E402
from schemaops.lower.residual import check_residual  # noqa: E402

DEFAULT_CORPUS = jsb_dir()  # schemaops.corpora: $SCHEMAOPS_CORPORA, ../shared, the cache


def sample(corpus: Path, per_subset: int, seed: int) -> list[tuple[str, str, Any]]:
    """(subset, name, schema) triples: ``per_subset`` seeded draws per subset file."""
    files = sorted(corpus.glob("*.jsonl"))
    if not files:
        raise SystemExit(f"no *.jsonl under {corpus}")
    out = []
    for f in files:
        items = list(iter_corpus(f))
        if per_subset < len(items):
            items = random.Random(f"{seed}:{f.stem}").sample(items, per_subset)
        for it in items:
            try:
                schema = json.loads(it.schema_text)
            except ValueError:
                continue
            out.append((f.stem, f"{f.stem}/{it.name}", schema))
    return out


def _ascii(x: Any) -> bool:
    """Printable-ASCII JSON text: hypothesis fills strings with control characters and rare
    code points, which backends' string grammars treat differently; that is not what lowering
    changes, so such instances are left out of the evidence (``compare`` reports them).

    The decoded strings (keys and values) are checked, not the JSON text: ``json.dumps``
    writes a control character as a printable ``\\u0017`` escape even with
    ``ensure_ascii=False``, which let such instances through as "ASCII"."""
    if isinstance(x, str):
        return all(" " <= ch <= "~" for ch in x)
    if isinstance(x, dict):
        return all(_ascii(k) and _ascii(v) for k, v in x.items())
    if isinstance(x, list):
        return all(_ascii(v) for v in x)
    return True


def evidence(schema: Any, n: int) -> tuple[list[Any], list[Any]]:
    """(valid, invalid) instances for a schema without examples (see module doc)."""
    from schemaops.compare.generate import GenerationError, generate_valid

    try:
        check = validator(schema)
        found = generate_valid(generable(schema), 3 * n, 3.0)
        valid = [x for x in found if check.is_valid(x) and _ascii(x)][:n]
    except (GenerationError, Exception, RecursionError):
        return [], []
    invalid: list[Any] = []
    seen: set[str] = set()
    for v in valid:
        for m in mutations(v, 30):
            key = json.dumps(m, sort_keys=True, default=str)
            if key in seen:
                continue
            seen.add(key)
            try:
                if not check.is_valid(m):
                    invalid.append(m)
            except Exception:
                continue
            if len(invalid) >= 3 * n:
                return valid, invalid
    return valid, invalid


def _verdict(r: dict[str, Any]) -> str:
    if r.get("status") != "ok":
        return "unsupported" if r.get("status") == "unsupported" else "failed"
    return str((r.get("enforcement") or {}).get("verdict"))


def _why(r: dict[str, Any]) -> str:
    v = _verdict(r)
    if v in ("unsupported", "failed"):
        err = str(r.get("error") or r.get("status") or "").strip().splitlines()
        return f"{r.get('status')}: {err[0][:70] if err else ''}"
    if v == "accepts_invalid":
        kws = sorted(k for k, c in (r["enforcement"].get("keywords") or {}).items() if c["ignored"])
        return f"accepts_invalid ({', '.join(kws)})"
    if v == "rejects_valid":
        enf = r["enforcement"]
        content = enf.get("rejects_valid_content") == enf.get("rejects_valid")
        return "rejects_valid (" + ("non-ASCII string content)" if content else "structure)")
    return v


def _lowered(
    row: dict[str, Any], caps: dict[str, str], backend: str, relax: dict[str, str] | None = None
) -> tuple[Any, list[Any], int]:
    """(lowered, the invalid instances the served schema rejects, how many of the others no
    residual rule flags)."""
    lw = lower_schema(row["schema"], caps, backend, relax)
    served_check = validator(lw.served)
    walked = [x for x in row["invalid"] if not served_check.is_valid(x)]
    left = [x for x in row["invalid"] if served_check.is_valid(x)]
    uncovered = sum(1 for x in left if check_residual(row["schema"], lw.residual, x).uncovered)
    return lw, walked, uncovered


def _item(tag: str, row: dict[str, Any], schema: Any, invalid: list[Any]) -> dict[str, Any]:
    """One ``measure_many`` item: ``o:`` the original, ``s:`` the served schema of ``row``."""
    return {"name": tag + row["name"], "schema": schema, "valid": row["valid"], "invalid": invalid}


def run(backend: str, rows: list[dict[str, Any]], timeout: float) -> dict[str, Any]:
    caps = probe_backend(backend)
    items, plan = [], []
    for row in rows:
        if not row["valid"]:
            plan.append(("unchecked", row, None))
            continue
        try:
            lw, walked, uncovered = _lowered(row, caps, backend)
        except (Exception, RecursionError) as exc:
            plan.append((f"lower error: {type(exc).__name__}", row, None))
            continue
        items.append(_item("o:", row, row["schema"], row["invalid"]))
        items.append(_item("s:", row, lw.served, walked))
        plan.append(("measured", row, (lw, uncovered)))
    t0 = time.perf_counter()
    results = {r["schema"]: r for r in measure_many(items, [backend], timeout_s=timeout)}
    # a compile error naming keywords the probes do not cover: lower again, as lower does
    row_caps: dict[str, dict[str, str]] = {}
    for _round in range(3):
        again = []
        for i, (kind, row, _extra) in enumerate(plan):
            r = results.get("s:" + row["name"]) if kind == "measured" else None
            if r is None or r.get("status") not in ("unsupported", "error"):
                continue
            refined = refine(row_caps.get(row["name"], caps), str(r.get("error") or ""))
            if refined is None:
                continue
            row_caps[row["name"]] = refined
            try:
                lw, walked, uncovered = _lowered(row, refined, backend)
            except (Exception, RecursionError):
                continue
            plan[i] = (kind, row, (lw, uncovered))
            again.append(_item("s:", row, lw.served, walked))
        if not again:
            break
        results.update({r["schema"]: r for r in measure_many(again, [backend], timeout_s=timeout)})
    # a served schema out of time or memory climbs lower's relaxation ladder, as lower does
    relax: dict[str, dict[str, str]] = {}
    climbed: dict[str, list[str]] = {}  # the steps that moved something, per schema
    for step in LADDER:
        again = []
        for i, (kind, row, extra) in enumerate(plan):
            r = results.get("s:" + row["name"]) if kind == "measured" else None
            if r is None or not triggered(r):
                continue
            steps = relax[row["name"]] = {
                **relax.get(row["name"], {}),
                step.key: reason(step, backend, r),
            }
            try:
                lw, walked, uncovered = _lowered(
                    row, row_caps.get(row["name"], caps), backend, steps
                )
            except (Exception, RecursionError):
                continue
            before = {rule.pointer for rule in extra[0].residual}
            if all(rule.pointer in before for rule in lw.residual):
                continue  # nothing of this class in the schema: no compile
            climbed.setdefault(row["name"], []).append(step.key)
            plan[i] = (kind, row, (lw, uncovered))
            again.append(_item("s:", row, lw.served, walked))
        if again:
            measured = measure_many(again, [backend], timeout_s=timeout)
            results.update({r["schema"]: r for r in measured})
    wall = time.perf_counter() - t0
    details = []
    before: Counter[str] = Counter()
    outcome: Counter[str] = Counter()
    why: Counter[str] = Counter()
    for kind, row, extra in plan:
        if kind != "measured":
            outcome[kind] += 1
            continue
        lw, uncovered = extra
        rb, ra = results["o:" + row["name"]], results["s:" + row["name"]]
        vb, va = _verdict(rb), _verdict(ra)
        before[vb] += 1
        details.append(
            {
                "schema": row["name"],
                "before": _why(rb),
                "after": _why(ra),
                "rewrites": sorted({r.rule for r in lw.rewrites if r.rule != "residual"}),
                "residual": sorted({r.keyword for r in lw.residual}),
                "relaxed": climbed.get(row["name"], []),
            }
        )
        if not lw.rewrites:
            # nothing to lower: the served schema is the original; a different verdict is
            # measurement noise (a compile near the timeout on a loaded machine), not help
            outcome["unchanged, " + ("enforced" if vb == "enforced" else "not enforced")] += 1
            if vb != "enforced":
                why[_why(rb)] += 1
        elif uncovered:
            outcome["residual misses"] += 1
            why["served lets through an invalid instance no residual rule covers"] += 1
        elif va == "enforced" and vb == "enforced":
            outcome["enforced already" + (" (lowered)" if lw.rewrites else "")] += 1
        elif va == "enforced" and climbed.get(row["name"]):
            outcome["helped, residual (relaxed for compile)"] += 1
        elif va == "enforced":
            outcome["helped, exact" if not lw.residual else "helped, residual"] += 1
        elif vb == "enforced":
            outcome["worse after lowering"] += 1
            why[_why(ra)] += 1
        else:
            outcome["still not enforced"] += 1
            why[_why(ra)] += 1
    return {
        "backend": backend,
        "schemas": len(rows),
        "before": dict(before),
        "outcome": dict(outcome),
        "why": dict(why.most_common(8)),
        "measure_wall_s": round(wall, 1),
        "residual_keywords": dict(
            Counter(k for d in details if d["after"] == "enforced" for k in d["residual"])
        ),
        "rewrites": dict(Counter(k for d in details for k in d["rewrites"])),
        "details": details,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--per-subset", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backends", default="xgrammar,llguidance")
    ap.add_argument("--generate", type=int, default=3, help="valid instances per schema")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = []
    for subset, name, schema in sample(args.corpus, args.per_subset, args.seed):
        valid, invalid = evidence(schema, args.generate)
        rows.append(
            {"subset": subset, "name": name, "schema": schema, "valid": valid, "invalid": invalid}
        )
    gen_s = time.perf_counter() - t0
    reports = [run(b.strip(), rows, args.timeout) for b in args.backends.split(",") if b.strip()]
    doc = {
        "per_subset": args.per_subset,
        "seed": args.seed,
        "generate_s": round(gen_s, 1),
        "with_evidence": sum(1 for r in rows if r["valid"]),
        "reports": reports,
    }
    if args.json:
        print(json.dumps(doc, indent=2))
        return
    print(
        f"{len(rows)} schemas ({args.per_subset} per subset, seed {args.seed}); "
        f"{doc['with_evidence']} with generated evidence ({gen_s:.0f} s)"
    )
    for r in reports:
        print(f"\n{r['backend']}: before {r['before']}")
        for k, v in sorted(r["outcome"].items(), key=lambda kv: -kv[1]):
            print(f"  {k:32} {v}")
        for k, v in r["why"].items():
            print(f"    why: {v} x {k}")
        print(f"  rewrites applied: {r['rewrites']}")
        print(f"  residual keywords (enforced after): {r['residual_keywords']}")


if __name__ == "__main__":
    main()
