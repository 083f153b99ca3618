"""Generate ``audits/example-outputs.jsonl``: SIMULATED model outputs for the audit example.

Deterministic (seeded): 5,000 tool calls of a support agent over the shipped registry
(``schemas/``), in SGLang ``/generate`` response shape, as 250 episodes of 20 steps. The
failure mix reproduces a real prompt-only JSON deployment (the seed case):

    ok 4,813 | json_parse_failure 87 | schema_violation:enum 61 | required 28 | type 11

Failure shapes are the observed ones: prose before the JSON ("Sure! Here is ..."), a missing
closing brace (the output hit the token limit), code fences, values outside an enum, a
required argument left out, a number written as a string. Every injected failure is checked
with the audit's own classifier, so the file audits to exactly the mix above. Failures are
clustered in some episodes (as they are in real agents: a confused episode fails repeatedly),
so the observed episode success is well above what p^20 predicts.

Every record carries ``"simulated": true``. Run: ``python audits/generate_example.py``.
It can also be imported (``generate(n, seed)``) by the throughput benchmark.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from schemaops.audit.classify import parse_output
from schemaops.audit.validate import SchemaResolver
from schemaops.registry import load_registry

HERE = Path(__file__).resolve().parent
REGISTRY = HERE.parent / "schemas"
SEED = 20261129
MIX = {"json_parse_failure": 87, "enum": 61, "required": 28, "type": 11}
PARSE_SHAPES = {"prose_prefix": 40, "truncated": 32, "code_fence": 15}
PROSE = [
    "Sure! Here is the tool call:\n",
    "Sure! Here is the JSON you asked for:\n\n",
    "Here is the function call: ",
    "Certainly. I'll look that up for you.\n",
]
WRONG_ENUM = [
    "refund",
    "AUD",
    "urgent!",
    "general",
    "in_transit",
    "Pacific/Auckland",
    "pt-BR",
    "faulty",
    "asap",
    "none",
    "canceled",
    "newest_first",
    "complaint",
    "other_reason",
]
WORDS = [
    "order",
    "late",
    "package",
    "refund",
    "help",
    "account",
    "billing",
    "password",
    "charge",
    "shipping",
    "box",
    "damaged",
    "return",
    "address",
    "card",
    "update",
]


def _leaves(node: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, (*path, i))
    else:
        yield path, node


def _set(node: Any, path: tuple, value: Any) -> Any:
    out = json.loads(json.dumps(node))
    cur = out
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return out


class Simulator:
    """Makes valid and deliberately broken tool calls, checked by the audit's classifier."""

    def __init__(self, registry: Path, seed: int) -> None:
        self.rng = random.Random(seed)
        reg = load_registry(registry)
        self.tools = {s.name: s for s in reg if s.name != "tool_call" and s.valid}
        self.resolver = SchemaResolver(None, registry)
        self.names = sorted(self.tools)

    def category(self, name: str, text: str) -> tuple[str, str | None]:
        value, outcome = parse_output(text)
        if outcome is None:
            outcome = self.resolver.get(name).check(value)
        return outcome.category, outcome.subtype

    def valid(self, name: str) -> Any:
        """A valid instance: a sidecar example with a few leaves varied (kept only if valid)."""
        inst = json.loads(json.dumps(self.rng.choice(self.tools[name].valid)))
        checker = self.resolver.get(name)
        for path, leaf in list(_leaves(inst)):
            if not path or self.rng.random() < 0.5:
                continue
            if isinstance(leaf, bool) or leaf is None:
                continue
            if isinstance(leaf, int):
                cand: Any = max(1, leaf + self.rng.randint(-3, 3))
            elif isinstance(leaf, float):
                cand = round(leaf * self.rng.uniform(0.5, 1.5), 2)
            elif " " in leaf:
                cand = " ".join(self.rng.sample(WORDS, k=min(len(WORDS), len(leaf.split()) + 1)))
            else:
                continue
            trial = _set(inst, path, cand)
            if checker.check(trial).category == "ok":
                inst = trial
        return inst

    def broken(self, name: str, kind: str) -> tuple[str, str] | None:
        """Text of one output of ``kind`` (a parse subtype or a violation keyword), or None."""
        inst = self.valid(name)
        text = json.dumps(inst)
        if kind == "prose_prefix":
            cands = [self.rng.choice(PROSE) + text]
        elif kind == "truncated":
            cands = [text[:-1]]
        elif kind == "code_fence":
            cands = ["```json\n" + json.dumps(inst, indent=2) + "\n```"]
        elif kind == "required":
            cands = [json.dumps({k: v for k, v in inst.items() if k != key}) for key in inst]
        elif kind == "enum":
            cands = [
                json.dumps(_set(inst, p, w))
                for p, leaf in _leaves(inst)
                if isinstance(leaf, str)
                for w in self.rng.sample(WRONG_ENUM, 3)
            ]
        else:  # type: a number or boolean written as a string
            cands = [
                json.dumps(_set(inst, p, str(leaf).lower()))
                for p, leaf in _leaves(inst)
                if isinstance(leaf, (int, float)) and p
            ]
        self.rng.shuffle(cands)
        want = f"schema_violation:{kind}" if kind in ("enum", "required", "type") else None
        for cand in cands:
            cat, sub = self.category(name, cand)
            if (want and cat == want) or (not want and sub == kind):
                return cand, kind
        return None


def generate(n_records: int = 5000, seed: int = SEED, registry: Path = REGISTRY) -> list[dict]:
    """Records in SGLang /generate shape; the failure mix scales with ``n_records``."""
    sim = Simulator(registry, seed)
    rng = sim.rng
    scale = n_records / 5000
    kinds: list[str] = []
    for sub, k in PARSE_SHAPES.items():
        kinds += [sub] * round(k * scale)
    for kw in ("enum", "required", "type"):
        kinds += [kw] * round(MIX[kw] * scale)
    steps, n_ep = 20, max(1, n_records // 20)
    # Clustered failures: about a third of the episodes are "troubled" and take them all.
    troubled = rng.sample(range(n_ep), k=max(1, n_ep * 8 // 25))
    slots = [(e, s) for e in troubled for s in range(steps)]
    fail_at = dict(zip(rng.sample(slots, k=len(kinds)), kinds, strict=True))
    records = []
    for i in range(n_records):
        ep, step = divmod(i, steps)
        name = sim.names[rng.randrange(len(sim.names))]
        kind = fail_at.get((ep, step))
        got = None
        while kind is not None and got is None:
            got = sim.broken(name, kind)
            if got is None:
                name = sim.names[rng.randrange(len(sim.names))]
        text = got[0] if got else json.dumps(sim.valid(name))
        finish = {"type": "length", "length": 256} if kind == "truncated" else {"type": "stop"}
        rid = f"sim-{i:06d}"
        records.append({
            "id": rid,
            "simulated": True,
            "episode_id": f"ep-{ep:05d}",
            "step": step + 1,
            "schema": name,
            "text": text,
            "meta_info": {"id": rid, "prompt_tokens": 900 + rng.randrange(400),
                          "completion_tokens": max(1, len(text) // 4), "finish_reason": finish,
                          "e2e_latency": round(rng.uniform(0.2, 1.4), 3)},
        })  # fmt: skip
    return records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(HERE / "example-outputs.jsonl"))
    ap.add_argument("-n", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args(argv)
    with open(args.out, "w", encoding="utf-8") as fh:
        for rec in generate(args.n, args.seed):
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"wrote {args.n} simulated records to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
