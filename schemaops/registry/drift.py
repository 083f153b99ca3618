"""Key drift: one schema, several byte strings, several cache entries and compiles.

SGLang keys its grammar cache on the exact schema text. Two services that send "the same"
schema, one with ``json.dumps`` defaults and one compact, or with properties in another
order, or ``"é"`` against ``"\\u00e9"``, make two cache entries: each variant goes through a
compile on its first request, and warming one does not make the other a cache hit. (How
much of that compile repeats depends on the backend: xgrammar 0.2's own compiler cache
reuses sub-results, so on xgrammar a variant of a warm schema costs a fraction of a cold
compile; SGLang's llguidance and outlines backends keep no such compiler cache.) This module
groups the schema strings of a request log by JSON value and reports the byte variants of
each, how often each was sent, how they differ, and which registry schema they equal.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from schemaops.errors import EXIT_GATE, EXIT_OK, EXIT_USAGE
from schemaops.requestlog import normalise, printable, scan, value_key
from schemaops.strings import plural, sha256_hex

# One JSON token with the whitespace before it; strings keep their escapes as written.
_TOKEN = re.compile(
    r'(\s*)("(?:[^"\\]|\\.)*"|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|[{}\[\]:,])',
    re.S,
)


def tokens(text: str) -> tuple[list[str], list[str]]:
    """``(whitespace_runs, tokens)`` of a JSON text, tokens spelled as written."""
    ws, toks = [], []
    pos = 0
    for m in _TOKEN.finditer(text):
        if m.start() != pos:
            raise ValueError(f"not JSON at offset {pos}")
        ws.append(m.group(1))
        toks.append(m.group(2))
        pos = m.end()
    ws.append(text[pos:])
    return ws, toks


def differences(a: str, b: str) -> list[str]:
    """How two JSON-equal texts differ.

    Any of ``key_order``, ``whitespace``, ``escaping`` (string spelling) and
    ``number_format`` (``1.0`` against ``1``, ``1e2`` against ``100``).
    """
    if a == b:
        return []
    kinds = []
    ordered = [
        json.dumps(normalise(json.loads(t)), separators=(",", ":"), ensure_ascii=False)
        for t in (a, b)
    ]
    if ordered[0] != ordered[1]:
        kinds.append("key_order")
    (wa, ta), (wb, tb) = tokens(a), tokens(b)
    if wa != wb:
        kinds.append("whitespace")
    if Counter(t for t in ta if t[0] == '"') != Counter(t for t in tb if t[0] == '"'):
        kinds.append("escaping")
    if Counter(t for t in ta if t[0] in "-0123456789") != Counter(
        t for t in tb if t[0] in "-0123456789"
    ):
        kinds.append("number_format")
    return kinds or ["other"]


def registry_index(registry: Any) -> dict[str, str]:
    """JSON value key -> registry schema name, for the file's schema and its bundled form."""
    index: dict[str, str] = {}
    for s in registry:
        for form in (s.schema, s.bundled()):
            index.setdefault(value_key(form), s.name)
    return index


