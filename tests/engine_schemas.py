"""Schemas whose routing differs between engines and backends, shared by the ``check --engine``
tests: the library-level predictions (test_check_engine.py) and the same predictions checked
on the real SGLang and vLLM dev servers (integration/test_check_engine_servers.py,
integration/test_vllm_auto_routes.py). One copy, so the servers are asked about exactly the
schemas the predictions were made for."""

from __future__ import annotations

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
