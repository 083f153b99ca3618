"""The warm run: readiness, discovery, warm, restart check, probe; per server, concurrently.

Every cache is a scheduler process: each ``--server`` is warmed on its own, and on a server
with data parallelism every DP replica gets its own request (``routed_dp_rank``, which
SGLang 0.5.23's ``DataParallelController`` honours before any load balancing). Without rank
routing the fallback relies on the controller's round-robin: ``dp`` consecutive requests,
with nothing else in flight from us, visit ``dp`` distinct replicas.

Nothing is reported ``warmed`` that the server does not hold at the end: a connection
error or a changed ``startup_time`` (``/server_info``) means the server may have restarted
and lost its cache, so every schema on it is warmed again (and probed again) before the
report is made, up to ``max_rounds`` times. Nor is a 2xx whose body is not the answer of
a completed request (``answer.why_not_answer``): that is ``failed``, with what came back.

What a server says about itself is checked before it is used: ``dp_size`` must be a whole
number in 1..``MAX_DP`` (each replica costs one request per schema, so a wrong or hostile
``dp_size: 100000`` would otherwise mean endless requests), a non-object ``/server_info``
counts as no information, and an odd ``/v1/models`` leaves the model name unset.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from schemaops.engines.vllm import MalformedMetric, metrics_start
from schemaops.http.answer import clean, server_config_hint, why_not_answer
from schemaops.http.auth import Auth
from schemaops.http.client import Result, ServerClient, ServerUnavailable
from schemaops.http.retry import AttemptOutcome, RetryPolicy
from schemaops.http.urls import redact
from schemaops.warm.baseline import base_for, measure_baselines
from schemaops.warm.detect import EngineChoice, identify, metrics_text
from schemaops.warm.plan import Api, WarmItem, build_request
from schemaops.warm.prove import ProofPolicy, verdict

DpRouting = Literal["auto", "rank", "round-robin"]
# (event, amount): "total" grows the bar, "advance" moves it; "probe_pass" (amount 0) marks
# the moment the warm requests of a round are done and its probes are about to be sent.
Progress = Callable[[str, int], None]
# The most DP replicas warm addresses on one server: each one costs a request per schema.
MAX_DP = 256
# /server_info and /v1/models answer at once; a longer wait means the server is stuck.
INFO_TIMEOUT_S = 30.0

STATUS_BY_OUTCOME = {
    AttemptOutcome.OK: "warmed",
    AttemptOutcome.VERDICT: "invalid",
    AttemptOutcome.TIMEOUT: "timeout",
    AttemptOutcome.REJECTED: "failed",
    AttemptOutcome.TRANSIENT: "failed",
    AttemptOutcome.CONNECTION: "failed",
    AttemptOutcome.MALFORMED: "failed",
}


@dataclass
class WarmOptions:
    """Everything a warm run needs besides the items (see ``schemaops warm --help``)."""

    servers: list[str]
    api: Api = "native"
    concurrency: int = 2
    timeout_s: float = 600.0
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    wait_ready_s: float = 0.0
    #: ``time.monotonic`` when the command began waiting (``run_warm`` sets it): one
    #: ``--wait-ready`` deadline for detection and discovery together; None: from discovery
    ready_since: float | None = None
    dp: int | None = None
    dp_routing: DpRouting = "auto"
    probe: bool = True
    model: str | None = None
    proof: ProofPolicy = field(default_factory=ProofPolicy)
    max_rounds: int = 3
    baseline_samples: int = 3
    engine: EngineChoice = "auto"
    #: ``--api-key`` / ``--header``: sent with every request, scrubbed from every output
    auth: Auth = field(default_factory=Auth)
    #: identities to probe once more after everything was warmed and probed (the earliest
    #: warmed of a size-capped grammar cache): a miss then is an eviction
    reprove: list[str] = field(default_factory=list)


@dataclass
class Cell:
    """One schema on one cache (server, DP replica or round-robin slot)."""

    status: str = "pending"
    cold_ms: float | None = None
    cold_share_ms: float | None = None
    probe_ms: float | None = None
    proof: str | None = None
    error: str | None = None
    attempts: int = 0
    rewarmed: bool = False
    #: the latency of the re-probe after the whole run (``WarmOptions.reprove``)
    reprobe_ms: float | None = None
    #: the re-probe compiled again: the grammar cache evicted the entry after warming
    evicted: bool = False

    def record(self, res: Result) -> None:
        """Take a request's result as the cell's truth; keep the first cold time of a cell
        that stays warmed (a re-warm of a cached key would otherwise erase the compile)."""
        self.attempts += res.attempts
        status = STATUS_BY_OUTCOME[res.outcome]
        hint = server_config_hint(res.last.error) if status == "invalid" else None
        if hint:  # the server refused the request, not the schema: no compile happened
            status = "failed"
        if status in ("warmed", "invalid") and (self.cold_ms is None or self.status != "warmed"):
            self.cold_ms = res.last.elapsed_ms
            self.cold_share_ms = res.last.share_ms
        if status == "warmed" and self.status == "warmed":
            self.rewarmed = True
        self.status = status
        self.error = None if status == "warmed" else _explain(res)
        if hint:
            self.error = f"{self.error} ({hint})"


@dataclass
class ServerRun:
    """What happened on one server: discovery facts, baselines and the cells per item.

    ``url`` is the redacted form (no credentials); ``base_ms`` maps each API path the items
    use to its baseline, so an OpenAI item is never judged against a /generate baseline.
    """

    url: str
    ready: bool = False
    error: str | None = None
    engine: str | None = None
    dp_size: int = 1
    #: None when the DP size is known (reported, or --dp-size); else why it is not
    dp_unknown: str | None = None
    dp_routing: str = "none"
    version: str | None = None
    grammar_backend: str | None = None
    model: str | None = None
    base_ms: dict[str, float | None] = field(default_factory=dict)
    #: the baseline of each distinct ``tools`` array (``tools_key``): the same request with
    #: ``tool_choice: "none"``, which carries the tools (validated, rendered) and no grammar
    tool_base_ms: dict[str, float | None] = field(default_factory=dict)
    restarts: int = 0
    rounds: int = 0
    cells: dict[str, list[Cell]] = field(default_factory=dict)
    #: what the server said that warm could not use, and what that costs (e.g. a
    #: malformed process_start_time_seconds: no restart detection from it)
    notes: list[str] = field(default_factory=list)


def _explain(res: Result) -> str:
    last = res.last.error or f"HTTP {res.last.status}"
    if res.attempts == 0:
        return f"not sent: {last}"
    if res.outcome is AttemptOutcome.TIMEOUT:
        return (
            f"{last}. The server may still be compiling: SGLang drops the result of a request "
            "whose client left, and a server-side compile timeout caches the schema as invalid. "
            "Raise --timeout rather than retrying"
        )
    if res.outcome in (AttemptOutcome.CONNECTION, AttemptOutcome.TRANSIENT):
        return f"{last} (after {res.attempts} attempt(s))"
    return last


class DiscoveryError(Exception):
    """What the server says about itself cannot be used (e.g. an out-of-range dp_size)."""


def dp_size_of(value: Any, shown_url: str) -> int:
    """The number of DP replicas from ``/server_info``'s ``dp_size`` (absent: 1), or raise."""
    if value is None:
        return 1
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise DiscoveryError(
            f"{shown_url}/server_info has a malformed dp_size ({clean(repr(value), 80)}): "
            "pass --dp N with the number of DP replicas"
        )
    if not 1 <= value <= MAX_DP:
        raise DiscoveryError(
            f"{shown_url}/server_info says dp_size {value}, outside 1..{MAX_DP}: warm sends one "
            f"request per schema and replica, so it does not trust that number; pass --dp N "
            f"(at most {MAX_DP}) if the server really has N replicas"
        )
    return value