def analyse(path: str | Path, registry: Any = None) -> dict[str, Any]:
    """The drift report of a request log (see ``run_drift`` for the document)."""
    sc = scan(path)
    index = registry_index(registry) if registry is not None else {}
    wires: dict[str, tuple[str, str]] = {}
    if registry is not None:
        for s in registry:
            for api in ("native", "openai"):
                wires[s.wire(api)] = (s.name, api)
    groups: dict[str, dict[str, Any]] = {}
    for f in sc.found:
        if f.schema_text is None:
            continue
        try:
            vk = value_key(f.schema_text)
        except ValueError:
            sc.input_errors.append({"line": f.line, "reason": "schema text is not JSON"})
            continue
        g = groups.setdefault(vk, {"variants": {}, "labels": Counter()})
        if f.label:
            g["labels"][f.label] += 1
        v = g["variants"].setdefault(
            f.schema_text, {"count": 0, "apis": Counter(), "first_line": f.line}
        )
        v["count"] += 1
        v["apis"][f.api] += 1
    schemas = []
    for vk, g in groups.items():
        variants = g["variants"]
        match = index.get(vk)
        ref = next((t for t in variants if t in wires and wires[t][0] == match), None)
        ref = ref or max(variants, key=lambda t: variants[t]["count"])
        rows = []
        for text, v in sorted(variants.items(), key=lambda kv: -kv[1]["count"]):
            w = wires.get(text)
            rows.append(
                {
                    "sha256": sha256_hex(text)[:16],  # of the text as sent
                    "count": v["count"],
                    "apis": dict(v["apis"]),
                    "first_line": v["first_line"],
                    "chars": len(text),
                    "differs": differences(ref, text),
                    "registry_wire": w[1] if w and w[0] == match else None,
                    "preview": printable(text[:100]),
                }
            )
        schemas.append(
            {
                "matches": match,
                "label": g["labels"].most_common(1)[0][0] if g["labels"] else "",
                "requests": sum(v["count"] for v in variants.values()),
                "variants": rows,
                "extra_compiles": len(variants) - 1,
                "drift": len(variants) > 1,
            }
        )
    schemas.sort(key=lambda s: (not s["drift"], -s["requests"]))
    return {
        "log": str(path),
        "records": sc.records,
        "with_grammar": len(sc.found),
        "unconstrained": sc.unconstrained,
        "input_errors": sc.input_errors,
        "schemas": len(schemas),
        "drifting": sum(1 for s in schemas if s["drift"]),
        "cache_entries": sum(len(s["variants"]) for s in schemas),
        "extra_compiles": sum(s["extra_compiles"] for s in schemas),
        "unmatched": sum(1 for s in schemas if s["matches"] is None)
        if registry is not None
        else None,
        "groups": schemas,
    }


def exit_code(doc: dict[str, Any]) -> int:
    """2 when the log has records but not one is usable, 1 when a schema drifts, else 0."""
    if doc["records"] and not doc["with_grammar"] and not doc["unconstrained"]:
        return EXIT_USAGE
    return EXIT_GATE if doc["drifting"] else EXIT_OK


def unusable_message(doc: dict[str, Any]) -> str:
    """The exit-2 message: no line of the log was usable (the first reason, with its line)."""
    first = doc["input_errors"][0]
    return f"error: {doc['log']}: no usable line (line {first['line']}: {first['reason']})"


def render(doc: dict[str, Any], out: Any) -> None:
    """The terminal report on a rich ``Console``; log text is escaped, never markup."""
    from rich.markup import escape
    from rich.table import Table

    out.print(
        f"{plural(doc['records'], 'record')}, {doc['with_grammar']:,} with a schema: "
        f"{plural(doc['schemas'], 'schema')} in "
        f"{plural(doc['cache_entries'], 'cache entry', 'cache entries')};"
        f" {doc['drifting']:,} drifting, {plural(doc['extra_compiles'], 'extra compile')}"
    )
    t = Table(header_style="bold")
    for col in ("schema", "variant", "requests", "apis", "differs", "registry wire"):
        t.add_column(col)
    for g in doc["groups"]:
        name = g["matches"] or f"(unmatched) {g['label']}".strip()
        for i, v in enumerate(g["variants"]):
            t.add_row(
                escape(name) if i == 0 else "",
                v["sha256"][:12],
                str(v["count"]),
                ",".join(f"{k}:{n}" for k, n in v["apis"].items()),
                ",".join(v["differs"]) or ("reference" if g["drift"] else "-"),
                v["registry_wire"] or "-",
                style=None if g["drift"] else "dim",
            )
    out.print(t)
    if doc["input_errors"]:
        out.print(
            f"[yellow]{len(doc['input_errors'])} unusable line(s)[/], "
            f"first: {escape(str(doc['input_errors'][0]))}"
        )


def run_drift(path: str | Path, registry_dir: str | Path | None = None) -> dict[str, Any]:
    """Library entry point of ``schemaops registry drift``: load the registry, analyse the log.

    The document has ``records``, ``schemas`` (distinct JSON values), ``drifting`` (those
    with more than one byte variant), ``cache_entries``, ``extra_compiles`` (entries beyond
    one per schema) and ``groups``: per schema the registry name it equals (``matches``) and
    its ``variants`` with ``count``, ``apis``, ``differs`` (from the registry's wire string,
    or from the most common variant) and ``registry_wire`` (``native``/``openai`` when the
    variant is exactly the registry's string for that path).
    """
    registry = None
    if registry_dir is not None:
        from schemaops.registry import load_registry

        registry = load_registry(registry_dir)
    return analyse(path, registry)
