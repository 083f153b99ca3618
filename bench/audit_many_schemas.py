"""Audit at platform scale: thousands of distinct schemas, a handful of outputs each.

    python bench/audit_many_schemas.py [--quick] [--workdir DIR] [--jobs N] [--rebuild]

The workload is built once from JSONSchemaBench (``../shared/corpora/jsonschemabench``) and
reused from ``--workdir`` (default ``$XDG_CACHE_HOME/schemaops/bench/many-schemas[-quick]``):

- ``registry/``: every corpus schema that loads (the registry loader finds no problem in it),
  one ``NAME.json`` each;
- ``outputs.jsonl``: per schema a few generated valid instances and mutated invalid ones
  (a required property dropped, a value of the wrong type, an undeclared property where
  ``additionalProperties`` is false, a wrong root type, a truncated text, a fenced text);
  about 60 % invalid, every one re-checked with jsonschema; the unique outputs are repeated
  with fresh ids (each pass shuffled) to at least ``--lines`` lines, every text made distinct
  (``baselines.distinct``: the verdict memo cannot answer).

Valid instances come from a small deterministic generator here, not hypothesis-jsonschema:
hypothesis takes seconds per schema, hours for the corpus. Schemas it cannot serve get only
invalid outputs.

Reported, all in one run (ratios compare like with like on a shared machine):
- the issue-24 comparison, interleaved for ``--rounds`` rounds (best of each): whole-process
  ``schemaops audit FILE --registry DIR --json`` with default options and a cold cache (an
  empty ``--cache-dir``), the jsonschema-rs loop (``rs_loop.py``, a validator compiled per
  schema on first use) and the orjson parse-only loop (``parse_only.py``), each its own
  process;
- whole-process lines/s of ``schemaops audit FILE --registry DIR --json`` (a subprocess,
  imports and registry work included), cold cache then warm cache when ``--cache-dir``
  exists; warm without the verdict memo (``SCHEMAOPS_AUDIT_MEMO=0``: every output
  classified afresh, what a log without repeated outputs gets); with ``--jobs N`` cold and
  warm (schema routing, ``audit/run/routing.py``), and warm with byte ranges
  (``SCHEMAOPS_AUDIT_ROUTE=range``) as routing's baseline;
- the naive loop (``json.loads`` + ``jsonschema.validate`` per line; measured on the first
  ``--naive-lines`` lines, it is ~1000x slower) and the parse-only loop (``json.loads`` of
  the record and of its text);
- time to the first line: auditing a one-line file against the full registry (and one padded
  to ``--first-line-registry`` schemas with renamed copies);
- peak memory (VmHWM of the audit process, or of its largest ``--jobs`` worker) on the full
  file and on a quarter of it;
- where the first use of a schema goes (``--profile-schemas`` of them, in this process):
  strict parse, metaschema check, ref resolution, bundling, the checker's own schema check,
  format checker, ``$ref`` inlining, validator construction, fastcheck code generation.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when loaded by a test
from audit_throughput import bench_parse_only  # noqa: E402
from baselines import (  # noqa: E402
    audit_cmd,
    byte_compile,
    distinct,
    parse_only_cmd,
    rs_loop_cmd,
    timed,
)

from schemaops.corpora import jsb_dir
from schemaops.strings import follow_local_refs

REPO = Path(__file__).resolve().parents[1]
CORPUS = jsb_dir()  # schemaops.corpora: $SCHEMAOPS_CORPORA, ../shared, the cache
SCHEMAOPS = [sys.executable, "-c", "from schemaops.cli import main; main()"]
WORKLOAD_VERSION = 2  # bump when the generator changes: a cached workload is rebuilt
FORMATS = {
    "date-time": "2024-01-02T03:04:05Z",
    "date": "2024-01-02",
    "time": "03:04:05Z",
    "email": "a@example.com",
    "idn-email": "a@example.com",
    "uri": "https://example.com/x",
    "uri-reference": "https://example.com/x",
    "iri": "https://example.com/x",
    "url": "https://example.com/x",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "duration": "P1D",
    "regex": "^a+$",
    "json-pointer": "/a/b",
}
STRINGS = ("abc", "hello world", "x")


def default_workdir(quick: bool) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "schemaops" / "bench" / ("many-schemas-quick" if quick else "many-schemas")


# --- valid instances -------------------------------------------------------------------


class _GiveUp(Exception):
    pass


def _deref(node: Any, root: Any) -> Any:
    node, reached = follow_local_refs(node, root, siblings=True)
    if not reached:
        raise _GiveUp
    return node


def _merge(node: dict, sub: Any, root: Any) -> dict:
    sub = _deref(sub, root)
    if not isinstance(sub, dict):
        return node
    out = {**node, **sub}
    for kw in ("properties",):
        if isinstance(node.get(kw), dict) and isinstance(sub.get(kw), dict):
            out[kw] = {**node[kw], **sub[kw]}
    if isinstance(node.get("required"), list) and isinstance(sub.get("required"), list):
        out["required"] = list(dict.fromkeys(node["required"] + sub["required"]))
    return out


def _infer_type(node: dict) -> str | None:
    if any(k in node for k in ("properties", "required", "additionalProperties")):
        return "object"
    if any(k in node for k in ("items", "prefixItems", "minItems")):
        return "array"
    if any(k in node for k in ("minLength", "maxLength", "pattern", "format")):
        return "string"
    if any(k in node for k in ("minimum", "maximum", "multipleOf")):
        return "number"
    return None


def _number(node: dict, integer: bool, variant: int) -> Any:
    lo, hi = node.get("minimum"), node.get("maximum")
    xlo, xhi = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
    value: Any = (1, 7, 0)[variant % 3] if integer else (1.5, 7.25, 0.5)[variant % 3]
    nums = (int, float)
    if isinstance(lo, nums) and not isinstance(lo, bool) and value < lo:
        value = lo
    if isinstance(xlo, nums) and not isinstance(xlo, bool) and value <= xlo:
        value = xlo + 1
    if isinstance(hi, nums) and not isinstance(hi, bool) and value > hi:
        value = hi
    if isinstance(xhi, nums) and not isinstance(xhi, bool) and value >= xhi:
        value = xhi - 1
    step = node.get("multipleOf")
    if isinstance(step, nums) and not isinstance(step, bool) and step > 0:
        value = step * max(1, round(value / step))
    if integer:
        value = int(value)
    return value


def _gen(node: Any, root: Any, variant: int, depth: int) -> Any:
    if depth > 12:
        raise _GiveUp
    if node is True or node == {}:
        return STRINGS[variant % len(STRINGS)]
    node = _deref(node, root)
    if not isinstance(node, dict):
        raise _GiveUp
    if "const" in node:
        return node["const"]
    if isinstance(node.get("enum"), list) and node["enum"]:
        return node["enum"][variant % len(node["enum"])]
    if isinstance(node.get("allOf"), list):
        merged = {k: v for k, v in node.items() if k != "allOf"}
        for sub in node["allOf"]:
            merged = _merge(merged, sub, root)
        return _gen(merged, root, variant, depth + 1)
    for kw in ("anyOf", "oneOf"):
        if isinstance(node.get(kw), list) and node[kw]:
            branch = node[kw][variant % len(node[kw])]
            rest = {k: v for k, v in node.items() if k != kw}
            return _gen(_merge(rest, branch, root), root, variant, depth + 1)
    kind = node.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"] or kind
        kind = kinds[variant % len(kinds)] if kinds else None
    kind = kind or _infer_type(node)
    if kind == "object" or kind is None and depth == 0:
        props = node.get("properties") if isinstance(node.get("properties"), dict) else {}
        required = [k for k in node.get("required", []) if isinstance(k, str)]
        keys = list(required)
        if variant % 2 == 1:
            keys += [k for k in props if k not in keys][:4]
        low = node.get("minProperties")
        if isinstance(low, int):
            keys += [k for k in props if k not in keys][: max(0, low - len(keys))]
        extra = node.get("additionalProperties", True)
        out = {}
        for k in keys:
            out[k] = _gen(
                props.get(k, extra if extra is not False else {}), root, variant, depth + 1
            )
        return out
    if kind == "array":
        items = node.get("items")
        prefix = node.get("prefixItems") if isinstance(node.get("prefixItems"), list) else []
        if isinstance(items, list):
            prefix, items = items, node.get("additionalItems", True)
        n = max(
            node.get("minItems", 0) if isinstance(node.get("minItems"), int) else 0, len(prefix)
        )
        n = max(n, variant % 2)
        out = [_gen(prefix[i], root, variant, depth + 1) for i in range(min(n, len(prefix)))]
        out += [
            _gen(items if items is not None else True, root, variant + i, depth + 1)
            for i in range(n - len(out))
        ]
        return out
    if kind == "string":
        fmt = node.get("format")
        text = FORMATS.get(fmt, STRINGS[variant % len(STRINGS)])
        low, high = node.get("minLength"), node.get("maxLength")
        if isinstance(low, int) and len(text) < low:
            text = text + "x" * (low - len(text))
        if isinstance(high, int) and len(text) > high:
            text = text[:high]
        return text
    if kind in ("integer", "number"):
        return _number(node, kind == "integer", variant)
    if kind == "boolean":
        return variant % 2 == 0
    if kind == "null":
        return None
    raise _GiveUp


class _Alarm(Exception):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Alarm


def _is_valid(validator: Any, value: Any) -> bool | None:
    """jsonschema's verdict, None when it cannot give one within a second (a slow regex)."""
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        return bool(validator.is_valid(value))
    except Exception:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def valid_instances(schema: Any, validator: Any, want: int = 3) -> list[Any]:
    """Up to ``want`` distinct instances jsonschema accepts (format asserted)."""
    out: list[Any] = []
    seen: set[str] = set()
    for variant in range(8):
        try:
            value = _gen(schema, schema, variant, 0)
        except (_GiveUp, RecursionError, TypeError, ValueError, AttributeError):
            continue
        key = json.dumps(value, sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        if _is_valid(validator, value):
            out.append(value)
            if len(out) >= want:
                break
    return out


# --- invalid outputs --------------------------------------------------------------------


def _wrong(value: Any) -> Any:
    if isinstance(value, str):
        return 12345
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, (int, float)):
        return "42"
    if isinstance(value, (list, dict)):
        return "n/a"
    return {"unexpected": True}