def _text(value: Any) -> str | None:
    """A server-reported fact as short printable text (``None`` when absent)."""
    if value is None:
        return None
    return clean(value if isinstance(value, str) else json.dumps(value, default=str), 200)


def _model_of(models: Any) -> str | None:
    """The first model id of a ``/v1/models`` answer, or ``None`` if it has none usable."""
    data = models.get("data") if isinstance(models, dict) else None
    first = data[0] if isinstance(data, list) and data else None
    model = first.get("id") if isinstance(first, dict) else None
    return model if isinstance(model, str) and model else None


async def _discover(
    client: ServerClient, run: ServerRun, opts: WarmOptions, need_model: bool, need_native: bool
) -> None:
    """Readiness, the engine (``detect.identify``: SGLang's ``/server_info``, or vLLM's
    ``/version`` and the ``engine`` labels of ``/metrics``), DP ranks and the model name."""
    if opts.wait_ready_s > 0:
        await client.wait_ready(opts.wait_ready_s, since=opts.ready_since)
    else:
        await client.check_ready()
    ident = await identify(client, opts.engine)
    info = ident.info
    run.engine = ident.engine
    run.version = _text(ident.version)
    run.grammar_backend = _text(info.get("grammar_backend"))
    found = ident.dp_ranks if ident.engine == "vllm" else info.get("dp_size")
    run.dp_size = opts.dp if opts.dp else dp_size_of(found, client.shown_url)
    if ident.engine == "vllm" and found is None and not opts.dp:
        # No engine labels (a gateway exposing only /v1, or /metrics off): one request per
        # schema may have reached one engine of several. Said, never taken as 1.
        run.dp_unknown = (
            f"{client.shown_url}/metrics gave no engine labels (unreachable, or a gateway "
            "that exposes only /v1), so the number of vLLM DP engines is unknown: each schema "
            "was warmed on one engine, maybe one of several; pass --dp-size N"
        )
    run.ready = True
    if run.dp_size > 1:
        run.dp_routing = "round-robin" if opts.dp_routing == "round-robin" else "rank"
    if ident.engine == "vllm" and need_native:
        raise DiscoveryError(
            f"{client.shown_url} is vLLM, which has no SGLang /generate: warm it with --api "
            "openai (response_format, or --schema-field structured_outputs[_string])"
        )
    run.model = opts.model
    if need_model and not run.model:  # vLLM checks the name; SGLang accepts any
        run.model = _model_of(await client.get_json("/v1/models", timeout_s=INFO_TIMEOUT_S))


