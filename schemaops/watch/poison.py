"""Poisoned schemas, live: detection and the ``--on-poisoned`` hook.

A schema is poisoned when SGLang caches its grammar as invalid: a compile that failed or
timed out is stored in the grammar cache as an ``InvalidGrammarObject`` and every later
request with it is aborted with the same error until ``/flush_cache`` or a restart. Two
signs in a log, either one flags the schema:

- the engine's error in a record: SGLang 0.5.23 ``python/sglang/srt/constrained/
  grammar_manager.py`` (read in the wheel the dev server installs, 2026-12-01) aborts such a
  request with ``f"Failed to compile {key[0]} grammar: {value.error_message}"`` (a cached
  invalid grammar, line 193; a failed compile, line 316) or ``f"Grammar preprocessing timed
  out: {req.grammar_key=}"`` (the compile that timed out, line 329, after which the cache
  holds ``InvalidGrammarObject("Grammar preprocessing timed out")``); ``/generate`` answers
  HTTP 400 with that message. Looked for only in a record's error fields (``error``,
  ``message``, ``detail``, ``meta_info.finish_reason.message``), never in model text;
- a run of failures at the end of the schema's outputs: the audit's rule
  (``diagnose.poisoned``: at least ``POISON_MIN`` failures in a row, and a run that long
  unlikely at the schema's earlier failure rate), kept as counters per schema.

A flag clears when an ok output of the schema arrives. The hook runs in a thread, one at a
time, argv only (``shlex.split(CMD)`` and the schema name as one more argument, or in place
of a ``{schema}`` argument), never through a shell, with a timeout, and at most once per
schema per cooldown. It runs in its own process group, and the group is ended (SIGTERM, then
SIGKILL after ``HOOK_GRACE_S``) when the hook times out, when it exits (what it started and
left running), and when watch stops (SIGTERM, SIGINT, the end of ``--once``): a hook never
outlives watch, nor does a child it leaves behind, unless that child left the group itself
(``setsid``, a daemon's double fork).
"""

from __future__ import annotations

import os
import queue
import re
import shlex
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

from schemaops.audit.report.text import visible
from schemaops.audit.tally.diagnose import POISON_CHANCE, POISON_MIN

#: the SGLang 0.5.23 abort messages of a grammar cached (or about to be cached) as invalid
ENGINE_ERROR = re.compile(
    r"Failed to compile (?:json|regex|ebnf|structural_tag) grammar"
    r"|Grammar preprocessing timed out"
)
#: cheap prefilter on the raw line before a record is parsed for its error fields
PREFILTER = b"rammar"
#: hook runs waiting at most (one per schema); a storm of poisoned schemas drops the rest
HOOK_QUEUE = 64
#: seconds a hook's process group has between SIGTERM and SIGKILL
HOOK_GRACE_S = 2.0


def engine_error(raw: bytes, schema_field: str) -> tuple[str | None, str] | None:
    """(schema name, message) when the line is a record of an engine grammar error."""
    if PREFILTER not in raw:
        return None
    try:
        rec = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(rec, dict):
        return None
    msgs: list[Any] = [rec.get("error"), rec.get("message"), rec.get("detail")]
    if isinstance(msgs[0], dict):
        msgs.append(msgs[0].get("message"))
    meta = rec.get("meta_info")
    if isinstance(meta, dict) and isinstance(meta.get("finish_reason"), dict):
        msgs.append(meta["finish_reason"].get("message"))
    for m in msgs:
        if isinstance(m, str) and ENGINE_ERROR.search(m):
            name = rec.get(schema_field)
            return (name if isinstance(name, str) else None), m[:300]
    return None


@dataclass
class Run:
    """A schema's failures since its last ok output (the audit's ``fail_runs`` entry)."""

    failures: int = 0
    since: float = 0.0
    ok_before: int = 0
    total_before: int = 0


