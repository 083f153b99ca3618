"""``lower``'s terminal report prints each residual rule whole (issue 34 item 9): the
application must implement them, and the value was cut at 60 characters with "…"."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_support import run_cli

FORBIDDEN = [f"forbidden-value-number-{n}" for n in ("one", "two", "three")]


def test_residual_rule_is_printed_whole(tmp_path: Path) -> None:
    reg = tmp_path / "schemas"
    reg.mkdir()
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"tag": {"type": "string", "not": {"enum": FORBIDDEN}}},
        "required": ["tag"],
        "additionalProperties": False,
    }
    (reg / "tags.json").write_text(json.dumps(schema))
    # llguidance refuses `not` (real library): the rule goes to the residual
    proc = run_cli(
        "lower",
        "--registry",
        str(reg),
        "--backend",
        "llguidance",
        "--generate",
        "5",
        "-q",
        timeout=600,
    )
    assert proc.returncode in (0, 1), proc.stderr
    [line] = [ln for ln in proc.stdout.splitlines() if "/properties/tag/not" in ln]
    assert json.dumps({"enum": FORBIDDEN}) in line, line
    assert "…" not in line