async def _startup_time(client: ServerClient, run: ServerRun) -> Any:
    """SGLang's ``startup_time``; vLLM's ``process_start_time_seconds`` (``/metrics``).

    A malformed value is None (no restart detection from it) with a note on ``run``, once."""
    if run.engine == "vllm":
        try:
            return metrics_start(await metrics_text(client))
        except MalformedMetric as exc:
            note = (
                f"{client.shown_url}/metrics: {exc}; a restart is detected from connection "
                "losses only"
            )
            if note not in run.notes:
                run.notes.append(note)
            return None
    info = await client.get_json("/server_info", timeout_s=INFO_TIMEOUT_S)
    return info.get("startup_time") if isinstance(info, dict) else None


def _slots(run: ServerRun) -> list[int | None]:
    """One slot per cache on the server: DP ranks, or unrouted when there is one replica."""
    return list(range(run.dp_size)) if run.dp_size > 1 else [None]


async def _send(client: ServerClient, run: ServerRun, item: WarmItem, rank: int | None) -> Result:
    path, body, headers = build_request(
        item, model=run.model, dp_rank=rank if run.dp_routing == "rank" else None
    )
    return await client.post(path, body, headers, check=lambda b: why_not_answer(path, b))


async def _warm_pass(
    client: ServerClient,
    run: ServerRun,
    items: list[WarmItem],
    todo: dict[str, list[int]],
    opts: WarmOptions,
    progress: Progress,
) -> None:
    """Warm every (item, slot) in ``todo``.

    Round-robin mode sends each item's slots back to back, one item at a time.
    """
    sem = asyncio.Semaphore(1 if run.dp_routing == "round-robin" else max(1, opts.concurrency))
    slots = _slots(run)

    async def one(item: WarmItem, ranks: list[int | None]) -> None:
        async with sem:
            for r in ranks:
                cell = run.cells[item.identity][slots.index(r)]
                cell.record(await _send(client, run, item, r))
                progress("advance", 1)

    jobs = []
    for item in items:
        ranks = [slots[i] for i in todo.get(item.identity, [])]
        if not ranks:
            continue
        if run.dp_routing == "round-robin":
            jobs.append(one(item, ranks))
        else:
            jobs.extend(one(item, [r]) for r in ranks)
    await asyncio.gather(*jobs)


