"""``check --engine vllm``'s predictions hold on the session's real vLLM server (xgrammar).

In a ``test_vllm_*`` file so that the session's vLLM server is up only while the vLLM tests
run (pytest orders files by name). The schemas are those of test_check_engine_servers.py.
"""

from __future__ import annotations

import httpx
import pytest
from test_check_engine_servers import SCHEMAS, ask

from schemaops.engines import route

# vLLM's own words when its xgrammar backend refuses a schema (HTTP 400).
VLLM_XGRAMMAR_400 = "features not supported by xgrammar"

pytestmark = pytest.mark.vllm


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_vllm_xgrammar_does_what_check_predicts(vllm_client: httpx.Client, name: str) -> None:
    predicted = route(SCHEMAS[name], "vllm", "xgrammar")  # the session server's backend
    resp = ask(vllm_client, SCHEMAS[name])
    if predicted.rejected:
        assert resp.status_code == 400, resp.text
        assert VLLM_XGRAMMAR_400 in resp.text
    else:
        assert resp.status_code == 200, resp.text
