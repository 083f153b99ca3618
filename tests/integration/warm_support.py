"""Helpers shared by tests/integration/test_warm_*.py (real SGLang dev server, no doubles)."""

from __future__ import annotations

import json
import statistics
import subprocess
from pathlib import Path
from typing import Any

from cli_support import run_cli

from schemaops.registry.model import canonical_text
from schemaops.warm.heavy import heavy_schema, write_heavy_registry
from schemaops.warm.measure import first_request_ms

REPO = Path(__file__).resolve().parents[2]
# 120 pattern properties: ~0.6-1 s to compile on the dev server against tens of ms cached,
# a contrast that survives the noise of 2 cores shared by several test sessions.
PROPS = 120


def heavy(i: int) -> dict[str, Any]:
    """Heavy schema ``i`` as the integration tests use it."""
    return heavy_schema(i, PROPS)


def cli(
    *args: str, timeout: float = 900, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run ``python -m schemaops ...`` as a user would."""
    return run_cli(*args, timeout=timeout, env=env, cwd=REPO)


def warm_json(*args: str, timeout: float = 900) -> tuple[int, dict[str, Any]]:
    """``schemaops warm ... --json``: exit code and the document (stdout must be pure JSON)."""
    r = cli("warm", *args, "--json", timeout=timeout)
    try:
        return r.returncode, json.loads(r.stdout)
    except ValueError as exc:
        raise AssertionError(
            f"stdout is not one JSON document: {r.stdout[:500]!r}\n{r.stderr[-2000:]}"
        ) from exc


def heavy_registry(tmp: Path, start: int, count: int) -> Path:
    """``count`` compile-heavy schemas numbered from ``start`` (unique per test: no shared keys)."""
    root = tmp / f"heavy_{start}_{count}"
    write_heavy_registry(root, 0)
    for i in range(start, start + count):
        (root / f"heavy_{i:03d}.json").write_text(json.dumps(heavy(i), indent=2))
    return root


generate_ms = first_request_ms


def fresh_cold_ms(url: str, first: int, n: int = 3, *, rank: int | None = None) -> float:
    """Median first-request latency of ``n`` never-sent heavy schemas: what "cold" costs now."""
    return statistics.median(
        generate_ms(url, canonical_text(heavy(first + k)), rank=rank)[1] for k in range(n)
    )


def rows_by_schema(doc: dict[str, Any], server: str | None = None) -> dict[str, dict[str, Any]]:
    return {r["schema"]: r for r in doc["results"] if server is None or r["server"] == server}
