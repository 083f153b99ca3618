"""The backend protocol and the enforcement walk, in-process, on the real libraries with the
real Qwen2.5 vocabulary (151,665 tokens; bitmasks sized for its 151,936-wide lm head).

Every fact asserted here was measured on xgrammar 0.2.9, llguidance 1.9.1 and
outlines-core 0.2.14 (see the report in the module docstrings of schemaops.backends.*).
Backends are built once per module: each token table costs about a second.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from corpus_paths import JSTS
from test_backends_isolation import KEYS as RESULT_KEYS  # the result keys, one list

from schemaops.backends import BACKENDS, UnsupportedSchema, allowed_ids, get_backend, is_allowed
from schemaops.compare.core import make_backend, run_task
from schemaops.compare.generate import GenerationError, generate_valid
from schemaops.compare.instances import build_instances, order_like_schema, violated_keyword
from schemaops.compare.report import keyword_matrix, keyword_status
from schemaops.compare.retokenize import string_spans
from schemaops.compare.suite import suite_cases

HEAD = 151936  # Qwen2.5's lm head: wider than the tokenizer

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
RECURSIVE = {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "additionalProperties": False,
        }
    },
    "$ref": "#/$defs/node",
}


def nest(depth: int) -> dict:
    node: dict = {"kids": []}
    for _ in range(depth - 1):
        node = {"kids": [node]}
    return node


@pytest.fixture(scope="module")
def backends() -> dict:
    return {name: make_backend(name, "qwen2.5", HEAD) for name in BACKENDS}


def walk_all(backend, schema, valid=(), invalid=()) -> dict:
    return run_task(backend, json.dumps(schema), build_instances(schema, valid, invalid), name="t")


@pytest.mark.parametrize("name", BACKENDS)
def test_supported_schema_walks_valid_to_stop(backends, name):
    b = backends[name]
    assert b.vocab_size == HEAD and b.allocate_bitmask().shape == (1, HEAD // 32)
    compiled = b.compile(json.dumps(PERSON))
    text = b.serialize({"name": "Ada", "age": 36, "tags": ["x"]})
    ids = b.tokenizer.encode(text, add_special_tokens=False)
    m, mask = compiled.matcher(), b.allocate_bitmask()
    for tid in ids:
        m.fill_mask(mask)
        assert is_allowed(mask, tid)
        assert m.accept_token(tid)
    assert m.can_stop()
    m.fill_mask(mask)
    assert is_allowed(mask, b.stop_token_id)
    # padding ids beyond the tokenizer are never allowed
    assert allowed_ids(mask, HEAD).max() < len(b.tokenizer)
    assert m.accept_token(b.stop_token_id) and m.is_terminated()
    m.reset()
    assert not m.is_terminated() and not m.can_stop()


@pytest.mark.parametrize("name", BACKENDS)
def test_wrong_type_is_refused_at_the_right_token(backends, name):
    res = walk_all(backends[name], PERSON, invalid=[{"name": "Ada", "age": "36"}])
    assert res["status"] == "ok"
    (d,) = res["enforcement"]["details"]
    assert d["outcome"] == "rejected" and d["keyword"] == "type"
    # the refused token is the one that holds the opening quote of "36" (char 20)
    assert d["offset"] <= len('{"name":"Ada","age":') < d["end"]


@pytest.mark.parametrize(
    ("name", "schema", "message"),
    [
        # xgrammar's regex engine has no lookbehind
        ("xgrammar", {"type": "string", "pattern": "(?<=a)b"}, "Lookbehind"),
        # llguidance refuses keywords it does not implement unless lenient
        ("llguidance", {"type": "array", "uniqueItems": True}, "uniqueItems"),
        # outlines-core has no translation for a bare `not`
        ("outlines", {"not": {"type": "string"}}, "Unsupported JSON Schema structure"),
    ],
)
def test_each_backend_rejects_a_schema(backends, name, schema, message):
    with pytest.raises(UnsupportedSchema, match=message):
        backends[name].compile(json.dumps(schema))
    res = walk_all(backends[name], schema, invalid=[[1, 1]] if name == "llguidance" else [])
    assert res["status"] == "unsupported" and message in res["error"]
    assert res["enforcement"]["verdict"] == "unsupported"


def test_broken_schema_is_an_error_not_unsupported(backends):
    res = run_task(backends["xgrammar"], '{"$ref": "#/$defs/missing"}', [])
    assert res["status"] == "error" and "missing" in res["error"]


def test_recursive_schema(backends):
    deep, bad = nest(6), {"kids": [{"kids": 1}]}
    for name in ("xgrammar", "llguidance"):
        res = walk_all(backends[name], RECURSIVE, valid=[deep], invalid=[bad])
        assert res["enforcement"]["verdict"] == "enforced", (name, res["enforcement"])
    # outlines-core unrolls recursion to depth 3: shallow instances pass, deep ones cannot
    res = walk_all(backends["outlines"], RECURSIVE, valid=[nest(2), deep], invalid=[bad])
    enf = res["enforcement"]
    assert res["status"] == "ok" and enf["verdict"] == "rejects_valid"
    assert enf["rejects_valid"] == 1
    (d,) = [d for d in enf["details"] if d["kind"] == "valid"]
    assert d["index"] == 1 and d["where"] == "structure"


@pytest.mark.parametrize(
    ("name", "schema", "invalid", "keyword"),
    [
        (
            "xgrammar",
            {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
            [1, 1],
            "uniqueItems",
        ),
        (
            "xgrammar",
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "dependentRequired": {"a": ["b"]},
            },
            {"a": 1},
            "dependentRequired",
        ),
        ("outlines", {"type": "integer", "multipleOf": 3}, 7, "multipleOf"),
        ("outlines", {"type": "integer", "minimum": 10}, 9, "minimum"),
    ],
)
def test_ignored_keyword_is_caught_as_accepts_invalid(backends, name, schema, invalid, keyword):
    res = walk_all(backends[name], schema, invalid=[invalid])
    enf = res["enforcement"]
    assert res["status"] == "ok"
    assert enf["verdict"] == "accepts_invalid" and enf["accepts_invalid"] == 1
    assert enf["keywords"] == {keyword: {"enforced": 0, "ignored": 1, "rejected": 0}}


def test_llguidance_lenient_silently_drops_what_strict_refuses(backends):
    b = backends["llguidance"]
    schema = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
    b.lenient = True
    try:
        res = walk_all(b, schema, valid=[[1, 2]], invalid=[[1, 1]])
    finally:
        b.lenient = False
    assert res["status"] == "ok" and res["enforcement"]["verdict"] == "accepts_invalid"


def test_keyword_matrix_across_backends(backends):
    schema = {"type": "integer", "multipleOf": 3}
    results = [walk_all(backends[n], schema, valid=[6], invalid=[7]) for n in BACKENDS]
    matrix = keyword_matrix(results)
    assert {n: keyword_status(c) for n, c in matrix["multipleOf"].items()} == {
        "xgrammar": "enforces",
        "llguidance": "enforces",
        "outlines": "ignores",
    }


def test_string_content_refusal_is_decided_over_other_tokenizations(backends):
    # JSON allows U+007F raw in strings; llguidance and outlines refuse it in the canonical
    # tokenization. llguidance accepts it written as a \\u escape (a model can produce the
    # value); outlines' string regex takes neither raw U+007F nor \\u escapes: it cannot
    # produce the value at all, which is rejects_valid (it used to be set aside as
    # "content" and the verdict said enforced).
    schema = {"type": "object", "properties": {"s": {"type": "string"}}}
    ll = walk_all(backends["llguidance"], schema, valid=[{"s": "a\x7fb"}])["enforcement"]
    assert ll["verdict"] == "enforced" and ll["accepted_retokenized"] == 1
    (d,) = ll["details"]
    assert d["where"] == "string" and d["content"] and d["accepted_as"] == "escaped"
    assert d["alternatives"] == {"chars": "rejected", "bytes": "rejected", "escaped": "accepted"}
    # "Zoë" raw and U+007F escaped: llguidance takes \\u escapes for controls only
    ll2 = walk_all(backends["llguidance"], schema, valid=[{"s": "Zoë \x7f"}])["enforcement"]
    assert ll2["verdict"] == "enforced" and ll2["details"][0]["accepted_as"] == "escaped"
    out = walk_all(backends["outlines"], schema, valid=[{"s": "a\x7fb"}])["enforcement"]
    assert out["verdict"] == "rejects_valid"
    assert out["rejects_valid"] == 1 and out["rejects_valid_content"] == 1
    assert out["details"][0]["accepted_as"] is None
    xg = walk_all(backends["xgrammar"], schema, valid=[{"s": "a\x7fb"}])["enforcement"]
    assert xg["verdict"] == "enforced" and xg["accepted_retokenized"] == 0


def test_names_in_other_scripts_are_produced_by_every_backend(backends):
    # What users actually write: no false rejects_valid from the new rule.
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 20}},
        "required": ["name"],
    }
    valid = [{"name": v} for v in ("Zoë", "안녕하세요", "Renée 😀", "日本語")]
    for name in BACKENDS:
        enf = walk_all(backends[name], schema, valid=valid)["enforcement"]
        assert enf["verdict"] == "enforced" and enf["rejects_valid_content"] == 0, name


def test_alternative_tokenizations_spell_the_same_text(backends):
    from schemaops.compare.retokenize import tokenizations

    tok = backends["xgrammar"].tokenizer
    value = {"name": "Zoë 안녕\x7f", "n": 1}
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    canonical = tok.encode(text, add_special_tokens=False)
    alts = dict(tokenizations(tok, text, value))
    assert set(alts) == {"chars", "bytes", "escaped", "ascii"}
    for alt in ("chars", "bytes"):
        assert tok.decode(alts[alt]) == text and len(alts[alt]) > len(canonical), alt
    assert tok.decode(alts["escaped"]) == '{"name":"Zoë 안녕\\u007f","n":1}'
    assert tok.decode(alts["ascii"]) == json.dumps(value, separators=(",", ":"))
    for alt in ("escaped", "ascii"):
        assert json.loads(tok.decode(alts[alt])) == value


def test_keys_are_walked_in_schema_order(backends):
    inst = {"age": 3, "name": "x"}
    assert list(order_like_schema(inst, PERSON)) == ["name", "age"]
    for name in BACKENDS:
        assert (
            walk_all(backends[name], PERSON, valid=[inst])["enforcement"]["verdict"] == "enforced"
        )


def test_xgrammar_strict_mode_refuses_undeclared_properties(backends):
    # SGLang compiles with xgrammar's strict_mode=True: JSON Schema allows extra properties
    # by default, xgrammar does not. A real deployment difference, reported as rejects_valid.
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    res = walk_all(backends["xgrammar"], schema, valid=[{"a": 1, "zz": 2}])
    assert res["enforcement"]["verdict"] == "rejects_valid"
    assert (
        walk_all(backends["llguidance"], schema, valid=[{"a": 1, "zz": 2}])["enforcement"][
            "verdict"
        ]
        == "enforced"
    )


def test_timings_and_result_shape(backends):
    res = walk_all(backends["llguidance"], PERSON, valid=[{"name": "Ada", "age": 1}])
    assert set(res) >= RESULT_KEYS
    assert (
        res["mask_steps"]
        == len(
            backends["llguidance"].tokenizer.encode(
                '{"name":"Ada","age":1}', add_special_tokens=False
            )
        )
        + 1
    )
    for key in ("mask_us", "advance_us"):
        fig = res[key]
        assert 0 < fig["p50"] <= fig["p99"] and fig["mean"] > 0
    assert res["mask_mismatch"] == 0


def test_helpers():
    assert violated_keyword(PERSON, {"name": "x"}) == "required"
    assert violated_keyword({"type": "string", "format": "email"}, "nope") == "format"
    assert violated_keyword(PERSON, {"name": "x", "age": 1}) is None
    assert string_spans('{"a":"b\\"c",1}') == [(2, 3), (6, 10)]
    nested = {
        "type": "object",
        "patternProperties": {"^p_": {"$ref": "#/$defs/pt"}},
        "$defs": {"pt": {"type": "object", "properties": {"x": {}, "y": {}}}},
    }
    ordered = order_like_schema({"p_1": {"y": 2, "x": 1}}, nested)
    assert list(ordered["p_1"]) == ["x", "y"]
    mask = np.zeros((1, 2), dtype=np.int32)
    mask[0, 1] = 1 << 3
    assert is_allowed(mask, 35) and not is_allowed(mask, 34)
    with pytest.raises(ValueError, match="unknown backend"):
        get_backend("vllm")


def test_generated_instances_are_walked(backends):
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "n": {"type": "integer", "minimum": 0},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
        },
        "required": ["name", "n"],
        "additionalProperties": False,
    }
    res = run_task(backends["llguidance"], json.dumps(schema), [], generate=6)
    enf = res["enforcement"]
    assert 1 <= enf["valid"] <= 6 and enf["invalid"] == 0
    # hypothesis fills strings with control characters and rare Unicode: any refusal of a
    # generated instance here must be string content, never structure
    assert enf["rejects_valid"] == 0, enf["details"]
    assert all(d["source"] == "generated" for d in enf["details"])
    # hypothesis-jsonschema cannot follow it: an error with the reason, not a silent []
    with pytest.raises(GenerationError, match="no valid instance|cannot use this schema"):
        generate_valid(RECURSIVE, 3)


@pytest.mark.corpus("json-schema-test-suite")
def test_suite_keyword_attribution(backends):
    groups = [c for c in suite_cases(JSTS) if c.name.split("/")[0] in ("uniqueItems", "multipleOf")]
    assert len(groups) >= 5
    rows = {}
    for name in ("xgrammar", "llguidance"):
        results = [
            run_task(backends[name], c.text, build_instances(c.schema, c.valid, c.invalid))
            for c in groups
        ]
        rows[name] = keyword_matrix(results)
    assert rows["xgrammar"]["uniqueItems"]["xgrammar"]["ignored"] > 0
    assert rows["xgrammar"]["multipleOf"]["xgrammar"]["enforced"] > 0
    assert keyword_status(rows["llguidance"]["uniqueItems"]["llguidance"]) == "rejects"


def _compile_threads_seen(backend, schema_text: str) -> int:
    """Threads this process gained while ``backend`` compiled (sampled from /proc)."""
    import os
    import threading
    import time

    base = len(os.listdir("/proc/self/task")) + 1  # + the sampler itself
    peak, done = [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], len(os.listdir("/proc/self/task")))
            time.sleep(0.0002)

    t = threading.Thread(target=sample)
    t.start()
    try:
        for _ in range(3):
            backend.compile(schema_text)
    finally:
        done.set()
        t.join()
    return peak[0] - base


def test_xgrammar_compiles_with_the_engines_threads_by_default(backends):
    # SGLang builds GrammarCompiler(tokenizer_info) and vLLM passes max_threads=8: xgrammar
    # spreads a compile over 8 threads there, so that is what compare measures by default.
    from schemaops.backends.xgrammar import XGrammarBackend

    xg = backends["xgrammar"]
    assert xg.max_threads == 8
    text = json.dumps({"type": "object", "properties": {f"p{i}": PERSON for i in range(8)}})
    assert _compile_threads_seen(xg, text) >= 2
    one = XGrammarBackend(xg.tokenizer, HEAD, max_threads=1, table_cache=xg.table_cache)
    assert _compile_threads_seen(one, text) == 0


def test_compare_attributes_formats_with_the_projects_one_format_semantics():
    """compare's keyword attribution uses ``schemaops.formats`` like audit and registry: a
    ``regex`` value Python cannot compile (a repetition count too large) is a ``format``
    violation, not an unattributable error ("?")."""
    schema = {"type": "string", "format": "regex"}
    assert violated_keyword(schema, "a{99999999999}") == "format"
    assert violated_keyword(schema, "a{2}") is None
    assert violated_keyword({"type": "string", "format": "time"}, "12:00:00") == "format"


def test_generation_budget_fires_again_when_a_callback_swallowed_the_alarm():
    """hypothesis runs gc callbacks whose exceptions Python only prints ("Exception ignored"):
    an alarm raised inside one is lost. The budget re-fires, so generation still stops."""
    import time

    from schemaops.compare.generate import _OutOfTime, _time_budget

    swallowed = 0
    t0 = time.monotonic()
    with _time_budget(0.2) as budget:
        while time.monotonic() - t0 < 5:
            try:
                time.sleep(0.01)
            except _OutOfTime:  # the first alarm is lost, as in a gc callback
                swallowed += 1
                if swallowed > 1:
                    raise
    assert budget.expired
    assert swallowed == 2
    assert time.monotonic() - t0 < 2


def test_an_alarm_python_ignores_prints_no_traceback(capfd):
    """The alarm raised inside a callback whose exceptions Python ignores went to
    ``sys.unraisablehook``, which printed "Exception ignored in ..." and a traceback on stderr
    of ``lower --target gemini`` (a mutation run, 2026-12-05): the budget drops its own
    ``_OutOfTime`` there while it runs, and passes every other ignored exception on."""
    import sys

    from schemaops.compare.generate import _OutOfTime, _time_budget

    class Dropped:
        def __init__(self, exc: type[BaseException]) -> None:
            self.exc = exc

        def __del__(self) -> None:  # an exception here is "ignored": the unraisable hook
            raise self.exc("from a finaliser")

    seen: list = []
    before = sys.unraisablehook
    sys.unraisablehook = lambda info: seen.append(info.exc_type)
    try:
        with _time_budget(60):
            Dropped(_OutOfTime)  # dropped at once: its finaliser raises the budget's alarm
            Dropped(ValueError)  # not the budget's: passed on
        Dropped(_OutOfTime)  # after the budget: passed on too
    finally:
        sys.unraisablehook = before
    assert seen == [ValueError, _OutOfTime]
    assert "Traceback" not in capfd.readouterr().err


def test_the_generation_budget_covers_reading_the_schema():
    """hypothesis-jsonschema reads a schema (``canonicalish``/``merged``) before drawing from
    it, in time exponential in nested ``if``/``then``/``else``: a 126-level mutant of a real
    JSONSchemaBench schema held ``generate_valid`` for 79 s against a 2 s budget (a mutation
    run, 2026-12-05), since only the drawing was bounded. The reading is bounded too, and the
    caller is told why no instance came. Run in a child with its own bound (120 s, sixty
    times the budget), so the code before the fix fails instead of holding the suite."""
    import subprocess
    import sys

    child = r"""
import sys
from schemaops.compare.generate import GenerationError, generate_valid
s = {"properties": {"filters": {"items": {"id": "/filter", "type": "object"}, "type": "array"}}}
for i in range(126):
    if i % 2:
        s = {"type": "object", "properties": {"a": s}, "required": ["a"]}
    else:
        s = {"type": "array", "items": s}
s = {"if": {"type": "object"}, "then": s, "else": {"type": "array", "items": s}}
try:
    generate_valid(s, 5, max_time_s=1.0)
except GenerationError as exc:
    print(exc)
"""
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "did not finish reading this schema in 1 s" in done.stdout
    assert "Traceback" not in done.stderr
