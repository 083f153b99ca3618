"""``schemaops probe`` as one library call: is the constraint really applied, per path?

For each request path (``paths.PATHS``) a few canaries (``canary``) are sent at temperature
1.0; each answer is satisfied, broken or inconclusive, and the path gets one verdict:

- ``enforced``: at least one answer satisfied its canary and none broke one;
- ``unconstrained``: HTTP 200, but an answer broke its canary (the grammar was not applied);
- ``rejected``: the server refused the request (4xx, or a 200 aborted with a message);
- ``error``: no usable answer (timeout, 5xx, connection, a body that is no answer);
- ``unproven``: answers that prove nothing either way (cut off by the token budget while
  still possible; stopped inside the model's reasoning, before a reasoning parser lets the
  grammar start; ``tool_choice: auto`` answered in text, which auto allows).

The HTTP side is ``schemaops.http.client.ServerClient``: whole-request deadlines, capped
bodies, retries on connection errors and 5xx only, credentials redacted from every message.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from schemaops.errors import InputError
from schemaops.http.answer import clean
from schemaops.http.auth import Auth
from schemaops.http.client import Attempt, ServerClient, ServerUnavailable
from schemaops.http.retry import AttemptOutcome, RetryPolicy
from schemaops.http.urls import check_server_url, scrub_all
from schemaops.probe import canary as cn
from schemaops.probe.paths import (
    BY_NAME,
    CHAT,
    NATIVE,
    REASONING_NOTE,
    Engine,
    PathSpec,
    Reading,
    default_paths,
    read,
)
from schemaops.probe.toolsets import judge_offered, load_toolsets, row_name, with_toolsets

VERDICTS = ("enforced", "unconstrained", "rejected", "error", "unproven")
REGISTRY_GATE = frozenset({"unconstrained", "leaky", "rejected", "error"})


@dataclass
class ProbeSettings:
    """What to probe. ``paths``: the paths the deployment uses (exit 1 unless each is
    enforced); ``None`` probes the engine's usual paths and fails only on a silent failure
    (a path ``unconstrained``) or a server that enforces nothing (no path ``enforced``)."""

    server: str
    paths: list[str] | None = None
    registry: Path | None = None
    timeout_s: float = 60.0
    canaries: int = 3
    max_tokens: int = 200
    model: str | None = None
    concurrency: int = 4
    retries: int = 2
    #: ``--api-key`` / ``--header``: sent with every request, scrubbed from the document
    auth: Auth = field(default_factory=Auth)
    #: the registry's tool sets (``probe/toolsets.py``), loaded by ``run_probe``: the
    #: ``tools.*`` paths are probed once per tool set, the canary function beside it
    toolsets: list[Any] = field(default_factory=list)


@dataclass
class Shot:
    """One canary request and what its answer showed."""

    judgement: str  # satisfied | broken | inconclusive | rejected | error
    why: str
    status: int | None = None
    finish_reason: str | None = None
    elapsed_ms: float | None = None
    notes: list[str] = field(default_factory=list)

    # Key by key, like the to_dict of the other results (check/gate.py, lower/fix.py,
    # lower/prove.py, lower/run.py, registry/diff.py): each is its own command's --json
    # contract (here "http_status", not the field's name), so no shared field-to-key mapping.
    def doc(self) -> dict[str, Any]:
        return {
            "judgement": self.judgement,
            "why": self.why,
            "http_status": self.status,
            "finish_reason": self.finish_reason,
            "elapsed_ms": self.elapsed_ms,
            "notes": self.notes,
        }


def check(settings: ProbeSettings) -> list[str] | None:
    """Raise ``InputError`` for settings that cannot work; the known path names given."""
    why = check_server_url(settings.server)
    if why:
        raise InputError(why)
    if settings.canaries < 1 or settings.max_tokens < 64 or settings.timeout_s <= 0:
        # a JSON canary takes ~60 tokens (three random 16-character tokens and the keys)
        raise InputError("--canaries >= 1, --max-tokens >= 64 and --timeout > 0 are needed")
    if settings.paths is None:
        return None
    names = [p.strip() for item in settings.paths for p in item.split(",") if p.strip()]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown or not names:
        raise InputError(
            f"--paths: unknown path(s) {', '.join(map(repr, unknown)) or '(none given)'}; "
            f"known: {', '.join(BY_NAME)}"
        )
    return list(dict.fromkeys(names))


def reasoning_why(reading: Reading) -> str:
    """Why an answer that stopped inside the model's reasoning proves nothing."""
    where = (
        "the whole answer stayed in reasoning_content (a reasoning parser)"
        if REASONING_NOTE in reading.notes
        else "the answer is the model's reasoning, never ended (no end-of-reasoning marker)"
    )
    return (
        f"{where}, finish_reason {reading.finish}: the grammar applies only after the "
        "reasoning ends; no evidence either way"
    )


