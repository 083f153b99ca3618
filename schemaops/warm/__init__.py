"""Grammar-cache warm-up for SGLang and vLLM servers.

Library API (the CLI ``schemaops warm`` is a thin layer over it)::

    from schemaops.registry import load_registry
    from schemaops.warm import WarmOptions, plan_from_registry, warm, report

    items = plan_from_registry(load_registry("schemas"), api="native")
    opts = WarmOptions(servers=["http://127.0.0.1:30000"])
    runs, wall_s = warm(items, opts)
    doc = report.document(items, runs, opts, wall_s)   # the --json document

Or all of ``schemaops warm`` in one call: ``run_warm(WarmSettings(options=opts,
registry=Path("schemas")))`` returns the ``--json`` document and the exit code.

Modules: ``plan`` (what to send), ``client`` (one server, retries, deadlines, body cap),
``answer`` (what a completed answer looks like; printable server text), ``urls`` (checked
and redacted server URLs), ``retry`` (policy), ``engine`` (the run), ``prove`` (latency
verdicts), ``report`` (JSON, table, exit code), ``progress`` (the bar), ``run`` (the command
as one call), ``fromlog`` (request logs), ``drift`` (byte variants of one schema),
``detect`` (which engine answers: SGLang or vLLM), ``latch`` (vLLM's ``auto`` latch: the
pre-check and the order).
"""

from schemaops.http.retry import AttemptOutcome, RetryPolicy
from schemaops.warm import report
from schemaops.warm.engine import ServerRun, WarmOptions, warm, warm_async
from schemaops.warm.fromlog import plan_from_log
from schemaops.warm.plan import WarmItem, build_request, plan_from_registry
from schemaops.warm.run import WarmSettings, run_warm

__all__ = [
    "AttemptOutcome",
    "RetryPolicy",
    "ServerRun",
    "WarmItem",
    "WarmOptions",
    "WarmSettings",
    "build_request",
    "plan_from_log",
    "plan_from_registry",
    "report",
    "run_warm",
    "warm",
    "warm_async",
]
