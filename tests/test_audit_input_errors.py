"""Input errors in ``schemaops audit`` (issue 34, item 2): grouped by reason with their lines,
a missing registry said once and first, a pretty-printed ``.json`` file named as such, and a
gate that never passes silently on lines excluded from p (``--max-input-errors``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from spies import calls_to
from typer.testing import CliRunner

from schemaops.cli import app

REPO = Path(__file__).resolve().parents[1]
OK = '{"order_id": "ORD-20481357"}'
# line 1 ok; line 2 not JSON; lines 3 and 4 name a schema that does not exist; line 5 ok
LINES = [
    json.dumps({"schema": "get_order", "text": OK}),
    '{"schema": "get_order", "text": "{}" "x": 1}',
    json.dumps({"schema": "get_ordr", "text": OK}),
    json.dumps({"schema": "get_ordr", "text": OK}),
    json.dumps({"schema": "get_order", "text": OK}),
]


def run(*args: str):
    return CliRunner().invoke(app, ["audit", *args], env={"COLUMNS": "300"})


@pytest.fixture()
def mixed(tmp_path: Path) -> Path:
    f = tmp_path / "mixed.jsonl"
    f.write_text("\n".join(LINES) + "\n")
    return f


def test_terminal_groups_input_errors_by_reason(mixed: Path) -> None:
    """Each reason once, with its own lines: ``get_ordr`` is never given line 2's JSON error
    (the terminal printed the first line's reason after every line number)."""
    res = run(str(mixed), "--registry", str(REPO / "schemas"))
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "3 input errors (not model outputs" in out
    unknown = next(x for x in out.splitlines() if "get_ordr" in x)
    assert "not JSON" not in unknown and "lines 3, 4" in unknown, unknown
    broken = next(x for x in out.splitlines() if "not JSON" in x)
    assert "get_ordr" not in broken and "line 2" in broken, broken
    # the headline says how many lines p leaves out
    assert "3 input errors (excluded from p)" in " ".join(out.split())


def test_json_groups_input_errors(mixed: Path) -> None:
    res = run(str(mixed), "--registry", str(REPO / "schemas"), "--json")
    doc = json.loads(res.stdout)
    groups = {g["reason"].split(" in ")[0]: g for g in doc["input_error_groups"]}
    assert groups["unknown schema 'get_ordr'"]["lines"] == [3, 4]
    assert groups["unknown schema 'get_ordr'"]["count"] == 2
    # the typo's likely meaning, and it names a schema that exists
    assert "(did you mean 'get_order'?)" in groups["unknown schema 'get_ordr'"]["reason"]
    (other,) = [g for g in doc["input_error_groups"] if "not JSON" in g["reason"]]
    assert other["lines"] == [2] and other["count"] == 1
    assert doc["input_error_groups_complete"] is True


def test_markdown_groups_input_errors(mixed: Path, tmp_path: Path) -> None:
    md = tmp_path / "r.md"
    res = run(str(mixed), "--registry", str(REPO / "schemas"), "--markdown", str(md))
    assert res.exit_code == 0, res.output
    text = md.read_text()
    unknown = next(x for x in text.splitlines() if "ordr" in x)  # Markdown escapes the _
    assert "not JSON" not in unknown and "3, 4" in unknown


def test_missing_registry_is_one_error_first(mixed: Path, tmp_path: Path) -> None:
    res = run(str(mixed), "--registry", str(tmp_path / "nope"))
    assert res.exit_code == 2
    err = res.stderr
    assert err.count("registry folder not found") == 1, err
    assert err.index("registry folder not found") < err.index("not JSON"), err
    assert "lines 1, 3, 4, 5" in err, err


def test_pretty_printed_json_file_says_jsonl(tmp_path: Path) -> None:
    f = tmp_path / "outputs.json"
    f.write_text(json.dumps([{"schema": "get_order", "text": OK}] * 2, indent=2))
    res = run(str(f), "--registry", str(REPO / "schemas"))
    assert res.exit_code == 2
    assert "expected one JSON record per line (JSONL)" in res.stderr, res.stderr
    assert res.stderr.count("\n") <= 3, res.stderr  # one message, not one per line


def test_max_input_errors_gate(mixed: Path) -> None:
    reg = ["--registry", str(REPO / "schemas")]
    assert run(str(mixed), *reg).exit_code == 0  # no gate asked: a report
    over = run(str(mixed), *reg, "--max-input-errors", "2", "--json")
    assert over.exit_code == 1, over.output
    gate = {g["gate"]: g for g in json.loads(over.stdout)["gates"]}["max_input_errors"]
    assert gate["passed"] is False and "3 input errors" in gate["reason"]
    assert "gate failed: max_input_errors" in over.stderr
    assert run(str(mixed), *reg, "--max-input-errors", "3").exit_code == 0
    # a gate on p never passes silently on lines p leaves out: none allowed unless said
    rate = run(str(mixed), *reg, "--max-failure-rate", "0.5", "--json")
    assert rate.exit_code == 1, rate.output
    gates = {g["gate"]: g["passed"] for g in json.loads(rate.stdout)["gates"]}
    assert gates == {"max_failure_rate": True, "max_input_errors": False}
    allowed = run(str(mixed), *reg, "--max-failure-rate", "0.5", "--max-input-errors", "3")
    assert allowed.exit_code == 0, allowed.output
    assert run(str(mixed), *reg, "--max-input-errors", "-1").exit_code == 2


def test_help_names_the_default() -> None:
    res = CliRunner().invoke(app, ["audit", "--help"], env={"COLUMNS": "200"})
    text = " ".join(res.stdout.split())
    assert "--max-input-errors" in text and "default 0 when" in text.lower(), text


def test_grouped_lines_name_their_shard(tmp_path: Path) -> None:
    """Several input files: each grouped line also says its file and its line there."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(LINES[0] + "\n")
    b.write_text(LINES[4] + "\n" + LINES[2] + "\n")
    res = run(str(a), str(b), "--registry", str(REPO / "schemas"))
    assert res.exit_code == 0, res.output
    unknown = next(x for x in res.stdout.splitlines() if "get_ordr" in x)
    assert f"line 3 ({b}:2)" in unknown, unknown


def test_a_suggestion_names_only_a_schema_that_exists() -> None:
    """``did you mean`` for a near miss only: a name like none of them gets the list alone,
    and a suggestion is always one of the known names."""
    from schemaops.registry.loader import unknown_schema_message

    known = ["create_ticket", "get_order", "kb_search", "issue_refund"]
    assert "(did you mean 'kb_search'?)" in unknown_schema_message("kb_serch", Path("s"), known)
    assert "(did you mean 'issue_refund'?)" in unknown_schema_message(
        "issue-refund", Path("s"), known
    )
    plain = unknown_schema_message("weather", Path("s"), known)
    assert "did you mean" not in plain and plain.endswith(
        "known: create_ticket, get_order, issue_refund, kb_search"
    )
    assert "did you mean" not in unknown_schema_message("x", Path("s"), [])
    # a plain tuple is sorted too (only a registry's ``known_names`` is taken as sorted)
    assert unknown_schema_message("weather", Path("s"), tuple(known)) == plain


def test_a_registry_renamed_after_load_suggests_what_it_holds_now(tmp_path: Path) -> None:
    """``Registry.get``'s suggestion follows the names it holds now: a schema renamed after
    load (the count unchanged) is suggested under its new name, never the old one."""
    from schemaops.errors import InputError
    from schemaops.registry.loader import Registry

    reg = Registry(root=tmp_path, schemas={"get_order": object(), "kb_search": object()})  # type: ignore[dict-item]
    with pytest.raises(InputError, match="did you mean 'kb_search'"):
        reg.get("kb_serch")
    reg.schemas["kb_lookup"] = reg.schemas.pop("kb_search")  # same count, another name
    with pytest.raises(InputError) as err:
        reg.get("kb_lookp")
    assert "did you mean 'kb_lookup'" in str(err.value) and "kb_search" not in str(err.value)


def test_suggestions_cost_a_few_comparisons_whatever_the_registry_size(monkeypatch) -> None:
    """A log whose schema field holds request ids names a different unknown schema on every
    line: each suggestion compares the name with the few known names one edit away (an index
    of one-character deletions), never with all of a platform's thousands (difflib over 9,435
    names cost 31 ms a line). Counted, not timed: the comparisons made for 500 distinct names
    against 5,000 known ones."""

    from schemaops.registry import loader

    made = calls_to(monkeypatch, loader.difflib, "SequenceMatcher")
    known = tuple(sorted(f"tool_{i:05d}_args" for i in range(5000)))
    for i in range(500):
        assert loader.closest_name(f"req-{i:08d}", known) is None
    assert len(made) == 0  # nothing one edit away: nothing compared
    assert loader.closest_name("tool_01234_arg", known) == "tool_01234_args"
    assert loader.closest_name("tool_01234_agrs", known) == "tool_01234_args"  # swapped
    assert len(made) <= 40
    assert loader.closest_name("x" * 65, known) is None  # longer than any indexed name


@pytest.mark.parametrize("lazy", [False, True])
def test_the_known_names_are_sorted_once_per_registry(
    lazy: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every line naming an unknown schema gets the message; the registry's names are sorted
    for it once (sorting 9,435 names on each such line cost ~0.3 ms a line). Counted, and the
    messages are the ones the unsorted names give."""
    from schemaops.errors import InputError
    from schemaops.registry import lazy as lazy_mod
    from schemaops.registry import loader
    from schemaops.registry.lazy import LazyRegistry
    from schemaops.registry.loader import load_registry

    for n in ("zeta", "alpha", "get_order"):
        (tmp_path / f"{n}.json").write_text('{"type": "object"}')
    reg = LazyRegistry(tmp_path) if lazy else load_registry(tmp_path)
    sorts = calls_to(monkeypatch, lazy_mod if lazy else loader, "known_names")
    messages = []
    for name in ("get_ordr", "req-1", "req-2"):
        with pytest.raises(InputError) as exc:
            reg.schema(name) if lazy else reg.get(name)
        messages.append(str(exc.value))
    assert len(sorts) == 1
    names = ["zeta", "alpha", "get_order"]  # unsorted: the function sorts them itself
    assert messages == [
        loader.unknown_schema_message(n, tmp_path, names) for n in ("get_ordr", "req-1", "req-2")
    ]
    assert (
        "(did you mean 'get_order'?)" in messages[0]
        and "known: alpha, get_order, zeta" in messages[1]
    )


