"""The ``watch`` loop: follow the logs, audit each batch of new lines, publish, alarm.

Each batch of new complete lines goes through the audit's own loop (``audit_lines``) with
one long-lived ``SchemaResolver``, so the checker, the registry, the categories, the
diagnoses and the watchdog bound per record are the audit's: p over the lines read equals
``schemaops audit`` on the same lines by construction. The batch's tally is merged into the
cumulative one (``live.py``), its per-schema counts go to the windows and the poison
detector, the saved state (offsets + totals, ``state.py``) is written before the next batch
is read, and only then are the new totals shown (``Live.publish``).

Runs in the main thread (the watchdog is a signal); ``/metrics`` is served from another
thread (``serve.py``) from a snapshot taken under a lock. ``--once`` ends with the audit's
terminal report (``report.py``); ``-`` is read by ``stdin.py``.
"""

from __future__ import annotations

import os
import signal
import stat
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import IO, Any

import orjson

from schemaops.audit.options import AuditOptions
from schemaops.audit.read.extract import MAX_LINE_BYTES
from schemaops.audit.read.sglang_log import SchemaNames, adapt
from schemaops.audit.report.text import visible
from schemaops.audit.run.lines import audit_lines
from schemaops.audit.tally import diagnose
from schemaops.audit.tally.stats import Tally
from schemaops.audit.verdict.resolver import SchemaResolver, collector_restored
from schemaops.errors import InputError
from schemaops.watch.files import Batch
from schemaops.watch.follow import Follower
from schemaops.watch.live import Live, summary_line
from schemaops.watch.poison import HookRunner, check_hook, engine_error
from schemaops.watch.state import StateDir, totals_from_json, totals_to_json
from schemaops.watch.stdin import StdinLines
from schemaops.watch.tools import ToolLabels
from schemaops.watchdog import armed

#: where /metrics is served unless ``--listen`` says otherwise (and not with ``--once``)
DEFAULT_LISTEN = "127.0.0.1:9464"
#: ``WatchOptions.listen``'s default: ``DEFAULT_LISTEN`` when following, none with ``once``
AUTO_LISTEN = "auto"
#: the schema of an engine error record whose name is not in the registry
UNKNOWN = "(unknown)"
#: tests only (tests/test_watch_crash.py): a folder; the loop waits between counting a batch
#: and saving it (writes ``paused-N``, waits for ``go-N``) so a test can scrape and kill -9
#: there. The moment is microseconds long: no test could reach it otherwise but by luck.
TEST_PAUSE_ENV = "SCHEMAOPS_WATCH_TEST_PAUSE"


@dataclass
class WatchOptions:
    """Everything ``schemaops watch`` takes (the CLI maps its flags here)."""

    targets: list[str]
    audit: AuditOptions = field(default_factory=AuditOptions)
    #: HOST:PORT of /metrics, None for none; ``AUTO_LISTEN``: ``DEFAULT_LISTEN``, or none
    #: with ``once`` (a one-shot read must not need, or take, the daemon's port)
    listen: str | None = AUTO_LISTEN
    state_dir: str | None = None
    interval: float = 1.0
    windows: list[float] = field(default_factory=lambda: [300.0, 3600.0])
    json_lines: bool = False
    summary_interval: float = 10.0
    on_poisoned: str | None = None
    hook_timeout: float = 60.0
    hook_cooldown: float = 600.0
    poison_min: int = diagnose.POISON_MIN
    from_end: bool = False
    once: bool = False
    max_line: int = MAX_LINE_BYTES
    batch_bytes: int = 8 << 20
    #: print the audit's terminal summary of what was counted at exit (``--once`` does)
    summary: bool = False

    def __post_init__(self) -> None:
        if self.listen == AUTO_LISTEN:
            self.listen = None if self.once else DEFAULT_LISTEN
        if not self.targets:
            raise InputError("watch needs a FILE, folder, glob or '-'")
        if "-" in self.targets and len(self.targets) > 1:
            raise InputError("'-' (stdin) cannot be combined with other inputs")
        for flag, v in (
            ("--interval", self.interval),
            ("--summary-interval", self.summary_interval),
            ("--hook-timeout", self.hook_timeout),
        ):
            if not v > 0:
                raise InputError(f"{flag} must be above 0, got {v}")
        if not self.hook_cooldown >= 0:
            raise InputError(f"--hook-cooldown must be 0 or more, got {self.hook_cooldown}")
        if self.poison_min < 1:
            raise InputError(f"--poison-min must be 1 or more, got {self.poison_min}")
        if self.on_poisoned is not None:
            try:
                check_hook(self.on_poisoned)
            except ValueError as exc:
                raise InputError(
                    f"--on-poisoned {visible(self.on_poisoned)}: {exc} (CMD is split into"
                    " arguments as a POSIX shell would, and run without a shell)"
                ) from None
        for t in self.targets:
            _check_target(t)


