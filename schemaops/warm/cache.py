"""``warm`` on vLLM: the engine decision before sending, the grammar-cache verdict after.

The order, the latch and the cache verdict are ``engines.decision.decide``'s (the one function
``check --engine`` uses too). After the run, an unknown footprint on an LRU is ``unproven``
unless the re-probe of the earliest-warmed schema proved that nothing was evicted.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from schemaops.engines.capacity import Fit
from schemaops.engines.decision import Decision, Request, decide
from schemaops.warm import latch
from schemaops.warm.plan import WarmItem

if TYPE_CHECKING:
    from schemaops.warm.run import WarmSettings


def requests_of(items: list[WarmItem]) -> tuple[list[Request], dict[str, WarmItem]]:
    """The items as the engine decision's requests, and each request name's item. Names,
    not identities (an identity is the whole key string); a name two keys share (a log's
    object and string forms) gets the key's short hash."""
    uses = Counter(it.name for it in items)
    by_name: dict[str, WarmItem] = {}
    out = []
    for it in items:
        name = it.name if uses[it.name] == 1 else f"{it.name}#{it.short_hash}"
        by_name[name] = it
        key = str(it.key) if it.key is not None else None
        out.append(Request(name, latch.item_schemas(it), key, it.key_type, it.seen))
    return out, by_name


def capacity(items: list[WarmItem], settings: WarmSettings) -> tuple[list[WarmItem], Decision]:
    """The send order and vLLM's decision (``engines.decision.decide``, as ``check --engine``
    makes it): least used first with the latching schema in front, the backend the engine
    compiles them with, and the grammar cache against their footprint, measured with
    xgrammar on ``settings.tokenizer`` before anything is sent (a key the server derives,
    tools, or a regex is unknown)."""
    requests, by_name = requests_of(items)
    env = {} if settings.cache_mb is None else {"VLLM_XGRAMMAR_CACHE_MB": str(settings.cache_mb)}
    decision = decide(
        "vllm",
        requests,
        settings.vllm_backend,
        env=env,
        tokenizer=settings.tokenizer,
        headroom_pct=settings.cache_headroom_pct,
        timeout_s=settings.options.timeout_s,
    )
    return [by_name[n] for n in decision.order], decision


def judge_cache(
    doc: dict[str, Any], cache: Fit, send: list[WarmItem], runs: list[Any], settings: WarmSettings
) -> None:
    """The grammar-cache verdict in ``doc``: a registry that does not fit makes the run not
    ok; on an LRU, an unknown footprint is ``unproven`` (not ok) unless the re-probe proved
    that nothing was evicted. Names the versions the footprint was measured with against the
    server's (vLLM reports its own version on ``/version``, not xgrammar's)."""
    from schemaops.engines.capacity import version_notes
    from schemaops.engines.vllm import VLLM

    versions = {s.get("version") for s in doc.get("servers", []) if s.get("ready")}
    if versions == {VLLM.release}:
        engine_xgr = (
            VLLM.pins.get("xgrammar"),
            f"the server reports vLLM {VLLM.release} on /version, which pins it",
        )
    else:
        shown = ", ".join(sorted(str(v) for v in versions)) or "no version"
        engine_xgr = (
            None,
            f"the server reports {shown}; only vLLM {VLLM.release}'s pins are known",
        )
    cache.versions = version_notes(cache.footprint, *engine_xgr)
    out = cache.to_dict()
    doc["grammar_cache"] = out
    if cache.fits is False:
        doc["ok"] = False
        doc.setdefault("why_not_ok", []).append(f"{cache.reason}; fix: {cache.fix}")
    elif cache.fits is None and cache.policy.kind.startswith("lru"):
        proof = reprobe_proof(send, runs, settings)
        out["reprobe"] = proof
        if proof is None:
            out["unproven"] = (
                f"{cache.reason}; and no re-probe proved that nothing was evicted (the "
                "earliest-warmed schema was not a re-probe hit on every replica"
                + (": --no-probe" if not settings.options.probe else "")
                + ")"
            )
            doc["ok"] = False
            doc.setdefault("why_not_ok", []).append(
                f"grammar cache unproven: {out['unproven']}; state the server's cap with "
                "--cache-mb and keep the probes on (drop --no-probe)"
            )


def reprobe_proof(send: list[WarmItem], runs: list[Any], settings: WarmSettings) -> str | None:
    """Why the re-probe proves no eviction, or None. An LRU evicts the least recently used
    first, and the earliest-warmed schema (``send[0]``, probed before the others) is that
    one: when its re-probe after the run is a ``hit`` on every replica of every server,
    nothing was evicted. A cheap compile (``unproven``) or a miss proves nothing."""
    from schemaops.warm.engine import base_for
    from schemaops.warm.prove import verdict

    if not send or not settings.options.probe or not runs:
        return None
    first = send[0].identity
    for run in runs:
        cells = run.cells.get(first) or []
        base = base_for(run, send[0])
        if not cells or base is None:
            return None
        for cell in cells:
            cold = cell.cold_share_ms if cell.cold_share_ms is not None else cell.cold_ms
            if cell.reprobe_ms is None or cold is None:
                return None
            if verdict(cold, cell.reprobe_ms, base, settings.options.proof) != "hit":
                return None
    return (
        f"the earliest-warmed schema ({send[0].name}) was a re-probe hit on every replica "
        "after the run: the LRU evicted nothing"
    )
