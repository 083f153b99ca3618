"""``schemaops warm`` on a real vLLM server with two data-parallel ranks (two EngineCores,
two grammar caches).

OPT-IN (``SCHEMAOPS_VLLM_DP=1``): it starts its own ``--dp-size 2`` vLLM server (two engines
on CI's 2 cores, ~4 GB each), and CI's suite runs a single vLLM server.
``SCHEMAOPS_VLLM_DP_URL=http://127.0.0.1:PORT`` uses a running one
(``schemaops dev-server --engine vllm --dp-size 2``) instead.

    SCHEMAOPS_VLLM_DP=1 .venv/bin/python -m pytest tests/integration/test_vllm_warm_dp.py
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import httpx
import pytest

from schemaops.devserver.env import DevServerError
from schemaops.devserver.vllm import start_vllm_servers
from schemaops.warm import WarmOptions, report, warm
from schemaops.warm.heavy import heavy_schema
from schemaops.warm.plan import build_request, response_format_item

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        os.environ.get("SCHEMAOPS_VLLM_DP") != "1" and not os.environ.get("SCHEMAOPS_VLLM_DP_URL"),
        reason="opt-in: starts a --dp-size 2 vLLM server (set SCHEMAOPS_VLLM_DP=1)",
    ),
]


@pytest.fixture(scope="module")
def dp2_url() -> Iterator[str]:
    given = os.environ.get("SCHEMAOPS_VLLM_DP_URL")
    if given:
        yield given.rstrip("/")
        return
    try:
        servers = start_vllm_servers(n=1, dp_size=2)
    except DevServerError as exc:
        pytest.fail(f"could not start the vLLM dp-2 server:\n{exc}", pytrace=False)
    yield servers[0].url
    servers[0].stop()


def test_each_rank_is_warmed_and_proven_on_its_own(dp2_url: str) -> None:
    """Ranks found in /metrics; a schema sent to rank 0 alone (X-data-parallel-rank) leaves
    rank 1 cold, its own EngineCore's cache; warm then addresses both ranks."""
    schema = heavy_schema(secrets.randbelow(10**6) + 1000, 400)
    item = response_format_item("heavy", schema)
    path, body, headers = build_request(item, model="default", dp_rank=0)
    assert httpx.post(dp2_url + path, json=body, headers=headers, timeout=300).status_code == 200
    both = WarmOptions(servers=[dp2_url], engine="vllm", concurrency=1)
    runs, wall = warm([item], both)
    run = runs[0]
    assert run.engine == "vllm" and run.dp_size == 2 and run.dp_routing == "rank"
    (row,) = report.document([item], runs, both, wall)["results"]
    reps = row["replicas"]
    assert [r["status"] for r in reps] == ["warmed", "warmed"]
    # rank 0 had it already; rank 1 compiled it now, in its own engine's cache
    assert reps[1]["cold_ms"] > 3 * reps[0]["cold_ms"], reps
    assert reps[1]["proof"] == "hit", reps
