"""A progress bar for a warm run, on stderr, shown only on a terminal.

The engine reports ``(event, amount)`` (``engine.Progress``): ``"total"`` grows the number of
requests to make (DP replicas and restarts are found during the run), ``"advance"`` counts
finished ones; other events (``"probe_pass"``) do not move the bar.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from schemaops.warm.engine import Progress as ProgressCallback


@contextmanager
def progress_bar(enabled: bool) -> Iterator[ProgressCallback]:
    """Yield the engine's progress callback; the bar is drawn when ``enabled`` and stderr is
    a terminal, and removed when the run ends (stdout stays one JSON document)."""
    err = Console(stderr=True, highlight=False)
    with Progress(
        TextColumn("warming"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not (enabled and err.is_terminal),
    ) as bar:
        task = bar.add_task("warm", total=0)

        def on_progress(event: str, amount: int) -> None:
            if event == "total":
                bar.update(task, total=(bar.tasks[0].total or 0) + amount)
            elif event == "advance":
                bar.advance(task, amount)

        yield on_progress
