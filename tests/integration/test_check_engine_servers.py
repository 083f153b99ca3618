"""``check --engine sglang``'s predictions hold on the real SGLang dev server.

Uses the session's SGLang server (xgrammar; no server of its own) and asks it, for a schema
with ``uniqueItems`` and two with ``patternProperties``, what
``schemaops.engines.route`` predicted: served (HTTP 200) or rejected (HTTP 400 with
SGLang's own message). vLLM: test_vllm_check_engine.py (xgrammar, the session's server) and
test_vllm_auto_routes.py (``auto``, opt-in: its own server).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from shared_schemas import SCHEMAS

from schemaops.engines import route


def ask(client: httpx.Client, schema: dict[str, Any]) -> httpx.Response:
    rf = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}
    body = {
        "model": "default",
        "messages": [{"role": "user", "content": "x"}],
        "max_tokens": 16,
        "temperature": 1.0,
        "seed": 1,
        "response_format": rf,
    }
    return client.post("/v1/chat/completions", json=body)


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_sglang_xgrammar_does_what_check_predicts(sglang_client: httpx.Client, name: str) -> None:
    predicted = route(SCHEMAS[name], "sglang", "xgrammar")
    resp = ask(sglang_client, SCHEMAS[name])
    if predicted.rejected:
        assert resp.status_code == 400, resp.text
        assert predicted.reason in resp.text  # SGLang's exact message
    else:
        assert resp.status_code == 200, resp.text
