"""Generate ``audits/example-outputs.jsonl``: SIMULATED model outputs for the audit example.

Deterministic (seeded): 5,000 tool calls of a support agent over the shipped registry
(``schemas/``), in SGLang ``/generate`` response shape, as 250 episodes of 20 steps. The
failure mix reproduces a real prompt-only JSON deployment (the case study
in docs/findings.md, source not identified):

    ok 4,813 | json_parse_failure 87 | schema_violation:enum 61 | required 28 | type 11

Failure shapes are the observed ones: prose before the JSON ("Sure! Here is ..."), a missing
closing brace (the output hit the token limit), code fences, values outside an enum, a
required argument left out, a number written as a string. Failures are clustered in some
episodes (as they are in real agents: a confused episode fails repeatedly), so the observed
episode success is well above what p^20 predicts.

Every record carries ``"simulated": true`` and ``"injected"``: what the generator did to it,
as the category the audit must report (``ok``, ``json_parse_failure/<subtype>`` or
``schema_violation:<keyword>``). The generator never asks the audit: each failure is built
from the schema itself (a key from the object's ``required`` list dropped, a value outside an
``enum``, a number or boolean where the schema's ``type`` says so written as a string, with
nothing else at that place constraining it), and valid outputs vary only leaves whose
constraints the generator checks itself. The test suite audits the file and compares every
record's category with its ``injected`` label, so an audit error shows up as a mismatch.

Run: ``python audits/generate_example.py``. It can also be imported (``generate(n, seed)``)
by the throughput benchmark.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


_PLAIN_STRING = {"type", "description", "title", "minLength", "maxLength"}
_PLAIN_NUMBER = {"type", "description", "title", "minimum", "maximum", "exclusiveMinimum"}


def _resolve(node: Any, root: Any) -> Any:
    """Follow local ``$ref``s (the bundled form has only ``#/...`` ones); None if unknown."""
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        ref, seen = node["$ref"], seen + 1
        if not ref.startswith("#/") or seen > 20 or len(node) > 1:
            return None
        cur: Any = root
        for part in ref[2:].split("/"):
            cur = (
                cur.get(part.replace("~1", "/").replace("~0", "~"))
                if isinstance(cur, dict)
                else None
            )
        node = cur
    return node if isinstance(node, dict) else None


def _subschema(root: Any, path: tuple) -> Any:
    """The subschema that governs the value at ``path`` (properties/items only), or None."""
    node = _resolve(root, root)
    for part in path:
        if node is None or any(k in node for k in ("anyOf", "oneOf", "allOf", "not")):
            return None
        if isinstance(part, str):
            node = _resolve(node.get("properties", {}).get(part), root)
        else:
            node = _resolve(node.get("items"), root)
    if node is None or any(k in node for k in ("anyOf", "oneOf", "allOf", "not")):
        return None
    return node


def _objects(node: Any, path: tuple = ()) -> Iterator[tuple[tuple, dict]]:
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _objects(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _objects(v, (*path, i))


def _drop(node: Any, path: tuple, key: str) -> Any:
    out = json.loads(json.dumps(node))
    cur = out
    for p in path:
        cur = cur[p]
    del cur[key]
    return out


def _in_bounds(sub: dict, value: Any) -> bool:
    if isinstance(value, str):
        return sub.get("minLength", 0) <= len(value) <= sub.get("maxLength", 10**9)
    if sub.get("type") == "integer" and not isinstance(value, int):
        return False
    lo, hi = sub.get("minimum"), sub.get("maximum")
    xlo = sub.get("exclusiveMinimum")
    return (
        (lo is None or value >= lo) and (hi is None or value <= hi) and (xlo is None or value > xlo)
    )


class Simulator:
    """Makes valid and deliberately broken tool calls from the schemas themselves."""

    def __init__(self, registry: Path, seed: int) -> None:
        self.rng = random.Random(seed)
        reg = load_registry(registry)
        self.tools = {s.name: s for s in reg if s.name != "tool_call" and s.valid}
        self.schemas = {name: s.bundled() for name, s in self.tools.items()}
        self.names = sorted(self.tools)

    def valid(self, name: str) -> Any:
        """A valid instance: a sidecar example with some leaves varied where the leaf's own
        subschema is a plain string or number whose bounds the new value keeps."""
        inst = json.loads(json.dumps(self.rng.choice(self.tools[name].valid)))
        root = self.schemas[name]
        for path, leaf in list(_leaves(inst)):
            if not path or self.rng.random() < 0.5:
                continue
            if isinstance(leaf, bool) or leaf is None:
                continue
            sub = _subschema(root, path)
            parent = _subschema(root, path[:-1]) if isinstance(path[-1], int) else None
            if sub is None or (parent is not None and parent.get("uniqueItems")):
                continue
            if isinstance(leaf, int):
                cand: Any = max(1, leaf + self.rng.randint(-3, 3))
                plain = _PLAIN_NUMBER
            elif isinstance(leaf, float):
                cand = round(leaf * self.rng.uniform(0.5, 1.5), 2)
                plain = _PLAIN_NUMBER
            elif " " in leaf:
                cand = " ".join(self.rng.sample(WORDS, k=min(len(WORDS), len(leaf.split()) + 1)))
                plain = _PLAIN_STRING
            else:
                continue
            if set(sub) <= plain and _in_bounds(sub, cand):
                inst = _set(inst, path, cand)
        return inst

    def broken(self, name: str, kind: str) -> str | None:
        """Text of one output of ``kind`` (a parse subtype or a violation keyword), or None
        when this schema has no place for that kind of failure."""
        inst = self.valid(name)
        root = self.schemas[name]
        text = json.dumps(inst)
        if kind == "prose_prefix":
            return self.rng.choice(PROSE) + text
        if kind == "truncated":
            return text[:-1]  # the closing brace of the object is cut off
        if kind == "code_fence":
            return "```json\n" + json.dumps(inst, indent=2) + "\n```"
        cands: list[Any] = []
        if kind == "required":
            for path, obj in _objects(inst):
                sub = _subschema(root, path)
                if sub is None or "minProperties" in sub or "dependentRequired" in sub:
                    continue
                required = sub.get("required", [])
                cands += [_drop(inst, path, k) for k in obj if k in required]
        elif kind == "enum":
            for path, leaf in _leaves(inst):
                sub = _subschema(root, path) if path else None
                if (
                    sub is None
                    or not isinstance(sub.get("enum"), list)
                    or not isinstance(leaf, str)
                ):
                    continue
                if set(sub) - {"type", "enum", "description", "title"}:
                    continue
                parent = _subschema(root, path[:-1]) if isinstance(path[-1], int) else None
                if parent is not None and parent.get("uniqueItems"):
                    continue
                wrong = [w for w in WRONG_ENUM if w not in sub["enum"]]
                cands += [_set(inst, path, w) for w in self.rng.sample(wrong, 3)]
        else:  # type: a number or boolean written as a string
            for path, leaf in _leaves(inst):
                sub = _subschema(root, path) if path else None
                if sub is None or not isinstance(leaf, (int, float)) or isinstance(leaf, bool):
                    continue
                if sub.get("type") not in ("integer", "number") or set(sub) - _PLAIN_NUMBER:
                    continue
                cands.append(_set(inst, path, str(leaf).lower()))
        if not cands:
            return None
        return json.dumps(self.rng.choice(cands))


LABELS = {
    "prose_prefix": "json_parse_failure/prose_prefix",
    "truncated": "json_parse_failure/truncated",
    "code_fence": "json_parse_failure/code_fence",
    "enum": "schema_violation:enum",
    "required": "schema_violation:required",
    "type": "schema_violation:type",
}


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
            if got is None:  # this schema has no place for that failure: another tool
                name = sim.names[rng.randrange(len(sim.names))]
        text = got if got is not None else json.dumps(sim.valid(name))
        finish = {"type": "length", "length": 256} if kind == "truncated" else {"type": "stop"}
        rid = f"sim-{i:06d}"
        records.append(
            {
                "id": rid,
                "simulated": True,
                "injected": LABELS[kind] if kind is not None else "ok",
                "episode_id": f"ep-{ep:05d}",
                "step": step + 1,
                "schema": name,
                "text": text,
                "meta_info": {
                    "id": rid,
                    "prompt_tokens": 900 + rng.randrange(400),
                    "completion_tokens": max(1, len(text) // 4),
                    "finish_reason": finish,
                    "e2e_latency": round(rng.uniform(0.2, 1.4), 3),
                },
            }
        )
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
