"""Compile time of a tool set vs its tool count, per backend and tool_choice mode (issue 35).

What is compiled: the JSON schema SGLang 0.5.23 and vLLM 0.32.0 derive from a ``tools`` array
(``schemaops/engines/tool_schema.py``, sources cited there): ``required``, an array of an
``anyOf`` over every tool (the name an ``enum``, the parameters the tool's own); named, one
tool's derivation (SGLang: the same array with the one tool; vLLM: the parameters alone). Where
the two engines derive the same text (``required`` for tools without ``$defs``) it is compiled
once and reported for both. ``auto``: the structural tag each engine builds with the Qwen2.5
tool parser (``schemaops/engines/structural_tags.py``; SGLang's legacy tag on xgrammar and
llguidance, vLLM's hermes tag on xgrammar only; neither engine compiles tags with outlines),
arguments held to the parameters (strict level 2), compiled in ``toolset_tags.py``'s child.

The tools: JSONSchemaBench object schemas (default the ``Glaiveai2K`` subset, the
function-calling one; ``schemaops.corpora`` finds the corpus), without ``$ref``, shuffled by
``--seed`` and kept when every backend compiles them alone (outlines only for the tools of
the sizes it runs: one outlines compile is seconds). Each size gets its own tools, so no two
tool sets share a tool (1 + 2 + ... + 256 = 511 tools).

The baseline, measured in the same run by the same workers: each tool's ``parameters``
compiled alone (that compile is also the screening). A tool set's ratio is set / sum (what it
costs against compiling the tools one by one) and set / max (against the largest tool).

No cache: every compile is cold (xgrammar ``cache_enabled=False``; llguidance and outlines
keep none across grammars), in ``schemaops.compare``'s isolated workers, each compile bounded
by ``--timeout`` (reported ``timeout``, and that backend and mode skip larger sizes).
``--budget-s`` bounds the whole run: what is left is ``skipped``. Per-token mask cost: the
walk of one valid call to the set's last tool (hypothesis-jsonschema arguments).

    .venv/bin/python bench/toolset_compile.py [--json] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from toolset_tags import STRICT_LEVEL, TagWorker  # noqa: E402

from schemaops import corpora  # noqa: E402
from schemaops.compare.measure import measure  # noqa: E402
from schemaops.compare.run import host_cpus  # noqa: E402
from schemaops.engines.tool_schema import derive  # noqa: E402
from schemaops.registry.model import canonical_text  # noqa: E402

FULL_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
QUICK_SIZES = (1, 2, 4)
_NAME = re.compile(r"[^A-Za-z0-9_-]")


def candidates(subsets: list[str], seed: int) -> list[dict]:
    """Object schemas with properties and no ``$ref`` as tools, shuffled by ``seed``."""
    root = corpora.locate().jsb
    if root is None:
        raise SystemExit("JSONSchemaBench not found: run python scripts/get_corpora.py")
    out, seen = [], set()
    for sub in subsets:
        with (root / f"{sub}.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                text = rec["json_schema"]
                if "$ref" in text:
                    continue
                schema = json.loads(text)
                props = schema.get("properties") if isinstance(schema, dict) else None
                if schema.get("type") != "object" or not isinstance(props, dict) or not props:
                    continue
                name = _NAME.sub("_", rec["unique_id"])[:64]
                if name in seen:
                    continue
                seen.add(name)
                out.append({"name": name, "source": f"{sub}/{rec['unique_id']}", "params": schema})
    random.Random(seed).shuffle(out)
    return out


def request_tools(tools: list[dict]) -> list[dict]:
    """The request's ``tools`` array (OpenAI function tools)."""
    return [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": f"JSONSchemaBench {t['source']}",
                "parameters": t["params"],
            },
        }
        for t in tools
    ]