async def _probe_pass(
    client: ServerClient,
    run: ServerRun,
    items: list[WarmItem],
    opts: WarmOptions,
    progress: Progress,
) -> None:
    """Probe each warmed cell once, one request at a time, so probes do not slow each other."""
    slots = _slots(run)
    progress("probe_pass", 0)
    for item in items:
        cells = run.cells[item.identity]
        base = base_for(run, item)
        for i, cell in enumerate(cells):
            if cell.status != "warmed":
                continue
            res = await _send(client, run, item, slots[i])
            progress("advance", 1)
            if res.outcome is not AttemptOutcome.OK:
                cell.record(res)  # the cache lost it, or the server is gone: the truth is now this
                continue
            cell.probe_ms = res.last.elapsed_ms
            # The cold request may have shared the server with --concurrency others while the
            # probe had it alone: judge the cold by its share (InFlight), not its wall time.
            cold = cell.cold_share_ms if cell.cold_share_ms is not None else cell.cold_ms
            if base is not None and cold is not None:
                cell.proof = verdict(cold, cell.probe_ms, base, opts.proof)


EVICTED = (
    "evicted after warming: probed again once the whole registry was warmed, it compiled "
    "again (re-probe {reprobe:.0f} ms, cold {cold:.0f} ms, baseline {base:.0f} ms), so the "
    "server's grammar cache dropped it to make room for later schemas"
)


async def _reprove_pass(
    client: ServerClient, run: ServerRun, items: list[WarmItem], opts: WarmOptions
) -> None:
    """Probe the earliest-warmed items again, after everything else was warmed and probed:
    in a size-capped LRU those are evicted first. A ``miss`` marks the cell ``evicted``."""
    slots = _slots(run)
    by_id = {it.identity: it for it in items}
    for identity in opts.reprove:
        item = by_id.get(identity)
        base = base_for(run, item) if item else None
        for i, cell in enumerate(run.cells.get(identity, []) if item else []):
            if cell.status != "warmed" or item is None:
                continue
            res = await _send(client, run, item, slots[i])
            if res.outcome is not AttemptOutcome.OK:
                cell.record(res)
                continue
            cell.reprobe_ms = res.last.elapsed_ms
            cold = cell.cold_share_ms if cell.cold_share_ms is not None else cell.cold_ms
            if base is None or cold is None:
                continue
            if verdict(cold, cell.reprobe_ms, base, opts.proof) == "miss":
                cell.evicted = True
                cell.proof = "miss"
                cell.error = EVICTED.format(reprobe=cell.reprobe_ms, cold=cold, base=base)


