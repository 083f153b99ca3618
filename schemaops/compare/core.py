"""The worker-side core of compare: build a backend, compile one schema cold, walk its
instances (timed), and return one result (shape in ``model``).

This runs inside a worker process (``isolate``): everything that touches a grammar library
is here, and a crash, hang or memory blow-up in it becomes a status in the parent.
``run_task`` is also what ``bench/harness_overhead.py`` calls in-process to compare against
a bare library loop.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from schemaops.backends import GrammarBackend, UnsupportedSchema, get_backend
from schemaops.compare.enforce import locate, summarize, walk
from schemaops.compare.generate import GenerationError, generate_valid
from schemaops.compare.instances import build_instances
from schemaops.compare.model import ERROR, OK, OOM, UNSUPPORTED, empty_result, unwalked
from schemaops.compare.retokenize import tokenizations
from schemaops.strings import sha256_hex

# Compiled once after building a backend, so one-time lazy initialisation inside a library
# is not billed to the first real schema's "cold" compile.
_WARMUP_SCHEMA = '{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}'


def make_backend(
    name: str,
    tokenizer: str = "qwen2.5",
    vocab_size: int | None = None,
    compile_threads: int | None = None,
) -> GrammarBackend:
    """Load the tokenizer, build backend ``name`` for it and warm it up (in this process).

    ``compile_threads`` is xgrammar's ``max_threads`` (None: the engines' 8); the other
    backends compile on one thread whatever it says.
    """
    from schemaops.tokenizers import load_tokenizer

    tok = load_tokenizer(tokenizer)
    cls = get_backend(name)
    cache = table_cache_path(name, tokenizer, vocab_size or len(tok))
    kwargs: dict[str, Any] = {}
    if cache is not None and name in ("xgrammar", "outlines"):
        kwargs["table_cache"] = cache
    if name == "xgrammar" and compile_threads:
        kwargs["max_threads"] = compile_threads
    if kwargs:
        backend = cls(tok, vocab_size, **kwargs)  # type: ignore[call-arg]
    else:
        backend = cls.from_tokenizer(tok, vocab_size)
    backend.compile(_WARMUP_SCHEMA).matcher()
    return backend


def table_cache_path(backend: str, tokenizer: str, vocab_size: int) -> Path | None:
    """Where a backend's token table for this tokenizer is cached (None: don't cache).

    Keyed by the tokenizer file (path, size, mtime), the lm-head width, the library version
    and the fingerprint of the code and libraries that build the table
    (``cachekeys.table_fingerprint``: the backend's module, the tokenizer loading, the
    ``tokenizers``/``transformers`` versions), so a changed tokenizer, an upgraded library
    or an edited table builder never reads a stale table. Worker start-up is paid again
    after every timeout or crash, so this matters in corpora.
    """
    from importlib.metadata import PackageNotFoundError, version

    from schemaops.cachekeys import table_fingerprint
    from schemaops.tokenizers import cache_dir, tokenizer_dir

    try:
        tfile = tokenizer_dir(tokenizer) / "tokenizer.json"
        st = tfile.stat()
        dist = {"xgrammar": "xgrammar", "outlines": "outlines_core"}.get(backend, backend)
        ver = version(dist)
    except (OSError, PackageNotFoundError, Exception):
        return None
    key = f"{tfile.resolve()}|{st.st_size}|{st.st_mtime_ns}|{vocab_size}|{ver}"
    key += f"|{table_fingerprint(backend)}"
    digest = sha256_hex(key)[:16]
    return cache_dir().parent / "backend-tables" / f"{backend}-{digest}.bin"


def percentiles(ns: list[int]) -> dict[str, float | None]:
    """mean/p50/p99 in µs of nanosecond samples (nearest-rank p99)."""
    if not ns:
        return {"mean": None, "p50": None, "p99": None}
    s = sorted(ns)
    p99 = s[min(len(s) - 1, max(0, int(round(0.99 * len(s) + 0.5)) - 1))]
    return {
        "mean": round(statistics.fmean(s) / 1000, 3),
        "p50": round(statistics.median(s) / 1000, 3),
        "p99": round(p99 / 1000, 3),
    }


def run_task(
    backend: GrammarBackend,
    schema_text: str,
    instances: list[dict[str, Any]],
    *,
    name: str = "",
    generate: int = 0,
    on_compiled: Callable[[float], None] | None = None,
    instance_errors: Iterable[str] = (),
) -> dict[str, Any]:
    """Compile ``schema_text`` cold, then walk every instance (timed) — in this process.

    Mask and advance figures come from *valid* instances only (that is the path a model
    takes); invalid instances are walked for enforcement only. ``instance_errors`` (why
    examples could not be prepared) and generation failures go to the result's
    ``instance_errors`` and, when nothing was walked, to ``enforcement.reason``.
    """
    result = empty_result(name, backend.name)
    t0 = time.perf_counter()
    try:
        compiled = backend.compile(schema_text)
    except UnsupportedSchema as exc:
        result.update(status=UNSUPPORTED, error=str(exc)[:2000])
    except MemoryError as exc:
        result.update(status=OOM, error=f"MemoryError: {exc}"[:2000])
    except Exception as exc:  # the backend's own error
        msg = f"{type(exc).__name__}: {exc}"[:2000]
        result.update(status=OOM if "bad_alloc" in msg else ERROR, error=msg)
    compile_ms = (time.perf_counter() - t0) * 1000
    result["instance_errors"] = list(instance_errors)
    if result["status"] != OK:
        result["enforcement"] = summarize(unwalked(instances), result["status"])
        return result
    result["compile_ms"] = round(compile_ms, 3)
    if on_compiled is not None:
        on_compiled(compile_ms)
    if generate:
        try:
            schema = json.loads(schema_text)
            gen = generate_valid(schema, generate)
            instances = instances + build_instances(schema, gen, source="generated")
        except GenerationError as exc:
            result["instance_errors"].append(f"generation: {exc}")
        except Exception as exc:  # building the generated instances failed: say so
            result["instance_errors"].append(f"generation: {type(exc).__name__}: {exc}"[:500])
    # Serialise and tokenize everything first (the Rust tokenizer directly: no batching
    # threads), then walk back to back: a tokenizer call between walks evicts the library's
    # state from the CPU caches and shows up as per-token overhead (bench/harness_overhead).
    rust_tok = backend.tokenizer.backend_tokenizer
    texts = [backend.serialize(inst["value"]) for inst in instances]
    encs = [rust_tok.encode(t, add_special_tokens=False) for t in texts]
    bitmask = backend.allocate_bitmask()
    stop = backend.stop_token_id
    walks = [walk(compiled, bitmask, e.ids, e.offsets, stop) for e in encs]
    details: list[dict[str, Any]] = []
    mask_ns: list[int] = []
    adv_ns: list[int] = []
    mismatches = 0
    for inst, text, w in zip(instances, texts, walks, strict=True):
        mismatches += w.mask_mismatch
        if inst["kind"] == "valid":
            mask_ns += w.mask_ns
            adv_ns += w.advance_ns
        outcome = (
            "accepted"
            if w.reached_stop
            else ("rejected" if w.reject_token is not None else "incomplete")
        )
        where, content = (
            locate(text, w.reject_offset, w.reject_end) if outcome == "rejected" else ("end", False)
        )
        off = w.reject_offset if w.reject_offset is not None else len(text)
        details.append(
            {
                "kind": inst["kind"],
                "index": inst["index"],
                "source": inst.get("source"),
                "keyword": inst.get("keyword"),
                "outcome": outcome,
                "tokens": w.n_tokens,
                "token": w.reject_token,
                "offset": w.reject_offset if outcome == "rejected" else None,
                "end": w.reject_end if outcome == "rejected" else None,
                "where": where if outcome != "accepted" else None,
                "content": content,
                "text": text[max(0, off - 40) : off + 40],
            }
        )
        if inst["kind"] == "valid" and outcome == "rejected" and content:
            details[-1].update(_retry(backend, compiled, bitmask, text, inst["value"]))
    result["mask_us"] = percentiles(mask_ns)
    result["advance_us"] = percentiles(adv_ns)
    result["mask_steps"] = len(mask_ns)
    result["mask_mismatch"] = mismatches
    reason = "; ".join(result["instance_errors"]) or None
    result["enforcement"] = summarize(details, OK, reason)
    return result


def _retry(
    backend: GrammarBackend, compiled: Any, bitmask: Any, text: str, value: Any
) -> dict[str, Any]:
    """Walk the other tokenizations of a valid example refused inside a non-ASCII string
    (see ``retokenize``), in order, until one reaches a stop. Not timed into the figures."""
    tried: dict[str, str] = {}
    for alt, ids in tokenizations(backend.tokenizer, text, value):
        w = walk(compiled, bitmask, ids, [], backend.stop_token_id)
        tried[alt] = "accepted" if w.reached_stop else "rejected"
        if w.reached_stop:
            return {"alternatives": tried, "accepted_as": alt}
    return {"alternatives": tried, "accepted_as": None}