def judge_shot(
    spec: PathSpec,
    can: cn.Canary,
    att: Attempt,
    reasoning_parser: str | None = None,
    deadline: float | None = None,
) -> Shot:
    """One answer judged. ``reasoning_parser``: the server's (SGLang ``/server_info``); with
    one, raw ``/generate`` text without an end marker may be reasoning the parser did not
    mark (DeepSeek-R1 writes no ``<think>``), so it cannot break a canary."""
    base = {"status": att.status, "elapsed_ms": att.elapsed_ms}
    if att.outcome is AttemptOutcome.OK:
        reading = read(spec, att.body)
        if isinstance(reading, str):
            return Shot("error", reading, **base)
        notes = list(reading.notes)
        if reading.aborted:
            why = f"HTTP 200 with finish_reason abort: {clean(reading.aborted, 300)}"
            return Shot("rejected", why, finish_reason=reading.finish, notes=notes, **base)
        if reading.reasoning == "open":
            why = reasoning_why(reading)
            return Shot("inconclusive", why, finish_reason=reading.finish, notes=notes, **base)
        if spec.tools in ("auto", "auto_strict") and not reading.tool_call:
            why = "the model answered in text, which tool_choice auto allows: no evidence"
            return Shot("inconclusive", why, finish_reason=reading.finish, notes=notes, **base)
        by_set = judge_offered(spec, reading)  # a call to a function of the registry tool set
        if by_set is not None:
            return Shot(by_set[0], by_set[1], finish_reason=reading.finish, notes=notes, **base)
        judgement, why = cn.judge(can, reading.text, reading.truncated, deadline)
        if judgement == "broken" and unmarked_reasoning(spec, reading, reasoning_parser):
            judgement = "inconclusive"
            why = (
                f"the server runs reasoning parser {reasoning_parser!r} and the text has no "
                f"end-of-reasoning marker: it may be reasoning, before the grammar starts; "
                f"no evidence ({why})"
            )
        return Shot(judgement, why, finish_reason=reading.finish, notes=notes, **base)
    if att.outcome in (AttemptOutcome.VERDICT, AttemptOutcome.REJECTED):
        return Shot("rejected", att.error or f"HTTP {att.status}", **base)
    return Shot("error", att.error or att.outcome.value, **base)


def unmarked_reasoning(spec: PathSpec, reading: Reading, reasoning_parser: str | None) -> bool:
    """``/generate`` text of a server with a reasoning parser, no end marker in it."""
    return bool(reasoning_parser) and spec.endpoint == NATIVE and reading.reasoning is None


def path_verdict(shots: list[Shot], spec: PathSpec) -> tuple[str, str]:
    """One verdict for a path from its canaries' answers, and the reason."""
    by = {j: [s for s in shots if s.judgement == j] for j in {s.judgement for s in shots}}
    n = len(shots)
    if by.get("broken"):
        s = by["broken"][0]
        return "unconstrained", f"{len(by['broken'])}/{n} answers broke the canary: {s.why}"
    if by.get("satisfied"):
        extra = [s.why for s in shots if s.judgement in ("rejected", "error")]
        tail = f" (other answers: {'; '.join(extra)})" if extra else ""
        return "enforced", f"{len(by['satisfied'])}/{n} answers satisfied the canary{tail}"
    if by.get("rejected"):
        return "rejected", by["rejected"][0].why
    if by.get("error"):
        return "error", by["error"][0].why
    return "unproven", by["inconclusive"][0].why if by.get("inconclusive") else "no answer"


