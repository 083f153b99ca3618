"""Test schemas that more than one test file uses, one copy each.

- ``UNIQUE``, ``PATTERN``, ``PATTERN_AND_PROPS`` (``SCHEMAS``): schemas whose routing differs
  between engines and backends, for the ``check --engine`` predictions (test_check_engine.py)
  and the same predictions checked on the real SGLang and vLLM dev servers
  (integration/test_check_engine_servers.py, integration/test_vllm_auto_routes.py), so the
  servers are asked about exactly the schemas the predictions were made for.
- ``TAGS``/``TAGS_EX``: ``uniqueItems`` over an enum, with a duplicate as the invalid example
  (xgrammar ignores it and walks the duplicate to a stop; llguidance refuses to compile it),
  for ``check`` (test_check_e2e.py) and ``compare`` (test_compare_e2e.py).
- ``LOOK``/``LOOK_EXAMPLES``: a lookahead pattern xgrammar compiles but does not enforce
  (measured) and no rewrite of ``lower`` expresses: the schema that cannot be lowered
  (test_lower_e2e.py, test_lower_engine_fix.py).
"""

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
TAGS = {
    "type": "object",
    "properties": {
        "tags": {
            "type": "array",
            "items": {"type": "string", "enum": ["billing", "bug", "urgent"]},
            "uniqueItems": True,
        }
    },
    "required": ["tags"],
    "additionalProperties": False,
}
TAGS_EX = {"valid": [{"tags": ["billing", "urgent"]}], "invalid": [{"tags": ["bug", "bug"]}]}
LOOK = {
    "type": "object",
    "properties": {"v": {"type": "string", "pattern": "^(?=.*[0-9]).{4}$"}},
    "required": ["v"],
    "additionalProperties": False,
}
LOOK_EXAMPLES = {"valid": [{"v": "ab1c"}], "invalid": [{"v": "abcd"}]}
