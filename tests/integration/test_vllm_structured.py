"""Structured output on the real vLLM dev server: what is enforced, and what silently is not.

One server for the whole file (the session's ``vllm_server``). The model is random; only the
grammar layer is real, so every check is about the SHAPE of the output: JSON valid for the
schema when a constraint is active, and provably unconstrained text when it is not.
"""

from __future__ import annotations

import json
import re
import secrets
import string
from typing import Any

import httpx
import jsonschema
import pytest

from schemaops.devserver.vllm import SERVED_MODEL_NAME, VllmServer

pytestmark = pytest.mark.vllm

# Every value is bounded, so the random model finishes the document well within max_tokens
# (an unbounded integer or string can run on until the limit).
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 6},
        "kind": {"enum": ["cat", "dog", "fish"]},
        "ok": {"type": "boolean"},
    },
    "required": ["name", "kind", "ok"],
    "additionalProperties": False,
}
MAX_TOKENS = 64
SEED = 7


def chat(client: httpx.Client, **fields: Any) -> dict[str, Any]:
    """One chat completion; returns ``{"status", "content", "finish_reason", "body"}``."""
    body = {
        "model": SERVED_MODEL_NAME,
        "messages": [{"role": "user", "content": "Describe a pet as JSON."}],
        "max_tokens": MAX_TOKENS,
        "temperature": 1.0,
        "seed": SEED,
        **fields,
    }
    resp = client.post("/v1/chat/completions", json=body)
    data = resp.json()
    out: dict[str, Any] = {"status": resp.status_code, "body": data}
    if resp.status_code == 200:
        choice = data["choices"][0]
        out["content"] = choice["message"]["content"]
        out["finish_reason"] = choice["finish_reason"]
    return out


def assert_valid(result: dict[str, Any], schema: dict[str, Any]) -> Any:
    assert result["status"] == 200, result["body"]
    assert result["finish_reason"] == "stop", result  # the document ended, not cut off
    doc = json.loads(result["content"])
    jsonschema.validate(doc, schema)
    return doc


def test_response_format_json_schema_is_enforced(vllm_client: httpx.Client) -> None:
    rf = {"type": "json_schema", "json_schema": {"name": "pet", "schema": SCHEMA}}
    result = chat(vllm_client, response_format=rf)
    doc = assert_valid(result, SCHEMA)
    assert set(doc) == {"name", "kind", "ok"}
    # Compact whitespace is the dev server's default: no space or newline between tokens
    # outside strings (vLLM's own default would let the random model write whitespace on).
    outside_strings = re.sub(r'"(?:[^"\\]|\\.)*"', '""', result["content"])
    assert not re.search(r"\s", outside_strings), result["content"]


@pytest.mark.parametrize("as_string", [False, True], ids=["object", "string"])
def test_structured_outputs_json_is_enforced(vllm_client: httpx.Client, as_string: bool) -> None:
    schema = json.dumps(SCHEMA) if as_string else SCHEMA
    result = chat(vllm_client, structured_outputs={"json": schema})
    assert_valid(result, SCHEMA)


def canary_schema() -> tuple[dict[str, Any], list[str]]:
    """An enum of fresh random 16-character tokens: no unconstrained output can hit one."""
    alphabet = string.ascii_letters + string.digits
    tokens = ["".join(secrets.choice(alphabet) for _ in range(16)) for _ in range(3)]
    schema = {
        "type": "object",
        "properties": {"token": {"enum": tokens}},
        "required": ["token"],
        "additionalProperties": False,
    }
    return schema, tokens


def test_legacy_guided_json_is_accepted_but_not_enforced(
    vllm_client: httpx.Client, vllm_server: VllmServer
) -> None:
    schema, tokens = canary_schema()
    # Control: the same canary through response_format IS enforced (one of the tokens).
    rf = {"type": "json_schema", "json_schema": {"name": "canary", "schema": schema}}
    enforced = assert_valid(chat(vllm_client, response_format=rf), schema)
    assert enforced["token"] in tokens

    legacy = chat(vllm_client, guided_json=schema)
    assert legacy["status"] == 200, legacy["body"]  # accepted: no error for the client
    assert not any(t in legacy["content"] for t in tokens), legacy["content"]
    with pytest.raises((ValueError, jsonschema.ValidationError)):
        jsonschema.validate(json.loads(legacy["content"]), schema)
    # The only trace is a warning in the server's log.
    log = vllm_server.log_path.read_text(errors="replace") if vllm_server.log_path else ""
    if vllm_server.log_path is not None:  # our own server (not SCHEMAOPS_VLLM_URL)
        assert "removed guided-decoding field(s) ['guided_json']" in log


def test_default_structured_outputs_config_is_logged(vllm_server: VllmServer) -> None:
    """The engine really runs with the compact xgrammar config the dev server passes."""
    if vllm_server.log_path is None:
        pytest.skip("server started outside this session (SCHEMAOPS_VLLM_URL)")
    log = vllm_server.log_path.read_text(errors="replace")
    assert "StructuredOutputsConfig(backend='xgrammar', disable_any_whitespace=True" in log