def _check_target(target: str) -> None:
    """A FIFO, socket or device named as FILE is refused at once (never waited on)."""
    if target == "-":
        return
    try:
        mode = os.stat(target).st_mode
    except OSError:
        return  # not there yet (or a symlink loop): followed when a file appears
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise InputError(
            f"cannot watch {visible(target)}: not a regular file or folder (a FIFO, socket "
            "or device); use '-' to read a stream"
        )


def run_watch(
    opts: WatchOptions,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
    stop: threading.Event | None = None,
) -> dict[str, Any]:
    """Follow, audit and publish until ``stop`` is set, SIGTERM/SIGINT, the end of stdin,
    or (``once``) the end of what is there; returns the last snapshot."""
    out = out or sys.stdout
    err = err or sys.stderr
    stop = stop or threading.Event()

    def log(msg: str) -> None:
        err.write(f"watch: {msg}\n")
        err.flush()

    state_dir = StateDir(opts.state_dir) if opts.state_dir else None
    try:
        saved = state_dir.load() if state_dir else {}
        totals, engine = totals_from_json(saved.get("totals") or {})
        live = Live(opts, totals, engine)
        live.tools = ToolLabels((saved.get("totals") or {}).get("tools"))
        live.skipped = int((saved.get("totals") or {}).get("skipped_lines") or 0)
        with collector_restored():
            _loop(opts, live, saved, state_dir, out, log, stop)
        return summary_line(live.snapshot())
    finally:
        if state_dir:
            state_dir.close()


def _loop(
    opts: WatchOptions,
    live: Live,
    saved: dict[str, Any],
    state_dir: StateDir | None,
    out: IO[str],
    log: Any,
    stop: threading.Event,
) -> None:
    from schemaops.watch.serve import MetricsServer

    # episodes would grow with the lines: watch keeps counters only
    aopts = replace(opts.audit, episode_field=None, step_field=None)
    resolver = SchemaResolver.for_options(aopts)
    names = SchemaNames(aopts.registry, resolver.fixed.name if resolver.fixed else None)
    stdin = StdinLines(opts.max_line) if opts.targets == ["-"] else None
    files = [t for t in opts.targets if t != "-"]
    follower = Follower(files, saved.get("files"), opts.from_end, opts.max_line, opts.batch_bytes)
    hooks = (
        HookRunner(opts.on_poisoned, opts.hook_timeout, opts.hook_cooldown, log)
        if opts.on_poisoned
        else None
    )
    poison = saved.get("poison") or {}
    mono, wall = time.monotonic(), time.time()
    live.detector.restore(poison, mono, wall)
    live.publish()
    if hooks is not None:
        hooks.restore(poison.get("hook_last") or {}, mono, wall)
    server = MetricsServer(live, opts.listen) if opts.listen else None
    if server is not None:
        log(f"serving http://{server.address}/metrics")
    restore = _on_signals(stop)
    next_summary = time.monotonic() + opts.summary_interval
    noted = saves = 0
    try:
        with armed(aopts.timeout):
            while not stop.is_set():
                batches = follower.poll() if files else []
                if stdin is not None and (b := stdin.batch()) is not None:
                    batches.append(b)
                for b in batches:
                    _count(b, aopts, resolver, names, live, hooks, log)
                ev = follower.events
                for msg in ev.messages[noted:]:
                    log(visible(msg))
                noted = len(ev.messages)
                now = time.monotonic()
                with live.lock:
                    live.lag_bytes = follower.lag_bytes()
                    live.lag_seconds = follower.lag_seconds(now)
                    live.follow_events = {
                        "rotations": ev.rotations,
                        "truncations": ev.truncations,
                        "unreadable": ev.unreadable,
                        "lost_rotations": ev.lost_rotations,
                    }
                    if hooks is not None:
                        live.hooks = Counter(hooks.results)
                if batches:  # counters are shown once saved (``Live``)
                    if state_dir is not None:
                        saves += 1
                        _test_pause(saves)
                        _save(state_dir, follower, live, hooks)
                    live.publish()
                if opts.json_lines and now >= next_summary:
                    _print(out, live)
                    next_summary = now + opts.summary_interval
                busy = follower.more  # a file had more than one batch's worth: read on now
                if opts.once and not busy and stdin is None:
                    break
                if stdin is not None and stdin.ended:
                    break
                if not busy:
                    stop.wait(opts.interval)
        if hooks is not None and opts.once:
            _drain(hooks, opts.hook_timeout + 1.0)
            with live.lock:
                live.hooks = Counter(hooks.results)
    finally:
        restore()
        if state_dir is not None:
            _save(state_dir, follower, live, hooks)
        live.publish()
        follower.close()
        if hooks is not None:
            hooks.stop()
        if server is not None:
            server.close()
        resolver.flush_cache()
    if opts.json_lines:
        _print(out, live)
    if opts.summary:
        from schemaops.watch.report import render_summary

        render_summary(out, opts.targets, aopts, live.total, live.skipped, live.started, live.tools)