class Runner:
    """Compiles through ``measure`` (one reused isolated worker per backend), counting every
    compile and bounding the run by ``budget_s``."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.t0 = time.monotonic()
        self.compiles: dict[str, int] = {}
        self.tag_workers: dict[str, TagWorker] = {}

    def out_of_time(self) -> bool:
        return time.monotonic() - self.t0 > self.args.budget_s

    def compile(self, text: str, backend: str, timeout: float, valid: list | None = None) -> dict:
        self.compiles[backend] = self.compiles.get(backend, 0) + 1
        r = measure(
            text,
            backend,
            self.args.tokenizer,
            valid=valid or [],
            timeout_s=timeout,
            compile_threads=self.args.threads,
        )
        return r

    def compile_tag(self, task: dict, backend: str, timeout: float) -> dict:
        """A structural tag (``toolset_tags``), counted with the backend's compiles."""
        self.compiles[backend] = self.compiles.get(backend, 0) + 1
        if backend not in self.tag_workers:
            self.tag_workers[backend] = TagWorker(backend, self.args.tokenizer, self.args.threads)
        return self.tag_workers[backend].run(task, timeout)

    def close(self) -> None:
        for w in self.tag_workers.values():
            w.close()


def screen(run: Runner, pool: Any, size: int, backends: list[str], stats: dict) -> list[dict]:
    """The next ``size`` candidates of ``pool`` that every backend compiles alone (outlines
    only while ``size <= --outlines-max-tools``); those single compiles are the baseline,
    measured just before the tool set they belong to, so load drift hits both alike."""
    accepted: list[dict] = []
    for cand in pool:
        if run.out_of_time():
            break
        stats["screened"] += 1
        text = canonical_text(cand["params"])
        singles: dict[str, float] = {}
        for b in backends:
            if b == "outlines" and size > run.args.outlines_max_tools:
                continue
            r = run.compile(text, b, run.args.screen_timeout)
            if r["status"] != "ok":
                why = f"{b}:{r['status']}"
                stats["rejected"][why] = stats["rejected"].get(why, 0) + 1
                break
            singles[b] = r["compile_ms"]
        else:
            accepted.append({**cand, "single_ms": singles})
            if len(accepted) == size:
                break
    return accepted


def valid_call(tool: dict) -> Any:
    """One valid argument object for ``tool`` (None when hypothesis finds none fast)."""
    from schemaops.compare.generate import GenerationError, generate_valid

    try:
        got = generate_valid(tool["params"], 1, max_time_s=5.0)
    except GenerationError:
        return None
    return got[0] if got else None


def derivations(tools: list[dict], mode: str, args: Any) -> list[tuple[list[str], dict, Any]]:
    """[(engines, schema, valid instance or None)], one per distinct derived text; ``args``
    are valid arguments of the last tool (the one named, and the one the walk calls)."""
    req = request_tools(tools)
    target = tools[-1]
    by_text: dict[str, tuple[list[str], dict, Any]] = {}
    for engine in ("sglang", "vllm"):
        m = "required" if mode == "required" else f"named:{target['name']}"
        c = derive(engine, req, m)
        if c.schema is None:
            continue
        text = canonical_text(c.schema)
        if text in by_text:
            by_text[text][0].append(engine)
            continue
        vllm_named = engine == "vllm" and mode == "named"
        inst = None
        if args is not None:
            inst = args if vllm_named else [{"name": target["name"], "parameters": args}]
        by_text[text] = ([engine], c.schema, inst)
    return list(by_text.values())


def tag_tasks(tools: list[dict], args: Any) -> list[tuple[list[str], dict, None]]:
    """``auto``: one ``toolset_tags`` task per engine (their tags differ in shape)."""
    req = request_tools(tools)
    return [([e], {"engine": e, "tools": req, "args": args}, None) for e in ("sglang", "vllm")]


def auto_status(modes: list[str]) -> dict:
    """What ``auto`` rows mean (or why there are none)."""
    if "auto" not in modes:
        return {"measured": False, "note": "tool_choice auto not asked (--modes)"}
    return {
        "measured": True,
        "strict_level": STRICT_LEVEL,
        "note": "tool_choice auto: the structural tag with the Qwen2.5 parser (SGLang qwen25 "
        "legacy tag, vLLM hermes tag), arguments held to parameters (strict level 2); "
        "outlines: neither engine compiles structural tags with it",
    }


