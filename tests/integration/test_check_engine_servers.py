"""``check --engine``'s predictions hold on the real dev servers (no server of its own).

Uses the session's SGLang server (xgrammar) and the session's vLLM server (xgrammar, compact)
and asks each engine, for a schema with ``uniqueItems`` and two with ``patternProperties``,
what ``schemaops.check.engine.route`` predicted: served (HTTP 200) or rejected (HTTP 400
with the predicted reason). vLLM's ``auto`` routes were checked once by hand on an ``auto``
dev server (the suite starts only one vLLM server); see the module docstring of
``schemaops/check/engine.py`` and the report of issue 9.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from schemaops.check.engine import route

UNIQUE = {
    "type": "object",
    "properties": {
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": True}
    },
    "required": ["tags"],
}
PATTERN = {
    "type": "object",
    "patternProperties": {"^x_[a-z]+$": {"type": "integer"}},
    "additionalProperties": False,
}
PATTERN_AND_PROPS = {
    "type": "object",
    "properties": {"id": {"type": "integer"}},
    "patternProperties": {"^x_[a-z]+$": {"type": "integer"}},
    "additionalProperties": False,
}
SCHEMAS = {"uniqueItems": UNIQUE, "patternProperties": PATTERN, "both": PATTERN_AND_PROPS}
# The engines' own words for a rejected schema (the predicted reason says which rule fired).
VLLM_XGRAMMAR_400 = "features not supported by xgrammar"


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


@pytest.mark.vllm
@pytest.mark.parametrize("name", list(SCHEMAS))
def test_vllm_xgrammar_does_what_check_predicts(vllm_client: httpx.Client, name: str) -> None:
    predicted = route(SCHEMAS[name], "vllm", "xgrammar")  # the session server's backend
    resp = ask(vllm_client, SCHEMAS[name])
    if predicted.rejected:
        assert resp.status_code == 400, resp.text
        assert VLLM_XGRAMMAR_400 in resp.text
    else:
        assert resp.status_code == 200, resp.text