def test_a_repeated_unknown_name_is_looked_up_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log naming an unknown schema on every line gets the same message each time, and the
    nearest known name is searched for once per name (``closest_name`` over a platform's
    9,435 names cost 1.6 ms a line); the kept messages are bounded."""
    from schemaops.errors import InputError
    from schemaops.registry import lazy as lazy_mod
    from schemaops.registry import loader
    from schemaops.registry.lazy import LazyRegistry

    for n in ("zeta", "alpha", "get_order"):
        (tmp_path / f"{n}.json").write_text('{"type": "object"}')
    reg = LazyRegistry(tmp_path)
    searched = calls_to(monkeypatch, loader, "closest_name")
    monkeypatch.setattr(lazy_mod, "UNKNOWN_KEPT", 3)
    asked = ["get_ordr", "get_ordr", "x1", "x2", "x3", "x4", "x4", "get_ordr"]
    messages = []
    for name in asked:
        with pytest.raises(InputError) as exc:
            reg.schema(name)
        messages.append(str(exc.value))
    # "get_ordr", "x1", "x2" kept (the bound is 3); "x3" and "x4" are searched each time
    assert [args[0] for args in searched] == ["get_ordr", "x1", "x2", "x3", "x4", "x4"]
    names = ["zeta", "alpha", "get_order"]
    assert messages == [loader.unknown_schema_message(n, tmp_path, names) for n in asked]
