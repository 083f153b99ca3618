"""Key drift: JSON-equal schemas sent as different bytes, and how they differ."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemaops.registry import load_registry
from schemaops.registry.drift import analyse, differences, tokens, value_key

S = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "café / bar"},
        "n": {"type": "integer", "maximum": 10},
    },
}


def test_value_key_ignores_bytes_but_not_meaning() -> None:
    a = json.dumps(S)
    b = json.dumps(S, separators=(",", ":"), ensure_ascii=False)
    assert value_key(a) == value_key(b)
    other = dict(S, required=["name"])
    assert value_key(json.dumps(other)) != value_key(a)
    assert value_key('{"maximum": 1.0}') == value_key('{"maximum": 1}')
    assert value_key('{"const": true}') != value_key('{"const": 1}')


def test_differences_names_each_kind() -> None:
    compact = json.dumps(S, separators=(",", ":"), ensure_ascii=False)
    assert differences(compact, compact) == []
    assert differences(compact, json.dumps(S, ensure_ascii=False)) == ["whitespace"]
    assert differences(compact, json.dumps(S, separators=(",", ":"))) == ["escaping"]  # \u00e9
    slash = compact.replace("/", "\\/")
    assert differences(compact, slash) == ["escaping"]
    reordered = dict(reversed(list(S.items())))
    assert differences(
        compact, json.dumps(reordered, separators=(",", ":"), ensure_ascii=False)
    ) == ["key_order"]
    assert differences(compact, compact.replace('"maximum":10', '"maximum":10.0')) == [
        "number_format"
    ]
    assert set(differences(compact, json.dumps(reordered))) == {
        "key_order",
        "whitespace",
        "escaping",
    }


def test_tokens_keep_spelling_and_whitespace() -> None:
    ws, toks = tokens('{ "a" :\n"\\u00e9" }')
    assert toks == ["{", '"a"', ":", '"\\u00e9"', "}"]
    assert ws == ["", " ", " ", "\n", " ", ""]
    with pytest.raises(ValueError):
        tokens("{'a': 1}")


def _write_log(path: Path, bodies: list) -> Path:
    path.write_text(
        "".join((b if isinstance(b, str) else json.dumps(b)) + "\n" for b in bodies),
        encoding="utf-8",
    )
    return path


def test_drift_report_counts_variants_and_matches_registry(
    tmp_path: Path, registry_dir: Path
) -> None:
    reg = load_registry(registry_dir)
    s = reg.get("get_order")
    native = s.wire("native")
    spaced = json.dumps(s.bundled())  # what a json.dumps-defaults client sends to /generate
    reordered = json.dumps(dict(reversed(list(s.bundled().items()))), separators=(",", ":"))
    gen = lambda text: {"text": "hi", "sampling_params": {"json_schema": text, "max_new_tokens": 8}}  # noqa: E731
    chat = {
        "model": "m",
        "messages": [{"role": "user", "content": "x"}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "get_order", "schema": s.bundled()},
        },
    }
    log = _write_log(
        tmp_path / "req.jsonl",
        [
            gen(native),
            gen(native),
            gen(spaced),
            gen(reordered),
            chat,
            {"body": json.dumps(gen(native))},
        ]
        + [
            gen(reg.get("kb_search").wire("native")),
            "not json",
            {"messages": [{"role": "user", "content": "plain"}]},
        ],
    )
    doc = analyse(log, reg)
    assert doc["records"] == 9
    assert doc["with_grammar"] == 7
    assert doc["unconstrained"] == 1
    assert [e["line"] for e in doc["input_errors"]] == [8]
    assert doc["schemas"] == 2 and doc["drifting"] == 1
    g = doc["groups"][0]
    assert g["matches"] == "get_order" and g["drift"]
    by_wire = {v["registry_wire"]: v for v in g["variants"]}
    assert by_wire["native"]["count"] == 3 and by_wire["native"]["differs"] == []
    # the OpenAI body's server-side json.dumps equals the registry's openai wire string,
    # and a /generate client sending json.dumps defaults hits that same entry
    assert by_wire["openai"]["count"] == 2
    assert by_wire["openai"]["apis"] == {"native": 1, "openai": 1}
    assert by_wire["openai"]["differs"] == ["whitespace"]
    rest = [v for v in g["variants"] if v["registry_wire"] is None]
    assert len(rest) == 1 and rest[0]["differs"] == ["key_order"]
    assert g["extra_compiles"] == 2 and doc["extra_compiles"] == 2
    assert doc["cache_entries"] == 4
    assert doc["groups"][1]["matches"] == "kb_search" and not doc["groups"][1]["drift"]


def test_lone_surrogates_and_markup_in_a_log_print_cleanly(tmp_path: Path) -> None:
    import subprocess
    import sys

    native = {"sampling_params": {"json_schema": '{"title":"\ud800","type":"string"}'}}
    rf = {"type": "json_schema", "json_schema": {"name": "\udc80[/x]", "schema": {"a": 1}}}
    log = _write_log(
        tmp_path / "s.jsonl", [json.dumps(native), json.dumps({"response_format": rf})]
    )
    repo = Path(__file__).resolve().parents[1]
    for extra in ([], ["--json"]):
        r = subprocess.run(
            [sys.executable, "-m", "schemaops", "registry", "drift", str(log), *extra],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        assert "[/x]" in r.stdout and "\\udc80" in r.stdout


def test_registry_drift_is_its_own_command_module() -> None:
    """Defined in commands/drift.py and added by cli.py: no shim, no lookup by module name."""
    import importlib.util

    from schemaops.commands import drift, registry, warm

    assert callable(drift.drift_cmd)
    assert importlib.util.find_spec("schemaops.commands.registry_drift") is None
    assert not hasattr(warm, "drift_cmd") and not hasattr(warm, "register_drift")
    assert not hasattr(registry, "EXTENSIONS")  # no plug-in lookup by module name at all