def set_row(run: Runner, b: str, mode: str, tools: list[dict], deriv: tuple, stopped: dict) -> dict:
    """Compile one derivation on backend ``b`` (or say why not) and set it against the
    baseline: the tools' single compiles (named: the named tool's). ``auto``: ``deriv`` is
    (engines, task for ``toolset_tags``, None)."""
    engines, schema, inst = deriv
    size = len(tools)
    row: dict = {"backend": b, "mode": mode, "engines": engines, "tools": size}
    if mode != "auto":
        text = canonical_text(schema)
        row["schema_bytes"] = len(text.encode())
    elif b == "outlines":
        return {**row, "status": "skipped", "why": "neither engine compiles tags with outlines"}
    key = (b, f"{mode} {'+'.join(engines)}" if mode == "auto" else mode)
    cap = run.args.outlines_max_tools
    if b == "outlines" and size > cap:
        stopped.setdefault(key, f"> --outlines-max-tools {cap}")
    if key in stopped or run.out_of_time():
        return {**row, "status": "skipped", "why": stopped.get(key, "--budget-s spent")}
    if mode == "auto":
        r = run.compile_tag(schema, b, run.args.timeout)
        row["tag_bytes"] = r.get("tag_bytes")
    else:
        r = run.compile(text, b, run.args.timeout, [inst] if inst is not None else [])
    row["status"] = r["status"]
    if r["status"] != "ok":
        stopped[key] = f"{r['status']} at {size} tools"
        return {**row, "error": (r.get("error") or "")[:200]}
    singles = [t["single_ms"][b] for t in tools]
    if mode == "named":
        singles = singles[-1:]
    ms = r["compile_ms"]
    return {
        **row,
        "compile_ms": ms,
        "sum_single_ms": round(sum(singles), 3),
        "max_single_ms": round(max(singles), 3),
        "ratio_sum": round(ms / max(1e-9, sum(singles)), 3),
        "ratio_max": round(ms / max(1e-9, max(singles)), 3),
        "mask_us": r["mask_us"],
        "mask_steps": r.get("mask_steps") or 0,
    }


def run_sets(
    run: Runner, pool: Any, sizes: list[int], backends: list[str], modes: list[str], sel: dict
) -> list[dict]:
    """Per size (ascending): screen its own tools, then compile each mode's derivations; a
    backend and mode that time out (or fail) at one size skip the larger ones."""
    rows: list[dict] = []
    stopped: dict[tuple[str, str], str] = {}
    for size in sorted(sizes):
        tools = screen(run, pool, size, backends, sel)
        if len(tools) < size:
            why = "--budget-s spent" if run.out_of_time() else "too few tools compile"
            rows += [
                {"backend": b, "mode": m, "engines": [], "tools": n}
                | {"status": "skipped", "why": why}
                for n in sorted(sizes)
                if n >= size
                for m in modes
                for b in backends
            ]
            break
        sel["sets"][size] = tools
        args = valid_call(tools[-1])
        for mode in modes:
            derivs = derivations(tools, mode, args) if mode != "auto" else tag_tasks(tools, args)
            for deriv in derivs:
                rows += [set_row(run, b, mode, tools, deriv, stopped) for b in backends]
    return rows


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for d in ("xgrammar", "llguidance", "outlines_core"):
        try:
            out[d] = version(d)
        except PackageNotFoundError:
            out[d] = None
    return out