async def _discover(client: ServerClient, model: str | None) -> dict[str, Any]:
    """Which engine answers (SGLang has ``/server_info``; vLLM says ``owned_by: vllm``)."""
    await client.check_ready()
    info = await client.get_json("/server_info", timeout_s=15.0)
    facts: dict[str, Any] = {}
    engine: Engine = "openai"
    if isinstance(info, dict) and ("grammar_backend" in info or "tp_size" in info):
        engine = "sglang"
        for k in (
            "version",
            "grammar_backend",
            "tool_call_parser",
            "reasoning_parser",
            "constrained_json_disable_any_whitespace",
            "dp_size",
        ):
            if k in info:  # server text: made printable and short, like warm's facts
                v = info[k]
                facts[k] = (
                    v if isinstance(v, (bool, int, float)) or v is None else clean(str(v), 200)
                )
    models = await client.get_json("/v1/models", timeout_s=15.0)
    data = models.get("data") if isinstance(models, dict) else None
    first = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
    if engine == "openai" and first.get("owned_by") == "vllm":
        engine = "vllm"
        version = await client.get_json("/version", timeout_s=15.0)
        if isinstance(version, dict) and "version" in version:
            facts["version"] = clean(str(version["version"]), 200)
    chosen = model or (first.get("id") if isinstance(first.get("id"), str) else None)
    return {"engine": engine, "model": chosen, "facts": facts}


async def _probe_path(
    client: ServerClient,
    spec: PathSpec,
    s: ProbeSettings,
    model: str | None,
    tokens: cn.Tokens,
    sem: asyncio.Semaphore,
    reasoning_parser: str | None = None,
) -> dict[str, Any]:
    shots: list[Shot] = []
    for _ in range(s.canaries):
        can = cn.make(spec.kind, tokens)
        body = spec.build(can, s.max_tokens, model)
        async with sem:
            res = await client.request("POST", spec.endpoint, body)
        # judging a huge answer is bounded like the request: --timeout
        shot = judge_shot(spec, can, res.last, reasoning_parser, time.monotonic() + s.timeout_s)
        shots.append(shot)
        if shot.judgement in ("rejected", "error"):
            break  # the same refusal again proves nothing more and costs a timeout each
    verdict, reason = path_verdict(shots, spec)
    bound = cn.make(spec.kind, cn.Tokens()).bound() if spec.tools is None else None
    doc = {
        "path": spec.name,
        "what": spec.what,
        "endpoint": spec.endpoint,
        "verdict": verdict,
        "reason": reason,
        "canaries": [x.doc() for x in shots],
        "p_false_enforced": bound if verdict == "enforced" else None,
        "p_false_unconstrained": cn.P_FALSE_UNCONSTRAINED,
    }
    if spec.toolset is not None:
        doc["toolset"] = spec.toolset
    if verdict == "enforced" and bound is None:
        doc["caveat"] = (
            "any JSON object passes json_object: no secret to guess"
            if spec.kind == "json_object"
            else "the chat template shows the tool's parameters to the model, so a model that "
            "copies them could pass unconstrained"
        )
    return doc


def registry_verdict(
    path_verdict: str, *, valid: bool, cut: bool, reading: Reading, unmarked: bool
) -> tuple[str, str | None]:
    """A registry row's verdict and, when ``unproven``, why.

    The path's canaries say whether a grammar is applied at all; one output says nothing of
    that (a free model often writes valid JSON for a simple schema). So a valid output is
    ``enforced`` only on an ``enforced`` path; an invalid one is ``leaky`` there (a gap of the
    backend), ``unconstrained`` only on an ``unconstrained`` path, and ``unproven`` on a path
    without evidence either way, as is an output cut at ``max_tokens`` or one that stopped
    inside the model's reasoning (the grammar had not started)."""
    if reading.reasoning == "open":
        return "unproven", reasoning_why(reading)
    if valid:
        if path_verdict == "enforced":
            return "enforced", None
        return "unproven", (
            f"the output is valid, but the path's canaries were {path_verdict}: one valid "
            "output is no evidence that a grammar was applied"
        )
    if cut:
        return "unproven", "cut off at max_tokens while still a possible answer"
    if unmarked:
        return "unproven", (
            "the server runs a reasoning parser and the text has no end-of-reasoning marker: "
            "it may be reasoning, before the grammar starts"
        )
    if path_verdict in ("enforced", "unconstrained"):
        # enforced: a gap of the backend (leaky), not a missing grammar
        return ("leaky" if path_verdict == "enforced" else "unconstrained"), None
    return "unproven", (
        f"the output is invalid, but the path's canaries were {path_verdict}: no evidence "
        "whether a grammar was applied"
    )


