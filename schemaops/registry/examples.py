"""Sidecar examples: ``NAME.examples.json`` = ``{"valid": [...], "invalid": [...]}``.

Every valid example must validate and every invalid one must not, with jsonschema and
format assertions on (an invalid ``email`` should count, as it does for users). Later parts
(compare, check) walk these instances through grammar backends, so a wrong example here
would make a backend look broken: the loader says exactly which example fails and why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema.exceptions import best_match

from schemaops.registry.drafts import pointer, short


def sidecar_path(schema_path: Path) -> Path:
    """``orders.json`` -> ``orders.examples.json``."""
    return schema_path.with_name(schema_path.stem + ".examples.json")


def read_sidecar(path: Path) -> tuple[list[Any], list[Any], list[tuple[str, str, str]]]:
    """Parse a sidecar: (valid, invalid, problems as (pointer, kind, reason))."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [], [("", "unreadable", f"cannot read examples: {exc}")]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        return [], [], [("", "not_json", f"examples file is not JSON: {exc.msg} at {where}")]
    if not isinstance(data, dict):
        return [], [], [("", "sidecar", 'examples file must be {"valid": [...], "invalid": [...]}')]
    problems = []
    unknown = sorted(set(data) - {"valid", "invalid"})
    if unknown:
        problems.append(("", "sidecar", f"unknown keys {unknown}: expected 'valid' and 'invalid'"))
    lists = []
    for key in ("valid", "invalid"):
        value = data.get(key, [])
        if not isinstance(value, list):
            problems.append((f"/{key}", "sidecar", f"{key!r} must be a list of instances"))
            value = []
        lists.append(value)
    return lists[0], lists[1], problems


def check_examples(
    validator: Any, valid: list[Any], invalid: list[Any]
) -> list[tuple[str, str, str]]:
    """Problems for each valid example that fails and each invalid one that passes."""
    problems = []
    for i, instance in enumerate(valid):
        err = best_match(validator.iter_errors(instance))
        if err is not None:
            at = pointer(err.absolute_path) or "(root)"
            problems.append(
                (
                    f"/valid/{i}",
                    "example_valid_fails",
                    f"valid example {i} is rejected at {at}: {short(err.message)} "
                    f"(keyword {err.validator!r})",
                )
            )
    for i, instance in enumerate(invalid):
        if validator.is_valid(instance):
            problems.append(
                (
                    f"/invalid/{i}",
                    "example_invalid_passes",
                    f"invalid example {i} is accepted: {short(json.dumps(instance), 120)}",
                )
            )
    return problems