def _count(
    b: Batch,
    aopts: AuditOptions,
    resolver: SchemaResolver,
    names: SchemaNames,
    live: Live,
    hooks: HookRunner | None,
    log: Any,
) -> None:
    lines, skipped = adapt(b.lines, names)  # SGLang's own request log, if that is what it is
    if names.error is not None:
        log(visible(names.error))
        names.error = None
    tally = audit_lines(lines, aopts, resolver, first_line=b.first_line) if lines else Tally()
    live.tools.collapse(tally, resolver.toolcalls)  # bounded tool label values (tools.py)
    errors = []
    field_ = aopts.schema_field
    for raw in lines:
        if b"rammar" in raw:  # the prefilter of poison.engine_error, inline: most lines fail it
            found = engine_error(raw, field_)
            if found is not None:
                errors.append((_known(resolver, found[0]), found[1]))
    for schema in live.add(tally, errors, time.time(), skipped):
        why = live.detector.flagged[schema]["reason"]
        log(f"poisoned schema: {visible(schema)} ({visible(why)})")
        if hooks is not None and schema != UNKNOWN:  # the hook gets registry names only
            hooks.submit(schema, time.monotonic())


def _known(resolver: SchemaResolver, name: str | None) -> str:
    """The schema an engine error is counted under: the ``--schema``, a registry name, or
    ``(unknown)``: a line cannot make up label values (bounded series, no hostile names)."""
    if resolver.fixed is not None:
        return resolver.fixed.name
    if name is not None and resolver.has(name):
        return name
    return UNKNOWN


def _save(state_dir: StateDir, follower: Follower, live: Live, hooks: HookRunner | None) -> None:
    mono, wall = time.monotonic(), time.time()
    with live.lock:
        totals = totals_to_json(live.total, live.engine_errors)
        totals["skipped_lines"] = live.skipped
        totals["tools"] = live.tools.to_json()
        poison = live.detector.to_json(mono, wall)
    if hooks is not None:
        poison["hook_last"] = hooks.last_runs(mono, wall)
    doc = {"files": follower.saved(), "totals": totals, "poison": poison, "saved_at": wall}
    try:
        state_dir.save(doc)
    except OSError as exc:
        raise InputError(f"--state-dir: cannot save ({exc.strerror or exc})") from None


def _test_pause(n: int) -> None:
    """Wait at the point between count and save, when a test asks (``TEST_PAUSE_ENV``)."""
    folder = os.environ.get(TEST_PAUSE_ENV)
    if not folder:
        return
    with open(os.path.join(folder, f"paused-{n}"), "w"):
        pass
    while not os.path.exists(os.path.join(folder, f"go-{n}")):
        time.sleep(0.02)


def _print(out: IO[str], live: Live) -> None:
    out.write(orjson.dumps(summary_line(live.snapshot()), default=str).decode() + "\n")
    out.flush()


def _drain(hooks: HookRunner, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        with hooks.lock:
            if not hooks.pending:
                return
        time.sleep(0.05)


def _on_signals(stop: threading.Event) -> Any:
    """SIGTERM and SIGINT end the loop cleanly (state saved); main thread only."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    for s in old:
        signal.signal(s, lambda *_: stop.set())

    def restore() -> None:
        for s, h in old.items():
            signal.signal(s, h)

    return restore