def invalid_texts(schema: Any, validator: Any, valid: list[Any], rng: random.Random) -> list[str]:
    """Mutations that jsonschema refuses (violations) plus texts that are not JSON."""
    base = valid[0] if valid else {}
    candidates: list[Any] = []
    if isinstance(base, dict):
        req = schema.get("required") if isinstance(schema, dict) else None
        if isinstance(req, list) and req and req[0] in base:
            candidates.append({k: v for k, v in base.items() if k != req[0]})
        for k in list(base)[:3]:
            candidates.append({**base, k: _wrong(base[k])})
        candidates.append({**base, "unexpected_field": "surprise"})
    candidates.append([base] if not isinstance(base, list) else "just text")
    candidates.append(_wrong(base))
    violations = []
    for value in candidates:
        if _is_valid(validator, value) is False:
            violations.append(json.dumps(value, ensure_ascii=False))
    rng.shuffle(violations)
    text = json.dumps(base, ensure_ascii=False)
    broken = [text[: max(1, len(text) // 2)], "```json\n" + text + "\n```"]
    picked = violations[:2] + [broken[rng.randrange(2)]]
    return picked if valid else violations[:3] + broken[:1]


# --- the workload -----------------------------------------------------------------------


def _name(subset: str, uid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{subset}.{uid}")


def build_workload(workdir: Path, corpus: Path, quick: bool, lines: int, seed: int) -> dict:
    """Write (or reuse) ``registry/``, ``outputs.jsonl`` and ``meta.json`` in ``workdir``."""
    meta_path = workdir / "meta.json"
    want = {"version": WORKLOAD_VERSION, "quick": quick, "lines": lines, "seed": seed}
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if all(meta.get(k) == v for k, v in want.items()):
            return meta
    from schemaops.registry import inspect_registry

    t0 = time.perf_counter()
    rng = random.Random(seed)
    if workdir.exists():
        shutil.rmtree(workdir)
    reg = workdir / "registry"
    reg.mkdir(parents=True)
    rows = []
    for f in sorted(corpus.glob("*.jsonl")):
        for line in f.open(encoding="utf-8"):
            d = json.loads(line)
            rows.append((f.stem, d["unique_id"], d["json_schema"]))
    if quick:
        rows = sorted(random.Random(seed).sample(rows, 600))
    for subset, uid, text in rows:
        try:
            data = json.loads(text)
        except ValueError:
            continue
        if isinstance(data, dict):
            (reg / f"{_name(subset, uid)}.json").write_text(text, encoding="utf-8")
    print(f"workload: inspecting {len(rows):,} corpus schemas (once) ...", flush=True)
    registry, problems = inspect_registry(reg, examples=False)
    bad = {Path(p["file"]).name for p in problems}
    for name in bad:
        (reg / name).unlink(missing_ok=True)
    old = signal.signal(signal.SIGALRM, _on_alarm)
    unique: list[dict] = []
    n_valid_schemas = 0
    try:
        for s in registry:
            if s.path is None or s.path.name in bad:
                continue
            v = s.validator()
            valid = valid_instances(s.bundled(), v)
            n_valid_schemas += bool(valid)
            texts = [(json.dumps(x, ensure_ascii=False), True) for x in valid[:2]]
            texts += [(t, False) for t in invalid_texts(s.bundled(), v, valid, rng)]
            unique += [{"schema": s.name, "text": t, "valid": ok} for t, ok in texts]
    finally:
        signal.signal(signal.SIGALRM, old)
    n = 0
    with open(workdir / "outputs.jsonl", "w", encoding="utf-8") as fh:
        while n < lines:
            order = list(range(len(unique)))
            rng.shuffle(order)
            for i in order:
                u = unique[i]
                # every text distinct (baselines.distinct): the verdict memo cannot answer
                text = distinct(u["text"], n)
                rec = {"id": f"many-{n:07d}", "schema": u["schema"], "text": text}
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                n += 1
    meta = {
        **want,
        "corpus_schemas": len(rows),
        "schemas": len(list(reg.glob("*.json"))),
        "schemas_with_valid_instances": n_valid_schemas,
        "refused_by_loader": len(bad),
        "unique_outputs": len(unique),
        "unique_invalid_share": round(sum(not u["valid"] for u in unique) / len(unique), 3),
        "lines_written": n,
        "build_s": round(time.perf_counter() - t0, 1),
    }
    meta_path.write_text(json.dumps(meta, indent=1))
    return meta


def padded_registry(workdir: Path, size: int) -> Path:
    """The registry plus renamed copies (a ``$comment`` makes each distinct) up to ``size``."""
    src = workdir / "registry"
    dst = workdir / f"registry-{size}"
    files = sorted(src.glob("*.json"))
    if dst.is_dir() and len(list(dst.glob("*.json"))) == max(size, len(files)):
        return dst
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir()
    for f in files:
        shutil.copyfile(f, dst / f.name)
    i = 0
    while len(files) + i < size:
        f = files[i % len(files)]
        data = json.loads(f.read_text(encoding="utf-8"))
        data["$comment"] = f"padding copy {i}"
        (dst / f"pad{i:05d}.{f.name}").write_text(json.dumps(data), encoding="utf-8")
        i += 1
    return dst


# --- measurements -----------------------------------------------------------------------

# The audit process's own peak, or its largest worker's when ``--jobs`` forked some (the
# workers' peaks reach the parent through RUSAGE_CHILDREN: KiB on Linux, as VmHWM).
_HWM_WRAPPER = (
    "import atexit, os, resource, sys\n"
    "def _hwm():\n"
    "    with open('/proc/self/status') as fh:\n"
    "        line = next(x for x in fh if x.startswith('VmHWM'))\n"
    "    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "    with open(os.environ['BENCH_HWM'], 'w') as out:\n"
    "        out.write(str(max(int(line.split()[1]), kids)))\n"
    "atexit.register(_hwm)\n"
    "sys.argv = ['schemaops', *sys.argv[1:]]\n"
    "from schemaops.cli import main\n"
    "main()\n"
)


def run_cli(args: list[str], workdir: Path, env_extra: dict | None = None) -> dict:
    """Run ``schemaops ARGS`` in a fresh process: wall seconds, peak RSS (MiB), JSON output."""
    hwm = workdir / "hwm.txt"
    hwm.unlink(missing_ok=True)
    env = {**os.environ, "BENCH_HWM": str(hwm), **(env_extra or {})}
    t0 = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [sys.executable, "-c", _HWM_WRAPPER, *args], capture_output=True, text=True, env=env
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"schemaops {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        doc = {}
    rss = int(hwm.read_text()) / 1024 if hwm.exists() else float("nan")
    return {"wall_s": wall, "cpu_s": cpu, "rss_mib": rss, "doc": doc}


def audit_supports(option: str) -> bool:
    proc = subprocess.run(
        [*SCHEMAOPS, "audit", "--help"], capture_output=True, text=True, env=os.environ
    )
    return option in proc.stdout


def parse_only(path: Path) -> float:
    """The parse-only floor, measured exactly as audit_throughput.py measures it."""
    return bench_parse_only(path)


def naive(path: Path, registry: Path, limit: int) -> tuple[float, int]:
    """The loop a team writes first; schemas read as files (what it would do), not timed."""
    import jsonschema

    schemas: dict[str, Any] = {}
    recs = []
    with open(path, "rb") as fh:
        for line in fh:
            if len(recs) >= limit:
                break
            recs.append(line)
    for line in recs:
        name = json.loads(line)["schema"]
        if name not in schemas:
            schemas[name] = json.loads((registry / f"{name}.json").read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    for line in recs:
        rec = json.loads(line)
        try:
            jsonschema.validate(json.loads(rec["text"]), schemas[rec["schema"]])
        except (ValueError, jsonschema.ValidationError):
            pass
    return time.perf_counter() - t0, len(recs)


def first_use_profile(registry: Path, n: int, seed: int) -> dict[str, float]:
    """Seconds spent per stage of a schema's first use, summed over ``n`` registry files."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    from schemaops.audit.verdict.explain import skipping_class
    from schemaops.audit.verdict.rscheck import compile_rs
    from schemaops.audit.verdict.schemakeys import ID_KEYWORDS
    from schemaops.audit.verdict.subset import inline_refs, mentions
    from schemaops.audit.verdict.treecheck import compile_tree
    from schemaops.formats import format_checker
    from schemaops.registry import jsontext, refcheck, refs
    from schemaops.registry.bundle import bundle
    from schemaops.registry.documents import ref_free
    from schemaops.registry.drafts import (
        dialect_label,
        draft_label,
        meta_valid,
        metaschema_problems,
    )

    files = sorted(registry.glob("*.json"))
    files = random.Random(seed).sample(files, min(n, len(files)))
    stages = dict.fromkeys(
        (
            "read+strict parse",
            "metaschema check (registry)",
            "ref resolution (registry build + check_refs)",
            "bundling",
            "metaschema check (checker; not when lazy)",
            "format checker setup",
            "$ref inlining",
            "validator + closure check construction",
            "jsonschema-rs compile (first output)",
        ),
        0.0,
    )
    keys = list(stages)
    clock = time.perf_counter
    fast = 0
    format_checker.cache_clear()
    for f in files:
        t = clock()
        data, _ = jsontext.parse(f.read_text(encoding="utf-8"))
        label = draft_label(data.get("$schema") if isinstance(data, dict) else None)
        t1 = clock()
        metaschema_problems(data, label)
        t2 = clock()
        entry = refs.Entry(refs.file_uri(f), data, label)
        reg = None
        report = refcheck.RefReport([], False)
        if not ref_free(data):  # as the loader: no ref registry for a ref-free document
            # and no crawl for refs that all point into the document (when the code has it)
            only = getattr(refs, "pointer_refs_only", lambda e: None)
            nodes = only(entry)
            if nodes is None:
                reg, _ = refs.build([entry])
                report = refcheck.check_refs(entry, refs.registry_lookup(reg))
            else:  # no ref registry: every ref points into the document (as the loader does)
                reg = None
                report = refcheck.check_refs(entry, refs.own_pointer_lookup(entry), nodes)
        t3 = clock()
        body = bundle(data, entry.base, label, reg) if report.external else data
        t4 = clock()
        cls = validator_for(body, default=validator_for({}))
        if not meta_valid(body, dialect_label(body)):  # the metaschema fast path, as checkers do
            cls.check_schema(body)
        t5 = clock()
        fmt = format_checker()
        t6 = clock()
        explain = body
        if cls is Draft202012Validator and not mentions(body, ID_KEYWORDS):
            explain = inline_refs(body)
        t7 = clock()
        cls(explain, format_checker=fmt)
        if compile_tree(explain, cls, fmt) is not None:  # as SchemaChecker at its first failure
            skipping_class(cls)(explain, format_checker=fmt)
        t8 = clock()
        fast += compile_rs(body, dialect_label(body), True).is_valid is not None
        t9 = clock()
        for k, a, b in zip(
            keys,
            (t, t1, t2, t3, t4, t5, t6, t7, t8),
            (t1, t2, t3, t4, t5, t6, t7, t8, t9),
            strict=True,
        ):
            stages[k] += b - a
    stages["(schemas)"] = len(files)
    stages["(fast path compiled)"] = fast
    return stages


def first_use_real(registry: Path, n: int, seed: int, cache_dir: Path) -> dict[str, float]:
    """ms per schema for ``SchemaResolver.get`` (lazy), facts cache cold then warm."""
    import inspect

    from schemaops.audit.verdict.resolver import SchemaResolver

    if "cache_dir" not in inspect.signature(SchemaResolver).parameters:
        return {}
    files = sorted(registry.glob("*.json"))
    names = [f.stem for f in random.Random(seed).sample(files, min(n, len(files)))]
    shutil.rmtree(cache_dir, ignore_errors=True)
    out = {}
    for label in ("cold facts cache", "warm facts cache"):
        resolver = SchemaResolver(None, registry, cache_dir=cache_dir)
        t0 = time.perf_counter()
        resolver.has(names[0])  # the index scan, timed apart
        out[f"index scan, whole registry (ms, once), {label}"] = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        for name in names:
            resolver.get(name).fast  # noqa: B018 (as the first output: jsonschema-rs compiled)
        out[label] = (time.perf_counter() - t0) / len(names) * 1000
        getattr(resolver, "flush_cache", lambda: None)()  # what a run does when it ends
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="600 schemas, 20,000 lines")
    ap.add_argument("--workdir", type=Path, help="workload cache (default: user cache dir)")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--lines", type=int, help="at least this many lines (default 200,000)")
    ap.add_argument("--naive-lines", type=int, help="lines for the naive loop (default 2,000)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--first-line-registry", type=int, default=10_000)
    ap.add_argument("--profile-schemas", type=int, help="schemas in the first-use profile")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=2, help="rounds of the issue-24 comparison")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the cached workload")
    ap.add_argument("--json", action="store_true", help="also print the figures as JSON")
    ap.add_argument("--build-only", action="store_true", help="build the workload and stop")
    args = ap.parse_args(argv)
    lines = args.lines or (20_000 if args.quick else 200_000)
    naive_lines = args.naive_lines or (500 if args.quick else 2_000)
    profile_n = args.profile_schemas or (100 if args.quick else 500)
    workdir = args.workdir or default_workdir(args.quick)
    if args.rebuild and (workdir / "meta.json").exists():
        (workdir / "meta.json").unlink()
    meta = build_workload(workdir, args.corpus, args.quick, lines, args.seed)
    outputs, registry = workdir / "outputs.jsonl", workdir / "registry"
    if args.build_only:
        print(json.dumps(meta, indent=1))
        return 0
    byte_compile()
    print(
        f"workload ({workdir}): {meta['schemas']:,} schemas that load"
        f" (of {meta['corpus_schemas']:,}; {meta['schemas_with_valid_instances']:,} with"
        f" generated valid instances), {meta['unique_outputs']:,} unique outputs"
        f" ({meta['unique_invalid_share']:.0%} invalid) -> {meta['lines_written']:,} lines"
    )
    n = meta["lines_written"]
    fig: dict[str, Any] = {"workload": meta}
    parse_only(outputs)  # page cache
    best: dict[str, float] = {}
    cold_dir = workdir / "validator-cache-cold"
    for _ in range(args.rounds):
        shutil.rmtree(cold_dir, ignore_errors=True)
        for key, cmd in (
            ("parse", parse_only_cmd(outputs)),
            ("rs", rs_loop_cmd(outputs, registry=registry)),
            ("audit", audit_cmd(outputs, registry, "--cache-dir", str(cold_dir))),
        ):
            best[key] = min(best.get(key, float("inf")), timed(cmd)[0])
    vs_rs, vs_parse = best["rs"] / best["audit"], best["parse"] / best["audit"]
    print(f"whole processes, distinct texts, best of {args.rounds} rounds:")
    print(f"  orjson parse-only:                 {n / best['parse']:>10,.0f} lines/s")
    print(f"  jsonschema-rs loop:                {n / best['rs']:>10,.0f} lines/s")
    print(f"  schemaops audit, defaults, cold:   {n / best['audit']:>10,.0f} lines/s")
    print(f"  audit vs jsonschema-rs loop:       {vs_rs:.2f}x (target >= 1.0x)")
    print(f"  audit vs parse-only:               {vs_parse:.2f}x")
    fig["issue24"] = {"rs_loop_lps": n / best["rs"], "parse_only_proc_lps": n / best["parse"]}
    fig["issue24"].update(audit_cold_lps=n / best["audit"], vs_rs=vs_rs, vs_parse=vs_parse)
    t_parse = min(parse_only(outputs) for _ in range(2))
    fig["parse_only_lps"] = n / t_parse
    c0 = time.process_time()
    parse_only(outputs)
    fig["parse_only_cpu_lps"] = n / (time.process_time() - c0)
    c0 = time.process_time()
    t_naive, k = naive(outputs, registry, naive_lines)
    fig["naive_lps"] = k / t_naive
    fig["naive_cpu_lps"] = k / (time.process_time() - c0)
    cache = audit_supports("--cache-dir")
    # "one process" is asked for: the default (--jobs 0) uses every core for a file this size
    base = ["audit", str(outputs), "--registry", str(registry), "--json", "--jobs", "1"]
    cache_dir = workdir / "validator-cache"
    runs = {}
    jobs = ["--jobs", str(args.jobs)]
    if cache:
        shutil.rmtree(cache_dir, ignore_errors=True)
        runs["cold cache"] = run_cli([*base, "--cache-dir", str(cache_dir)], workdir)
        runs["warm cache"] = run_cli([*base, "--cache-dir", str(cache_dir)], workdir)
        # Every output classified afresh (no verdict memo): what a log without repeats gets.
        runs["warm cache, no verdict memo"] = run_cli(
            [*base, "--cache-dir", str(cache_dir)], workdir, {"SCHEMAOPS_AUDIT_MEMO": "0"}
        )
    else:
        runs["no disk cache"] = run_cli(base, workdir)
    if args.jobs > 1:
        extra = ["--cache-dir", str(cache_dir)] if cache else []
        if cache:
            cold_dir = workdir / "validator-cache-jobs"
            shutil.rmtree(cold_dir, ignore_errors=True)
            runs[f"--jobs {args.jobs} cold"] = run_cli(
                [*base, "--cache-dir", str(cold_dir), *jobs], workdir
            )
            shutil.rmtree(cold_dir, ignore_errors=True)
        runs[f"--jobs {args.jobs}" + (" warm" if cache else "")] = run_cli(
            [*base, *extra, *jobs], workdir
        )
        # The same with byte ranges (every worker sees nearly every schema): the baseline of
        # schema routing (``audit/run/routing.py``), measured in this run.
        runs[f"--jobs {args.jobs}" + (" warm" if cache else "") + ", byte ranges"] = run_cli(
            [*base, *extra, *jobs], workdir, {"SCHEMAOPS_AUDIT_ROUTE": "range"}
        )
    # The baselines again, right after the audits: on a shared machine the load moves within
    # a run; the faster of the two readings is kept (the conservative ratio for the audit).
    fig["parse_only_lps"] = max(fig["parse_only_lps"], n / parse_only(outputs))
    fig["naive_lps"] = max(fig["naive_lps"], k / naive(outputs, registry, naive_lines)[0])
    quarter = workdir / "outputs-quarter.jsonl"
    with open(outputs, "rb") as src, open(quarter, "wb") as dst:
        for i, line in enumerate(src):
            if i >= n // 4:
                break
            dst.write(line)
    extra = ["--cache-dir", str(cache_dir)] if cache else []
    quarter_run = run_cli(
        ["audit", str(quarter), "--registry", str(registry), "--json", *extra], workdir
    )
    one = workdir / "one-line.jsonl"
    with open(outputs, "rb") as src:
        one.write_bytes(src.readline())
    big = padded_registry(workdir, args.first_line_registry)
    first = {}
    for label, reg in (
        ("registry", registry),
        (f"{args.first_line_registry:,}-schema registry", big),
    ):
        nocache = ["--no-cache"] if audit_supports("--no-cache") else []
        walls = [  # best of 3: the first read of a folder also pays the page cache
            run_cli(["audit", str(one), "--registry", str(reg), "--json", *nocache], workdir)[
                "wall_s"
            ]
            for _ in range(3)
        ]
        first[f"{label} ({len(list(reg.glob('*.json'))):,} files)"] = min(walls)
    t_start = run_cli(["--version"], workdir)["wall_s"]
    print(
        f"parse-only: {fig['parse_only_lps']:,.0f} lines/s; naive loop: {fig['naive_lps']:,.0f}"
        f" lines/s (first {k:,} lines); each the faster of a reading before and after the"
        " audits"
    )
    for label, r in runs.items():
        lps = n / r["wall_s"]
        doc = r["doc"]
        fig[label] = {"lps": lps, "wall_s": r["wall_s"], "rss_mib": r["rss_mib"]}
        print(
            f"schemaops audit, {label}: {r['wall_s']:.1f} s whole process = {lps:,.0f} lines/s"
            f" = {lps / fig['naive_lps']:.0f}x naive,"
            f" {lps / fig['parse_only_lps']:.3f}x parse-only;"
            f" peak RSS {r['rss_mib']:.0f} MiB; p = {doc.get('p')}"
        )
    print(
        f"peak RSS on a quarter of the lines ({n // 4:,}): {quarter_run['rss_mib']:.0f} MiB"
        f" (full file: {next(iter(runs.values()))['rss_mib']:.0f} MiB)"
    )
    fig["rss_quarter_mib"] = quarter_run["rss_mib"]
    print(f"process start (schemaops --version): {t_start:.2f} s")
    for label, s in first.items():
        print(f"time to the first line (one-line file), {label}: {s:.2f} s")
    fig["first_line_s"] = first
    print("issue-15 targets (measured here; a busy machine moves every figure):")
    cold = runs.get("cold cache") or runs.get("no disk cache")
    warm = runs.get("warm cache")
    # CPU seconds (the audit process and its workers; the baselines in this process): what
    # a shared machine's load moves least. Wall figures are the targets; these say whether a
    # missed one is the code or the machine.
    cpu = {
        "cold: x naive (cpu)": n / cold["cpu_s"] / fig["naive_cpu_lps"],
        "cold: x parse-only (cpu)": n / cold["cpu_s"] / fig["parse_only_cpu_lps"],
    }
    if warm:
        cpu["warm: x parse-only (cpu)"] = n / warm["cpu_s"] / fig["parse_only_cpu_lps"]
    jobs_run = runs.get(f"--jobs {args.jobs} warm")
    ranged = runs.get(f"--jobs {args.jobs} warm, byte ranges")
    if jobs_run and warm:
        speedup = warm["wall_s"] / jobs_run["wall_s"]
        print(
            f"  --jobs {args.jobs} vs 1 (warm): speedup {speedup:.2f}x, efficiency"
            f" {speedup / args.jobs:.0%}; CPU {jobs_run['cpu_s']:.2f} s vs {warm['cpu_s']:.2f} s"
        )
        fig["jobs_speedup"] = speedup
        if ranged:
            r_speed = warm["wall_s"] / ranged["wall_s"]
            print(
                f"  --jobs {args.jobs} with byte ranges instead (warm): {r_speed:.2f}x one job;"
                f" schema routing is {ranged['wall_s'] / jobs_run['wall_s']:.2f}x byte ranges"
            )
            fig["jobs_speedup_byte_ranges"] = r_speed
    memo_off = runs.get("warm cache, no verdict memo")
    if memo_off and warm:
        fig["memo_speedup"] = memo_off["wall_s"] / warm["wall_s"]
        print(
            f"  verdict memo (warm, one job): {fig['memo_speedup']:.2f}x the run without it"
            f" ({meta['unique_outputs']:,} unique outputs in {n:,} lines)"
        )
    fig["cpu_ratios"] = cpu
    jcold = runs.get(f"--jobs {args.jobs} cold")
    rows: list[tuple[str, float | None, float]] = [
        ("cold: x naive", n / cold["wall_s"] / fig["naive_lps"], 50),
        ("cold: x parse-only", n / cold["wall_s"] / fig["parse_only_lps"], 0.1),
        ("warm: x parse-only", n / warm["wall_s"] / fig["parse_only_lps"] if warm else None, 0.3),
    ]
    if jcold and jobs_run:
        for label, r in (("cold", jcold), ("warm", jobs_run)):
            for base_name, key, target in (
                ("naive", "naive_lps", 50),
                ("parse-only", "parse_only_lps", 0.1 if label == "cold" else 0.3),
            ):
                if label == "warm" and base_name == "naive":
                    continue
                value = n / r["wall_s"] / fig[key]
                rows.append((f"--jobs {args.jobs} {label}: x {base_name}", value, target))
    rows.append(("first line, s (largest registry)", list(first.values())[-1], 1.0))
    fig["targets"] = {what: value for what, value, _ in rows}
    for what, value, target in rows:
        if value is None:
            continue
        met = value <= target if what.startswith("first") else value >= target
        print(f"  {what:<34} {value:10.3f}  target {target:g}: {'met' if met else 'NOT met'}")
    for what, value in cpu.items():
        print(f"  {what:<34} {value:10.3f}")
    prof = first_use_profile(registry, profile_n, args.seed)
    total = sum(v for k, v in prof.items() if not k.startswith("("))
    m = prof["(schemas)"]
    print(
        f"first use of a schema ({m} schemas, {total / m * 1000:.2f} ms each on average;"
        f" fast path for {prof['(fast path compiled)']}):"
    )
    for k, v in prof.items():
        if not k.startswith("("):
            print(f"  {k:<46} {v / m * 1000:8.3f} ms  {v / total:6.1%}")
    fig["first_use_ms"] = {k: v / m * 1000 for k, v in prof.items() if not k.startswith("(")}
    real = first_use_real(registry, profile_n, args.seed, workdir / "profile-cache")
    if real:
        print("first use through the audit's resolver (registry load + checker), per schema:")
        for k, v in real.items():
            print(f"  {k:<46} {v:8.3f} ms")
        fig["first_use_resolver_ms"] = real
    if args.json:
        print(json.dumps(fig, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
