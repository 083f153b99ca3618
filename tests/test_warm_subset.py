"""``schemaops warm --schema NAME|GLOB``: warm a subset, reading only the named schemas.

A platform registry has thousands of schemas; a deploy that changed two of them warms those
two. Only the selected files are read and checked (``LazyRegistry``): a broken file that is
not selected does not stop the run, a selected one does, with its problems.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from schemaops.cli import app
from schemaops.errors import InputError
from schemaops.registry.loader import RegistryError
from schemaops.warm import WarmOptions, WarmSettings
from schemaops.warm.run import check, plan

OBJ = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def _registry(tmp_path: Path) -> Path:
    reg = tmp_path / "reg"
    reg.mkdir()
    for name in ("billing.refund", "billing.invoice", "search"):
        (reg / f"{name}.json").write_text(json.dumps({**OBJ, "title": name}))
    (reg / "broken.json").write_text('{"type": "nope"}')  # a metaschema problem
    return reg


def _settings(reg: Path, *schemas: str, **extra: object) -> WarmSettings:
    opts = WarmOptions(servers=["http://127.0.0.1:9"])
    return WarmSettings(options=opts, registry=reg, schemas=tuple(schemas), **extra)


def _names(reg: Path, *schemas: str) -> list[str]:
    return sorted(item.name for item in plan(_settings(reg, *schemas), print))


def test_names_and_globs_select_a_subset(tmp_path: Path) -> None:
    reg = _registry(tmp_path)
    assert _names(reg, "search") == ["search"]
    assert _names(reg, "billing.*") == ["billing.invoice", "billing.refund"]
    assert _names(reg, "search", "billing.refund", "search") == ["billing.refund", "search"]


def test_an_unselected_broken_file_is_never_checked(tmp_path: Path) -> None:
    reg = _registry(tmp_path)
    with pytest.raises(RegistryError):  # the whole registry: refused, as before
        plan(_settings(reg), print)
    assert _names(reg, "search") == ["search"]
    with pytest.raises(RegistryError, match="broken.json"):
        plan(_settings(reg, "broken"), print)


def test_a_pattern_matching_nothing_is_a_usage_error(tmp_path: Path) -> None:
    reg = _registry(tmp_path)
    for pattern in ("serch", "nothing.*"):
        with pytest.raises(InputError, match="unknown schema") as err:
            plan(_settings(reg, pattern), print)
        assert err.value.exit_code == 2
    with pytest.raises(InputError, match="--from-log"):
        check(_settings(reg, "search", from_log=tmp_path / "log.jsonl"))


def test_cli_passes_schema_through(tmp_path: Path) -> None:
    """The option reaches the plan: an unknown name exits 2 before any request is sent."""
    reg = _registry(tmp_path)
    res = CliRunner().invoke(
        app, ["warm", "-s", "http://127.0.0.1:9", "-r", str(reg), "--schema", "serch"]
    )
    assert res.exit_code == 2, res.output
    assert "unknown schema 'serch'" in res.output
