"""``warm --wait-ready``: ``summary.wall_s`` covers the readiness wait (issue 33 item 29).

Engine detection (``--engine auto``) waits for readiness before ``warm`` starts its clock, so
a run that spent its whole ``--wait-ready`` waiting reported a wall time near 0. A real
``run_warm`` against a port nothing listens on: the wait is a lower bound of the run (it
cannot end before its deadline), so the assertion does not depend on the machine's speed.
"""

from __future__ import annotations

import time
from pathlib import Path

from cli_support import free_port


def test_wall_s_includes_the_readiness_wait(registry_dir: Path) -> None:
    from schemaops.warm import WarmOptions, WarmSettings, run_warm

    wait = 2.0
    opts = WarmOptions(servers=[f"http://127.0.0.1:{free_port()}"], wait_ready_s=wait)
    settings = WarmSettings(options=opts, registry=registry_dir, schemas=("get_order",))
    t0 = time.monotonic()
    doc, code = run_warm(settings, notify=lambda _line: None)
    elapsed = time.monotonic() - t0
    assert code == 1  # never ready
    assert wait <= doc["summary"]["wall_s"] <= elapsed + 0.05, (doc["summary"], elapsed)