def registry_path(engine: Engine) -> PathSpec:
    """The path ``--registry`` requests go by: ``/generate`` on SGLang, else response_format."""
    return BY_NAME["generate.json_schema" if engine == "sglang" else "response_format.json_schema"]


async def _probe_registry(
    client: ServerClient,
    engine: Engine,
    s: ProbeSettings,
    model: str | None,
    path_verdict: str,
    reasoning_parser: str | None = None,
) -> list[dict[str, Any]]:
    """One real request per registry schema on the engine's JSON path, its output audited."""
    from schemaops.audit.tally.diagnose import FIXES, diagnose
    from schemaops.audit.verdict.classify import parse_output
    from schemaops.audit.verdict.validate import SchemaChecker
    from schemaops.registry import load_registry

    registry = load_registry(s.registry)  # type: ignore[arg-type]
    spec = registry_path(engine)
    rows = []
    for schema in registry:
        if spec.endpoint == NATIVE:
            body = {
                "text": "Fill in the form.",
                "sampling_params": {
                    "json_schema": schema.wire("native"),
                    "max_new_tokens": s.max_tokens * 4,
                    "temperature": 1.0,
                },
            }
        else:
            rf = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema.bundled()}}
            body = {
                "model": model or "default",
                "messages": [{"role": "user", "content": "Fill in the form."}],
                "max_tokens": s.max_tokens * 4,
                "temperature": 1.0,
                "response_format": rf,
            }
        res = await client.request("POST", spec.endpoint, body)
        row: dict[str, Any] = {"schema": schema.name, "path": spec.name}
        att = res.last
        reading = read(spec, att.body) if att.outcome is AttemptOutcome.OK else None
        if att.outcome in (AttemptOutcome.VERDICT, AttemptOutcome.REJECTED):
            row.update(verdict="rejected", category=None, message=att.error)
        elif reading is None or isinstance(reading, str):
            row.update(verdict="error", category=None, message=att.error or reading)
        elif reading.aborted:
            row.update(verdict="rejected", category=None, message=clean(reading.aborted, 300))
        else:
            value, failure = parse_output(reading.text or "")
            out = failure or SchemaChecker(schema.name, schema.bundled(), checked=True).check(value)
            verdict, reason = registry_verdict(
                path_verdict,
                valid=out.category == "ok",
                cut=out.subtype == "truncated" and reading.truncated,
                reading=reading,
                unmarked=unmarked_reasoning(spec, reading, reasoning_parser),
            )
            row.update(
                verdict=verdict,
                category=out.category,
                subtype=out.subtype,
                message=out.message,
                finish_reason=reading.finish,
            )
            if reason:
                row["reason"] = reason
            if verdict != "enforced":
                found = diagnose(att.body, reading.text or "", out)
                row["diagnoses"] = {d: FIXES[d] for d in found}
        rows.append(row)
    return rows


async def probe_async(s: ProbeSettings, gate: list[str] | None) -> dict[str, Any]:
    """The probe document (see ``run_probe``)."""
    policy = RetryPolicy(retries=s.retries, base_s=0.5, cap_s=2.0)
    async with httpx.AsyncClient() as http:
        client = ServerClient(s.server, http, timeout_s=s.timeout_s, policy=policy, auth=s.auth)
        doc: dict[str, Any] = {"server": client.shown_url, "engine": None, "paths": []}
        try:
            found = await _discover(client, s.model)
        except ServerUnavailable as exc:
            doc["error"] = str(exc)
            return doc
        doc.update(engine=found["engine"], model=found["model"], server_facts=found["facts"])
        specs = [BY_NAME[n] for n in gate] if gate else default_paths(found["engine"])
        specs = with_toolsets(specs, s.toolsets)  # tools.* once per registry tool set
        if s.registry is not None and registry_path(found["engine"]) not in specs:
            specs.append(registry_path(found["engine"]))  # its verdict reads the registry rows
        tokens, sem = cn.Tokens(), asyncio.Semaphore(s.concurrency)
        parser = found["facts"].get("reasoning_parser")
        parser = parser if isinstance(parser, str) and parser else None
        rows = await asyncio.gather(
            *(_probe_path(client, sp, s, found["model"], tokens, sem, parser) for sp in specs)
        )
        denied = _denied(rows)
        if rows and all(r["verdict"] == "error" for r in rows):
            # no answer anywhere (connection lost, 5xx, timeouts): nothing was probed
            doc["error"] = f"{client.shown_url}: no path could be probed ({rows[0]['reason']})"
        elif denied is not None:  # every path refused for want of (right) credentials
            doc["error"] = f"{client.shown_url}: no path could be probed ({s.auth.denied(denied)})"
        doc["paths"] = rows
        if s.registry is not None and "error" not in doc:
            spec = registry_path(found["engine"])
            verdict = next(r["verdict"] for r in rows if r["path"] == spec.name)
            doc["registry"] = await _probe_registry(
                client, found["engine"], s, found["model"], verdict, parser
            )
        return scrub_all(doc, [s.server], s.auth.secrets())


