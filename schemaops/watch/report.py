"""The terminal summary ``watch --once`` prints: the audit's own report of what was counted.

The watch's cumulative tally is the audit's ``Tally`` of the same lines (``run.py``), so the
audit's document builder and terminal renderer (``audit/report/``) describe it as they
describe an audit: one summary, never a second one that could disagree.
"""

from __future__ import annotations

import time
from typing import IO, Any

from rich.console import Console

from schemaops.audit.options import AuditOptions
from schemaops.audit.report.terminal import render_terminal
from schemaops.audit.run.pipeline import AuditResult
from schemaops.audit.tally.stats import Tally


def render_summary(
    out: IO[str],
    targets: list[str],
    aopts: AuditOptions,
    total: Tally,
    skipped: int,
    started: float,
    tools: Any = None,
) -> None:
    """Print the audit's terminal report of ``total`` (the watch's cumulative tally)."""
    result = AuditResult(
        input=", ".join(targets), options=aopts, tally=total, elapsed_s=time.time() - started
    )
    doc: dict[str, Any] = result.to_json()
    if tools is not None and "unknown_tools" in doc:
        # the invented names as watch keeps them: a bounded sample (watch/tools.py)
        doc["unknown_tools"] = dict(tools.sample.most_common())
        if tools.unsampled:
            doc["unknown_tools"]["(others)"] = tools.unsampled
    if skipped:  # request-log events that are no structured output, as the audit says them
        doc["log_events_skipped"] = skipped
    render_terminal(doc, Console(file=out, highlight=False), command="schemaops watch --once")
