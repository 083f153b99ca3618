"""``schemaops watch``: structured-output reliability of growing logs, live.

``run_watch(WatchOptions(...))`` follows JSONL logs (``follow.py``), audits each batch of
new lines with the audit's own loop, keeps cumulative and windowed counters (``live.py``,
``window.py``), flags poisoned schemas and runs a hook (``poison.py``), serves ``/metrics``
(``serve.py``) and saves offsets and totals for a restart (``state.py``). Contract:
docs/contracts/watch.md.
"""

from schemaops.watch.run import WatchOptions, run_watch

__all__ = ["WatchOptions", "run_watch"]
