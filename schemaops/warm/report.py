"""The warm report: one JSON document (``--json``), a terminal table, and the exit code.

One row per schema and server (``status``, ``cold_ms``, ``probe_ms``, ``error``; every field
is documented in docs/contracts/warm.md). On a server with DP replicas the row aggregates its
replicas (worst status and proof, slowest latencies) and lists them under ``replicas``.

Everything printed is safe: server URLs carry no credentials (``urls.redact``; the document
is also scrubbed of them as a last line of defence), every string is encodable (lone
surrogates escaped) and the terminal table escapes rich markup, so a schema, a server
message or a version string like ``[/v2/orders]`` is shown, not interpreted.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from schemaops.http.answer import clean
from schemaops.http.urls import scrub_all
from schemaops.warm.engine import Cell, ServerRun, WarmOptions, base_for
from schemaops.warm.plan import WarmItem
from schemaops.warm.prove import NOTES, worst
from schemaops.warm.toolsets import UNPROVEN_NOTE, toolset_meta

STATUSES = ("warmed", "invalid", "failed", "timeout")
_STATUS_RANK = {"warmed": 0, "timeout": 1, "invalid": 2, "failed": 3, "pending": 4}
STYLE = {
    "warmed": "green",
    "invalid": "red",
    "failed": "red",
    "timeout": "yellow",
    "pending": "red",
}
PROOF_STYLE = {"hit": "green", "unproven": "dim", "suspect": "yellow", "miss": "red"}


def _max(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def row(item: WarmItem, run: ServerRun) -> dict[str, Any]:
    """The JSON row for ``item`` on ``run``'s server."""
    cells: list[Cell] = run.cells.get(item.identity, [])
    bad = [c for c in cells if c.status != "warmed"]
    status = max(bad, key=lambda c: _STATUS_RANK.get(c.status, 4)).status if bad else "warmed"
    if status == "pending":
        status = "failed"
    proof = worst([c.proof for c in cells])
    if run.dp_unknown and status == "warmed":
        proof = worst([proof, "unproven"])  # warm on the engine reached; the others unknown
    errors = [c.error for c in cells if c.error]
    out: dict[str, Any] = {
        "schema": item.name,
        "server": run.url,
        "api": item.api,
        "status": status,
        "cold_ms": _max([c.cold_ms for c in cells]),
        "cold_share_ms": _max([c.cold_share_ms for c in cells]),
        "probe_ms": _max([c.probe_ms for c in cells]),
        "proof": proof,
        "error": errors[0] if errors else None,
        "attempts": sum(c.attempts for c in cells),
    }
    if proof and proof != "hit":
        out["note"] = NOTES[proof]
    if run.dp_unknown and status == "warmed" and proof == "unproven":
        out["note"] = run.dp_unknown
    if any(c.evicted for c in cells):
        out["evicted"] = True
        out["note"] = "evicted from the grammar cache after warming (see error)"
    if item.source != "registry":
        out.update(source=item.source, seen=item.seen, matches=item.matches)
    if item.key is not None:
        out["key_chars"] = len(item.key)
    meta = toolset_meta(item)
    if meta is not None:
        # the baseline the proof used: the same tools with tool_choice none (engine.base_for)
        out["toolset"] = dict(meta) | {"baseline_ms": base_for(run, item)}
        if proof == "unproven" and not run.dp_unknown:
            out["note"] = f"{NOTES['unproven']}; {UNPROVEN_NOTE}"
    if any(c.rewarmed for c in cells):
        out["rewarmed"] = True
    if len(cells) > 1:
        out["replicas"] = [
            {
                "replica": i,
                "status": c.status,
                "cold_ms": c.cold_ms,
                "cold_share_ms": c.cold_share_ms,
                "probe_ms": c.probe_ms,
                "proof": c.proof,
                "error": c.error,
            }
            | ({"reprobe_ms": c.reprobe_ms} if c.reprobe_ms is not None else {})
            for i, c in enumerate(cells)
        ]
    reprobes = [c.reprobe_ms for c in cells if c.reprobe_ms is not None]
    if reprobes:
        out["reprobe_ms"] = max(reprobes)
    return out


