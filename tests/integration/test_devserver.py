"""The dev server is a real SGLang: health, server info, grammar-constrained /generate, errors."""

from __future__ import annotations

import json

import httpx
import jsonschema
import pytest

from schemaops.registry import load_registry

pytestmark = pytest.mark.integration

# Every value is bounded (enum, boolean, ranged integer, bounded pattern), so even a random
# model reaches the end of the object well within the token budget.
SIMPLE_SCHEMA = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["open", "closed", "pending"]},
        "urgent": {"type": "boolean"},
        "priority": {"type": "integer", "minimum": 1, "maximum": 5},
        "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
    },
    "required": ["status", "urgent", "priority", "code"],
    "additionalProperties": False,
}


def generate(client: httpx.Client, sampling_params: dict, text: str = "Reply in JSON.") -> dict:
    resp = client.post("/generate", json={"text": text, "sampling_params": sampling_params})
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_health(sglang_client: httpx.Client) -> None:
    assert sglang_client.get("/health").status_code == 200


def test_server_info_shows_grammar_backend(sglang_client: httpx.Client) -> None:
    info = sglang_client.get("/server_info").json()
    assert info["grammar_backend"] == "xgrammar"
    assert info["constrained_json_disable_any_whitespace"] is True
    assert info["device"] == "cpu"
    assert info["version"] == "0.5.23"


def test_generate_json_schema_is_enforced(sglang_client: httpx.Client) -> None:
    wire = json.dumps(SIMPLE_SCHEMA, separators=(",", ":"))
    out = generate(sglang_client, {"max_new_tokens": 128, "temperature": 0, "json_schema": wire})
    assert out["meta_info"]["finish_reason"]["type"] == "stop", out
    jsonschema.validate(json.loads(out["text"]), SIMPLE_SCHEMA)


def test_unconstrained_random_model_writes_no_json(sglang_client: httpx.Client) -> None:
    """The contrast that makes the other tests meaningful: without a grammar, noise."""
    out = generate(sglang_client, {"max_new_tokens": 32, "temperature": 0})
    with pytest.raises(ValueError):
        json.loads(out["text"])


def test_generate_with_a_shipped_registry_schema(sglang_client: httpx.Client, registry_dir) -> None:
    schema = load_registry(registry_dir).get("get_order")
    params = {"max_new_tokens": 256, "temperature": 0, "json_schema": schema.wire("native")}
    out = generate(sglang_client, params, text="Where is my order?")
    assert out["meta_info"]["finish_reason"]["type"] == "stop", out
    instance = json.loads(out["text"])
    errors = [e.message for e in schema.validator().iter_errors(instance)]
    assert errors == [], (out["text"], errors)


def test_regex_is_enforced(sglang_client: httpx.Client) -> None:
    out = generate(sglang_client, {"max_new_tokens": 32, "temperature": 0, "regex": "(yes|no)"})
    assert out["text"] in ("yes", "no")


def test_bad_schema_is_rejected_with_400(sglang_client: httpx.Client) -> None:
    resp = sglang_client.post(
        "/generate",
        json={
            "text": "x",
            "sampling_params": {"max_new_tokens": 1, "json_schema": '{"type": "objectx"}'},
        },
    )
    assert resp.status_code == 400
    assert "Failed to compile json grammar" in resp.json()["error"]["message"]


def test_metrics_endpoint(sglang_client: httpx.Client) -> None:
    resp = sglang_client.get("/metrics")
    assert resp.status_code == 200
    assert "sglang" in resp.text
