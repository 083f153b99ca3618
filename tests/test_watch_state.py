"""A saved ``watch`` state that is not what watch writes (``--state-dir``): exit 2 naming the
state file and the bad field, never a traceback, never counters made up from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_cli
from watch_support import mixed, record, registry, watch_once


def _saved(tmp: Path) -> tuple[Path, Path, Path, dict[str, Any]]:
    """A registry, a log and a real state written by watch (with a poison flag and a hook)."""
    reg = registry(tmp)
    log = tmp / "log.jsonl"
    log.write_bytes(mixed(0, 20) + b"".join(record(i, ok=False) for i in range(8)))
    state = tmp / "state"
    watch_once([str(log)], reg, state, on_poisoned="true")
    doc = json.loads((state / "watch-state.json").read_text())
    assert doc["poison"]["hook_last"] and doc["files"][0]["offset"] > 0
    return reg, log, state, doc


def _set(doc: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    cur: Any = doc
    for p in parts[:-1]:
        cur = cur[int(p)] if isinstance(cur, list) else cur[p]
    last = parts[-1]
    if isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value


# (field to set, value, the field name the message must give)
BAD = [
    ("files.0.offset", -5, "files[0].offset"),  # a negative offset: unreadable on every run
    ("files.0.offset", "12", "files[0].offset"),
    ("files.0.ino", 1.5, "files[0].ino"),
    ("files.0.head_len", 257, "files[0].head_len"),
    ("files", {"a": 1}, "files"),
    ("files.0", "x", "files[0]"),
    ("totals.outputs", "x", "totals.outputs"),
    ("totals.outputs", 5.7, "totals.outputs"),  # silently truncated to 5 before
    ("totals.lines", True, "totals.lines"),  # a bool is no count
    ("totals.categories", [1, 2], "totals.categories"),  # Counter([1, 2]): made-up counts
    ("totals.by_schema", {"item": {"ok": "many"}}, "totals.by_schema.item.ok"),
    ("totals.by_schema", {"item": 3}, "totals.by_schema.item"),
    ("totals.skipped_lines", -1, "totals.skipped_lines"),
    ("poison.runs", {"item": [1, 2]}, "poison.runs.item"),
    ("poison.hook_last", "x", "poison.hook_last"),
    ("poison.flagged", {"item": {"reason": 1, "since": 0}}, "poison.flagged.item.reason"),
]


@pytest.mark.parametrize(("dotted", "value", "named"), BAD, ids=[f"{b[0]}={b[1]!r}" for b in BAD])
def test_a_bad_saved_state_is_exit_2_naming_file_and_field(
    tmp_path: Path, dotted: str, value: Any, named: str
) -> None:
    reg, log, state, doc = _saved(tmp_path)
    _set(doc, dotted, value)
    path = state / "watch-state.json"
    path.write_text(json.dumps(doc))
    r = run_cli(
        "watch", str(log), "--registry", str(reg), "--state-dir", str(state), "--once",
        "--listen", "none", "--on-poisoned", "true", "--json",
    )  # fmt: skip
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert str(path) in r.stderr and named in r.stderr, r.stderr
    assert json.loads(path.read_text()) == doc  # left as it was, for the user to look at


def test_a_state_watch_wrote_is_accepted_with_extra_fields(tmp_path: Path) -> None:
    """Fields a later version adds are not problems; the counters continue."""
    reg, log, state, doc = _saved(tmp_path)
    doc["files"][0]["some_new_field"] = {"x": 1}
    (state / "watch-state.json").write_text(json.dumps(doc))
    with open(log, "ab") as fh:
        fh.write(mixed(100, 5))
    again = watch_once([str(log)], reg, state)
    assert again["outputs"] == 33 and again["lines"] == 33