def document(
    items: list[WarmItem], runs: list[ServerRun], opts: WarmOptions, wall_s: float
) -> dict[str, Any]:
    """The ``--json`` document (credentials of ``opts.servers`` scrubbed, text encodable)."""
    rows = [row(it, run) for run in runs for it in items]
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in STATUSES}
    proofs = {
        p: sum(1 for r in rows if r["proof"] == p) for p in ("hit", "suspect", "miss", "unproven")
    }
    servers = [
        {
            "server": r.url,
            "ready": r.ready,
            "error": r.error,
            "engine": r.engine,
            "version": r.version,
            "grammar_backend": r.grammar_backend,
            "dp_size": None if r.dp_unknown else r.dp_size,
            "dp_routing": r.dp_routing,
            "baseline_ms": _first_baseline(r, opts),
            "baseline_ms_by_api": dict(r.base_ms),
            "restarts_detected": r.restarts,
            "rounds": r.rounds,
        }
        | ({"dp_unknown": r.dp_unknown} if r.dp_unknown else {})
        | ({"notes": list(r.notes)} if r.notes else {})
        for r in runs
    ]
    why_not = why_not_ok(rows, runs, counts, proofs)
    doc = {
        "ok": not why_not,
        "api": opts.api,
        "summary": {
            "schemas": len(items),
            "tool_sets": sum(1 for it in items if toolset_meta(it) is not None),
            "servers": len(runs),
            "rows": len(rows),
            **counts,
            "proof": proofs,
            "concurrency": opts.concurrency,
            "wall_s": round(wall_s, 3),
        },
        "servers": servers,
        "results": rows,
    }
    if why_not:
        doc["why_not_ok"] = why_not
    return _safe(scrub_all(doc, opts.servers, opts.auth.secrets()))


def why_not_ok(
    rows: list[dict[str, Any]],
    runs: list[ServerRun],
    counts: dict[str, int],
    proofs: dict[str, int],
) -> list[str]:
    """Every reason the run is not ``ok`` (empty: ok). ``ok`` is the run's whole verdict:
    not only every row ``warmed``, but nothing the run's own evidence contradicts (a probe
    that compiled again, an eviction found by the re-probe) and no row whose scope is
    unknown (a DP size that could not be read)."""
    out = []
    bad = len(rows) - counts["warmed"]
    if bad:
        out.append(f"{bad} of {len(rows)} row(s) not warmed")
    evicted = sum(1 for r in rows if r.get("evicted"))
    if evicted:
        out.append(
            f"{evicted} row(s) evicted from the grammar cache after warming: the registry "
            "does not fit the server's grammar cache (see grammar_cache)"
        )
    misses = proofs["miss"] - evicted
    if misses > 0:
        out.append(
            f"{misses} row(s) with proof miss: the probe compiled again, so the schema was "
            "not in the cache it was warmed into (see the rows' note)"
        )
    out.extend(r.dp_unknown for r in runs if r.dp_unknown)
    return out


def _first_baseline(run: ServerRun, opts: WarmOptions) -> float | None:
    """The baseline of ``--api`` when measured, else of the one API the items use."""
    if opts.api in run.base_ms:
        return run.base_ms[opts.api]
    return next(iter(run.base_ms.values()), None)


def _safe(value: Any) -> Any:
    """Every string of a JSON-like value made encodable as UTF-8 (``answer.clean``)."""
    if isinstance(value, str):
        return clean(value, limit=10**6) if not value.isprintable() else value
    if isinstance(value, dict):
        return {_safe(k): _safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_safe(v) for v in value]
    return value


def exit_code(doc: dict[str, Any], require_proof: bool = False) -> int:
    """1 when the run is not ``ok`` (``why_not_ok``: a row not warmed, a probe ``miss``, an
    eviction, an unknown DP size, a registry over the grammar cache); with ``require_proof``
    also when any probe is ``suspect`` (``unproven`` passes: a schema cached before the run
    is warm but cannot be shown so by latency)."""
    if not doc["ok"]:
        return 1
    if require_proof and doc["summary"]["proof"]["suspect"]:
        return 1
    return 0