@dataclass
class Detector:
    """Per schema: the current failure run and engine errors; the set of flagged schemas."""

    min_failures: int = POISON_MIN
    runs: dict[str, Run] = field(default_factory=dict)
    totals: dict[str, list[int]] = field(default_factory=dict)  # schema -> [outputs, ok]
    engine_errors: Counter = field(default_factory=Counter)
    flagged: dict[str, dict[str, Any]] = field(default_factory=dict)
    flag_count: Counter = field(default_factory=Counter)

    def add_batch(self, by_schema: dict[str, Counter], fail_runs: dict, now: float) -> list[str]:
        """Feed one batch's ``Tally.by_schema`` and ``fail_runs``; the newly flagged."""
        new: list[str] = []
        for schema, cats in by_schema.items():
            n = sum(cats.values())
            ok = cats.get("ok", 0)
            tot = self.totals.setdefault(schema, [0, 0])
            run = self.runs.get(schema)
            tail = fail_runs.get(schema)  # [first line, failures, ok before it in the batch]
            if tail is None:  # the batch ends with an ok output of the schema
                self.runs.pop(schema, None)
                self.flagged.pop(schema, None)
            elif ok == 0 and run is not None:  # all of it continues the run
                run.failures += tail[1]
            else:
                self.runs[schema] = Run(tail[1], now, tot[1] + tail[2], tot[0] + n - tail[1])
                if ok:  # an ok output came before this run: an earlier flag is over
                    self.flagged.pop(schema, None)
            tot[0] += n
            tot[1] += ok
            if schema not in self.flagged and self._poisoned(schema):
                r = self.runs[schema]
                self._flag(schema, f"{r.failures} failures in a row", now, new)
        return new

    def to_json(self, now_mono: float, now_wall: float) -> dict[str, Any]:
        """What a restart continues from (times as Unix time)."""
        return {
            "runs": {s: [r.failures, r.ok_before, r.total_before] for s, r in self.runs.items()},
            "totals": self.totals,
            "flagged": {
                s: {"reason": f["reason"], "since": now_wall - (now_mono - f["since"])}
                for s, f in self.flagged.items()
            },
            "flag_count": dict(self.flag_count),
        }

    def restore(self, doc: dict[str, Any], now_mono: float, now_wall: float) -> None:
        """The saved state back (``to_json``; its types checked on load: ``state.check_state``)."""
        try:
            for s, (n, ok_before, before) in (doc.get("runs") or {}).items():
                self.runs[str(s)] = Run(int(n), now_mono, int(ok_before), int(before))
            for s, (n, ok) in (doc.get("totals") or {}).items():
                self.totals[str(s)] = [int(n), int(ok)]
            for s, f in (doc.get("flagged") or {}).items():
                since = now_mono - max(0.0, now_wall - float(f["since"]))
                self.flagged[str(s)] = {"reason": str(f["reason"]), "since": since}
            self.flag_count.update(
                {str(s): int(n) for s, n in (doc.get("flag_count") or {}).items()}
            )
        except (TypeError, ValueError, KeyError, AttributeError):
            pass

    def _poisoned(self, schema: str) -> bool:
        run = self.runs.get(schema)
        if run is None or run.failures < self.min_failures:
            return False
        before = run.total_before
        rate = (before - run.ok_before) / before if before else 1.0
        return run.ok_before == 0 or rate**run.failures < POISON_CHANCE

    def add_engine_error(self, schema: str, message: str, now: float) -> list[str]:
        self.engine_errors[schema] += 1
        new: list[str] = []
        if schema not in self.flagged:
            self._flag(schema, f"engine error: {message}", now, new)
        return new

    def _flag(self, schema: str, reason: str, now: float, new: list[str]) -> None:
        self.flagged[schema] = {"reason": reason, "since": now}
        self.flag_count[schema] += 1
        new.append(schema)


def end_group(pgid: int, grace_s: float = HOOK_GRACE_S) -> None:
    """SIGTERM the process group ``pgid``, then SIGKILL what is left of it after ``grace_s``.

    Called right after the group's leader was started or reaped by us, so the number still
    names that group (a process group id is not reused while a member lives)."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except OSError:
        return  # no member left
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except OSError:
            return
        time.sleep(0.02)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def check_hook(cmd: str) -> None:
    """Raise ``ValueError`` with the reason when ``cmd`` cannot be a hook's argv."""
    argv = shlex.split(cmd)  # ValueError: "No closing quotation", "No escaped character"
    if not argv or not argv[0]:
        raise ValueError("no command")


def hook_argv(cmd: str, schema: str) -> list[str]:
    """The hook's argv: ``shlex.split(cmd)`` with ``{schema}`` replaced (a whole argument
    only), or the schema name appended as the last argument."""
    argv = shlex.split(cmd)
    if "{schema}" in argv:
        return [schema if a == "{schema}" else a for a in argv]
    return [*argv, schema]