def _denied(rows: list[dict[str, Any]]) -> int | None:
    """401 or 403 when every path's every answer was that (credentials missing or wrong)."""
    statuses = {c.get("http_status") for r in rows for c in r.get("canaries", [])}
    if rows and len(statuses) == 1 and statuses <= {401, 403}:
        return statuses.pop()
    return None


def summarise(doc: dict[str, Any], gate: list[str] | None) -> None:
    """Add ``counts``, ``gate`` and ``failed`` (what makes the exit code 1) to ``doc``."""
    doc["counts"] = dict(Counter(p["verdict"] for p in doc["paths"]))
    not_enforced = [row_name(p) for p in doc["paths"] if p["verdict"] != "enforced"]
    if gate:
        # the registry's own path is gated too: its rows are judged by its verdict, so a
        # registry "checked" on a path that enforces nothing must not pass
        own = [r["path"] for r in doc.get("registry", [])]
        gate = list(dict.fromkeys([*gate, *own]))
        failed = [
            row_name(p) for p in doc["paths"] if p["verdict"] != "enforced" and p["path"] in gate
        ]
        rule = "each path in --paths" + (" and the --registry path" if own else "") + " enforced"
    else:
        # Without --paths the user has not said which paths matter: a loud refusal (a tool
        # path without a tool parser) is no finding, a silent 200 is, and so is a server
        # that enforces nothing at all.
        failed = [row_name(p) for p in doc["paths"] if p["verdict"] == "unconstrained"]
        if doc["paths"] and len(not_enforced) == len(doc["paths"]):
            failed = not_enforced
        rule = "no path unconstrained, and at least one enforced"
    failed += [
        f"registry:{r['schema']}" for r in doc.get("registry", []) if r["verdict"] in REGISTRY_GATE
    ]
    doc["gate"] = {"paths": gate, "rule": rule}
    doc["failed"] = failed
    doc["false_verdict"] = {
        "p_false_enforced_json": cn.P_FALSE_ENFORCED_JSON,
        "p_false_enforced_regex_ebnf": cn.P_FALSE_ENFORCED_TEXT,
        "p_false_enforced_choice": cn.P_FALSE_ENFORCED_CHOICE,
        "p_false_unconstrained": cn.P_FALSE_UNCONSTRAINED,
        "token": f"{cn.TOKEN_LEN} characters of [A-Za-z0-9], enum of {cn.ENUM_SIZE}",
    }


def exit_code(doc: dict[str, Any]) -> int:
    """2 nothing probed, 1 a gated path not enforced, 0 otherwise."""
    if doc.get("error"):
        return 2
    return 1 if doc.get("failed") else 0


def run_probe(settings: ProbeSettings) -> tuple[dict[str, Any], int]:
    """Check the settings, probe every path, and return ``(document, exit code)``."""
    gate = check(settings)
    if settings.registry is not None and not Path(settings.registry).is_dir():
        raise InputError(f"--registry {settings.registry}: not a folder")
    if settings.registry is not None:
        settings.toolsets = load_toolsets(Path(settings.registry))
    doc = asyncio.run(probe_async(settings, gate))
    summarise(doc, gate)
    return doc, exit_code(doc)


__all__ = ["CHAT", "NATIVE", "VERDICTS", "ProbeSettings", "exit_code", "run_probe", "path_verdict"]