_ENGINE_NAMES = {"sglang": "SGLang", "vllm": "vLLM"}
_NOT_REPORTED = {"vllm": "not reported by vLLM"}


def _fmt(ms: float | None) -> str:
    return "-" if ms is None else (f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}")


def render(doc: dict[str, Any], console: Console | None = None) -> None:
    """A table per run: schema, server, status, cold/probe latency, proof and the error.

    The default console is stdout, at least 120 columns wide (a table of long schema names
    and messages folds badly in 80), without rich's automatic highlighting.
    """
    if console is None:
        console = Console(highlight=False, soft_wrap=False, width=max(120, Console().width))
    multi = doc["summary"]["servers"] > 1
    server_error = {s["server"]: s["error"] for s in doc["servers"] if s["error"]}
    for s in doc["servers"]:
        if s["error"]:  # once, here: the rows it failed say so without repeating it
            shown = s["error"]
            if not shown.startswith(s["server"]):
                shown = f"{s['server']}: {shown}"
            console.print(f"[red]{escape(shown)}[/]")
        else:
            dp = (
                ", [yellow]dp_size unknown[/]"
                if s["dp_size"] is None
                else f", dp_size {s['dp_size']} ({s['dp_routing']})"
                if s["dp_size"] > 1
                else ""
            )
            rs = (
                f", [yellow]restart detected {s['restarts_detected']}x, re-warmed[/]"
                if s["restarts_detected"]
                else ""
            )
            console.print(
                f"[bold]{escape(s['server'])}[/]: {_ENGINE_NAMES.get(s.get('engine'), 'SGLang')} "
                f"{escape(s['version'] or '?')}, backend "
                f"{escape(s['grammar_backend'] or _NOT_REPORTED.get(s.get('engine'), '?'))}{dp}, "
                f"baseline {_fmt(s['baseline_ms'])} ms{rs}"
            )
    t = Table(show_lines=False, header_style="bold")
    t.add_column("schema")
    if multi:
        t.add_column("server")
    for col in ("status", "cold ms", "probe ms", "proof", "error"):
        t.add_column(col, justify="right" if "ms" in col else "left", overflow="fold")
    rows = doc["results"]
    for r in rows:
        if r["error"] and r["error"] == server_error.get(r["server"]):
            r = {**r, "error": "(the server's error above)"}
        cells = [escape(r["schema"])]
        if multi:
            cells.append(escape(r["server"]))
        cells += [
            f"[{STYLE[r['status']]}]{r['status']}[/]",
            _fmt(r["cold_ms"]),
            _fmt(r["probe_ms"]),
            f"[{PROOF_STYLE[r['proof']]}]{r['proof']}[/]" if r["proof"] else "-",
            escape((r["error"] or "")[:300]),
        ]
        t.add_row(*cells)
    if not all(server_error.get(r["server"]) == r["error"] for r in rows):
        console.print(t)  # not a table of rows that only repeat their server's error
    sm = doc["summary"]
    pr = sm["proof"]
    console.print(
        f"{sm['warmed']}/{sm['rows']} warmed, {sm['invalid']} invalid, {sm['failed']} failed, "
        f"{sm['timeout']} timeout in {sm['wall_s']:.2f} s; proof: {pr['hit']} hit, "
        f"{pr['suspect']} suspect, {pr['miss']} miss, {pr['unproven']} unproven"
    )
    flagged = sorted(
        {r["proof"] for r in doc["results"] if r["proof"] in ("miss", "suspect", "unproven")}
    )
    for p in flagged:
        console.print(f"[{PROOF_STYLE[p]}]{p}[/]: {NOTES[p]}")
    for s in doc["servers"]:
        for note in s.get("notes") or []:
            console.print(f"[yellow]note[/]: {escape(note)}")
    cache = doc.get("grammar_cache")
    if cache:
        console.print(f"grammar cache: {escape(cache['reason'])}")
        if cache.get("fix"):
            console.print(f"[bold]fix[/]: {escape(cache['fix'])}")
        for note in (cache.get("versions") or {}).get("notes", []):
            console.print(f"  footprint: {escape(note)}")
    for why in doc.get("why_not_ok") or []:
        console.print(f"[red]not ok[/]: {escape(why)}")
