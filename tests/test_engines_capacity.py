"""Capacity is part of the engine model (trust #8): each engine's grammar-cache policy, the
registry's compiled footprint measured with the real xgrammar on the served tokenizer, and
``check --engine`` failing a registry that does not fit, with the setting that makes it fit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemaops.check.engine import run_engine_check
from schemaops.engines import ENGINES, get_engine
from schemaops.engines.capacity import MIB, Footprint, fit, needed_mb, xgrammar_footprint
from schemaops.errors import InputError

# A patterned string costs xgrammar about half a MiB on qwen2.5 (measured: 554,412 bytes):
# four of them (distinct property names) are ~2.2 MiB, over a 1 MiB cap, under 512 MiB.
HEAVY = [
    {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "pattern": "^[a-z]{1,30}$"}},
        "required": [f"p{i}"],
    }
    for i in range(4)
]
SMALL = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


def test_policies_are_the_engines_own() -> None:
    vllm, sglang = ENGINES["vllm"], ENGINES["sglang"]
    x = vllm.cache_policy("xgrammar")
    assert (x.kind, x.cap_bytes, x.setting) == ("lru_bytes", 512 * MIB, "VLLM_XGRAMMAR_CACHE_MB")
    assert "backend_xgrammar.py" in x.source and "envs.py" in x.source
    assert vllm.cache_policy("auto", {"VLLM_XGRAMMAR_CACHE_MB": "64"}).cap_bytes == 64 * MIB
    assert vllm.cache_policy("outlines").cap_entries == 128
    assert vllm.cache_policy("guidance").kind == "none"
    assert sglang.cache_policy("xgrammar").kind == "unbounded"
    assert "base_grammar_backend.py" in sglang.cache_policy("xgrammar").source
    with pytest.raises(InputError, match="unknown engine 'tgi'"):
        get_engine("tgi")


def test_footprint_is_xgrammars_memory_size_and_a_bad_schema_takes_no_room() -> None:
    texts = {"heavy": json.dumps(HEAVY[0]), "small": json.dumps(SMALL)}
    texts["bad"] = '{"type": "frobnicate"}'
    fp = xgrammar_footprint(texts, "qwen2.5", timeout_s=120)
    assert set(fp.bytes_by_schema) == {"heavy", "small"}
    assert fp.bytes_by_schema["heavy"] > fp.bytes_by_schema["small"] > 0
    assert "frobnicate" in fp.uncached["bad"] and not fp.unknown  # refused: takes no room


def test_fit_verdicts() -> None:
    policy = ENGINES["vllm"].cache_policy("xgrammar", {"VLLM_XGRAMMAR_CACHE_MB": "1"})
    over = Footprint("xgrammar", "qwen2.5", {"a": 700_000, "b": 700_000})
    verdict = fit(policy, 2, over)
    assert verdict.fits is False and "evict each other" in verdict.reason
    assert (
        verdict.fix is not None and f"VLLM_XGRAMMAR_CACHE_MB={needed_mb(1_400_000)}" in verdict.fix
    )
    assert fit(policy, 1, Footprint("xgrammar", "q", {"a": 1000})).fits is True
    # an unmeasured part: unknown, never a pass (unless what was measured is already over)
    partial = Footprint("xgrammar", "q", {"a": 1000}, {"b": "not measured within 1 s"})
    assert fit(policy, 2, partial).fits is None
    assert (
        fit(policy, 3, Footprint("xgrammar", "q", over.bytes_by_schema, {"c": "?"})).fits is False
    )
    assert fit(ENGINES["sglang"].cache_policy("xgrammar"), 2, over).fits is True  # never evicts


def _registry(tmp_path: Path) -> Path:
    for i, schema in enumerate(HEAVY):
        (tmp_path / f"heavy{i}.json").write_text(json.dumps(schema))
    return tmp_path


def test_check_engine_fails_a_registry_over_the_grammar_cache(tmp_path: Path) -> None:
    """Fails on main before this: the gate knew no cache, and passed all four schemas."""
    report = run_engine_check(
        _registry(tmp_path), "vllm", engine_env={"VLLM_XGRAMMAR_CACHE_MB": "1"}
    )
    cache = report.settings["grammar_cache"]["xgrammar"]
    assert cache["fits"] is False and cache["footprint"]["total_bytes"] > MIB
    assert not report.passed
    for case in report.cases:
        kinds = [p.kind for p in case.problems]
        assert kinds == ["cache_capacity"], case.problems
        assert "VLLM_XGRAMMAR_CACHE_MB=" in case.problems[0].fix


def test_check_engine_passes_the_same_registry_under_the_default_cap(tmp_path: Path) -> None:
    report = run_engine_check(_registry(tmp_path), "vllm", engine_env={})
    cache = report.settings["grammar_cache"]["xgrammar"]
    assert cache["fits"] is True and cache["policy"]["cap_bytes"] == 512 * MIB
    assert report.passed, [c.problems for c in report.cases]