async def _run_server(
    url: str, items: list[WarmItem], opts: WarmOptions, http: httpx.AsyncClient, progress: Progress
) -> ServerRun:
    run = ServerRun(url=redact(url.rstrip("/")))
    client = ServerClient(
        url,
        http,
        timeout_s=opts.timeout_s,
        policy=opts.policy,
        recover_s=opts.wait_ready_s,
        auth=opts.auth,
        wait_flag="--wait-ready",
    )
    apis = sorted({it.api for it in items})
    try:
        await _discover(client, run, opts, "openai" in apis, "native" in apis)
    except (ServerUnavailable, DiscoveryError) as exc:
        run.error = str(exc)
        for it in items:
            run.cells[it.identity] = [Cell(status="failed", error=run.error)]
        progress("advance", len(items) * (2 if opts.probe else 1))
        return run
    slots = _slots(run)
    run.cells = {it.identity: [Cell() for _ in slots] for it in items}
    extra = len(items) * (len(slots) - 1) * (2 if opts.probe else 1)
    progress("total", extra)
    await measure_baselines(client, run, opts, items)
    started = await _startup_time(client, run)
    todo = {it.identity: list(range(len(slots))) for it in items}
    for rnd in range(1, opts.max_rounds + 1):
        run.rounds = rnd
        downs = client.down_events
        if run.engine == "vllm" and rnd == 1 and len(items) > 1:
            # The latch (warm.latch): the first item alone on every rank, then the rest.
            first = {items[0].identity: todo[items[0].identity]}
            await _warm_pass(client, run, items[:1], first, opts, progress)
            rest = {k: v for k, v in todo.items() if k != items[0].identity}
            await _warm_pass(client, run, items[1:], rest, opts, progress)
        else:
            await _warm_pass(client, run, items, todo, opts, progress)
        if opts.probe:
            await _probe_pass(client, run, items, opts, progress)
        now = await _startup_time(client, run)
        proven = started is not None and now is not None and now != started
        if not (proven or client.down_events > downs):
            break
        run.restarts += 1
        started = now
        if proven:  # a new process: its cache started empty, earlier timings say nothing now
            for cells in run.cells.values():
                for c in cells:
                    if c.status != "invalid":
                        c.cold_ms = c.cold_share_ms = c.probe_ms = c.proof = None
                        c.rewarmed = True
            run.tool_base_ms.clear()
            await measure_baselines(client, run, opts, items)
        # Anything warmed before the break may be gone: warm it again (cheap if it was not).
        todo = {
            k: [i for i, c in enumerate(cs) if c.status != "invalid"] for k, cs in run.cells.items()
        }
        if rnd < opts.max_rounds:
            progress("total", sum(len(v) for v in todo.values()) * (2 if opts.probe else 1))
        else:
            for cells in run.cells.values():
                for c in cells:
                    if c.status == "warmed":
                        c.status, c.error = (
                            "failed",
                            f"server restarted during each of {rnd} rounds; not confirmed warm",
                        )
    if opts.probe and opts.reprove:
        progress("total", len(opts.reprove) * len(slots))
        await _reprove_pass(client, run, items, opts)
        progress("advance", len(opts.reprove) * len(slots))
    return run


async def warm_async(
    items: list[WarmItem], opts: WarmOptions, progress: Progress | None = None
) -> list[ServerRun]:
    """Warm ``items`` on every server in ``opts.servers`` concurrently; one ServerRun each."""
    prog = progress or (lambda _e, _n: None)
    prog("total", len(items) * len(opts.servers) * (2 if opts.probe else 1))
    limits = httpx.Limits(
        max_connections=max(4, opts.concurrency * 2 + 2),
        max_keepalive_connections=max(4, opts.concurrency + 2),
    )
    async with httpx.AsyncClient(limits=limits, trust_env=False) as http:
        return list(
            await asyncio.gather(*(_run_server(u, items, opts, http, prog) for u in opts.servers))
        )


def warm(
    items: list[WarmItem], opts: WarmOptions, progress: Progress | None = None
) -> tuple[list[ServerRun], float]:
    """Synchronous entry point: the runs and the wall time in seconds."""
    t0 = time.perf_counter()
    runs = asyncio.run(warm_async(items, opts, progress))
    return runs, time.perf_counter() - t0