class HookRunner:
    """Runs ``--on-poisoned`` for flagged schemas: bounded in time, rate and concurrency."""

    def __init__(self, cmd: str, timeout_s: float, cooldown_s: float, log: Any) -> None:
        self.cmd = cmd
        self.timeout_s = timeout_s
        self.cooldown_s = cooldown_s
        self.log = log
        self.last: dict[str, float] = {}
        self.results: Counter = Counter()  # (schema, result) -> runs
        self.pending: set[str] = set()
        self.lock = threading.Lock()
        self.queue: queue.Queue[str | None] = queue.Queue(HOOK_QUEUE)
        #: the hook running now (its pid is its process group's id)
        self.current: subprocess.Popen | None = None
        self.stopping = False
        self.thread = threading.Thread(target=self._work, name="watch-hook", daemon=True)
        self.thread.start()

    def last_runs(self, now_mono: float, now_wall: float) -> dict[str, float]:
        """When each schema's hook last ran, as Unix time (saved: the cooldown outlives a
        restart, so a restarted watch never reruns a restart hook at once)."""
        with self.lock:
            return {s: now_wall - (now_mono - t) for s, t in self.last.items()}

    def restore(self, saved: dict[str, Any], now_mono: float, now_wall: float) -> None:
        with self.lock:
            for s, t in (saved or {}).items():
                if isinstance(t, (int, float)) and now_wall - t < self.cooldown_s:
                    self.last[str(s)] = now_mono - max(0.0, now_wall - t)

    def submit(self, schema: str, now: float) -> bool:
        """Queue a run unless one ran within the cooldown or is queued; True if queued."""
        with self.lock:
            last = self.last.get(schema)
            if schema in self.pending or (last is not None and now - last < self.cooldown_s):
                self.results[(schema, "skipped_cooldown")] += 1
                return False
            try:
                self.queue.put_nowait(schema)
            except queue.Full:
                self.results[(schema, "dropped")] += 1
                return False
            self.pending.add(schema)
            self.last[schema] = now
            return True

    def _work(self) -> None:
        while True:
            schema = self.queue.get()
            if schema is None:
                return
            result = self._run(schema)
            if result is None:  # watch is stopping: no new hook starts
                return
            with self.lock:
                self.results[(schema, result)] += 1
                self.pending.discard(schema)
                self.last[schema] = time.monotonic()

    def _run(self, schema: str) -> str | None:
        """Run the hook once; its result, or None when watch stopped before it started."""
        argv = hook_argv(self.cmd, schema)
        shown = visible(" ".join(shlex.quote(a) for a in argv))
        with self.lock:  # ``stop`` sees either no hook or this one: none is left running
            if self.stopping:
                return None
            try:
                proc = subprocess.Popen(  # noqa: S603 - argv list, never a shell
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=2,  # stdout may carry --json-lines: the hook's output to stderr
                    stderr=2,
                    start_new_session=True,
                )
            except OSError as exc:
                self.log(f"hook {shown}: cannot start: {exc.strerror or exc}")
                return "error"
            self.current = proc
        try:
            rc = proc.wait(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            end_group(proc.pid)
            proc.wait()
            result = "timeout"
            self.log(f"hook {shown}: killed after {self.timeout_s:g} s")
        else:
            result = "stopped" if self.stopping else ("ok" if rc == 0 else "failed")
            self.log(f"hook {shown}: exit {rc}" + (" (watch stopping)" if self.stopping else ""))
        end_group(proc.pid)  # what the hook started and left running
        with self.lock:
            self.current = None
        return result

    def stop(self, wait_s: float = 2 * HOOK_GRACE_S + 1.0) -> None:
        """End a running hook's process group (SIGTERM, SIGKILL after ``HOOK_GRACE_S``),
        start no other, and wait for the hook thread (at most ``wait_s``)."""
        with self.lock:
            self.stopping = True
            proc = self.current
        if proc is not None:
            end_group(proc.pid)
        try:
            self.queue.put_nowait(None)
        except queue.Full:
            pass  # the thread returns at its next hook (``stopping``)
        self.thread.join(wait_s)