def render(doc: dict) -> str:
    lines = [
        f"tool sets of {doc['tools']['subsets']} (seed {doc['seed']}): {doc['tools']['accepted']}"
        f" tools kept of {doc['tools']['screened']} screened, rejected {doc['tools']['rejected']}",
        f"host {doc['host']['cpus']} CPUs ({doc['host']['usable']} usable), load {doc['load']}, "
        f"xgrammar max_threads {doc['xgrammar_max_threads']}, {doc['versions']}",
        "",
        f"{'backend':<10} {'mode':<8} {'engines':<12} {'tools':>5} {'status':<8} "
        f"{'set ms':>9} {'sum ms':>9} {'max ms':>8} {'/sum':>6} {'/max':>7} "
        f"{'mask p50/p99 us':>16}",
    ]
    for r in doc["rows"]:
        eng = "+".join(r["engines"])
        if r["status"] != "ok":
            why = r.get("why") or r.get("error") or ""
            head = f"{r['backend']:<10} {r['mode']:<8} {eng:<12} {r['tools']:>5}"
            lines.append(f"{head} {r['status']:<8} {why}")
            continue
        p50, p99 = r["mask_us"]["p50"], r["mask_us"]["p99"]
        mask = "-" if p50 is None else f"{p50:.1f}/{p99:.1f}"
        lines.append(
            f"{r['backend']:<10} {r['mode']:<8} {eng:<12} {r['tools']:>5} {'ok':<8} "
            f"{r['compile_ms']:>9.1f} {r['sum_single_ms']:>9.1f} {r['max_single_ms']:>8.1f} "
            f"{r['ratio_sum']:>6.2f} {r['ratio_max']:>7.2f} "
            f"{mask:>16}"
        )
    lines += ["", f"compiles: {doc['compiles']}; {doc['auto']['note']}; wall {doc['wall_s']} s"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1, 2, 4 tools; xgrammar, llguidance")
    ap.add_argument("--sizes", help="comma-separated tool counts (default 1..256 by powers of 2)")
    ap.add_argument("--backends", help="default xgrammar,llguidance,outlines (quick: no outlines)")
    ap.add_argument("--modes", default="required,named,auto")
    ap.add_argument("--subsets", default="Glaiveai2K", help="JSONSchemaBench subsets of tools")
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--timeout", type=float, default=90.0, help="per tool-set compile, s")
    ap.add_argument("--screen-timeout", type=float, default=20.0, help="per single tool, s")
    ap.add_argument("--outlines-max-tools", type=int, default=16)
    ap.add_argument("--budget-s", type=float, default=840.0, help="the whole run, s")
    ap.add_argument("--threads", type=int, default=8, help="xgrammar max_threads (engines: 8)")
    ap.add_argument("--tokenizer", default="qwen2.5")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else list(QUICK_SIZES if args.quick else FULL_SIZES)
    )
    default_backends = "xgrammar,llguidance" if args.quick else "xgrammar,llguidance,outlines"
    backends = (args.backends or default_backends).split(",")
    modes = args.modes.split(",")
    if not set(modes) <= {"required", "named", "auto"} or not sizes or min(sizes) < 1:
        ap.error("--modes: required, named, auto; --sizes: positive integers")
    run = Runner(args)
    subsets = args.subsets.split(",")
    sel: dict = {"screened": 0, "rejected": {}, "sets": {}}
    pool = iter(candidates(subsets, args.seed))
    try:
        rows = run_sets(run, pool, sizes, backends, modes, sel)
    finally:
        run.close()
    doc = {
        "bench": "toolset_compile",
        "command": " ".join(["bench/toolset_compile.py", *(argv or sys.argv[1:])]),
        "host": host_cpus(),
        "load": [round(x, 2) for x in os.getloadavg()],
        "tokenizer": args.tokenizer,
        "xgrammar_max_threads": args.threads,
        "versions": versions(),
        "seed": args.seed,
        "sizes": sizes,
        "backends": backends,
        "modes": modes,
        "timeouts_s": {"set": args.timeout, "single": args.screen_timeout},
        "tools": {
            "subsets": subsets,
            "screened": sel["screened"],
            "accepted": sum(len(ts) for ts in sel["sets"].values()),
            "rejected": sel["rejected"],
            "by_size": {
                str(s): [{"name": t["name"], "single_ms": t["single_ms"]} for t in ts]
                for s, ts in sel["sets"].items()
            },
        },
        "compiles": run.compiles,
        "rows": rows,
        "auto": auto_status(modes),
        "wall_s": round(time.monotonic() - run.t0, 1),
    }
    print(json.dumps(doc, indent=1) if args.json else render(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
