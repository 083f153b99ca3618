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

from schemaops.registry.drafts import short
from schemaops.registry.jsontext import MAX_DEPTH, parse, read_text
from schemaops.strings import pointer
from schemaops.watchdog import WatchdogTimeout, armed, watched


def sidecar_path(schema_path: Path) -> Path:
    """``orders.json`` -> ``orders.examples.json``."""
    return schema_path.with_name(schema_path.stem + ".examples.json")


def read_sidecar(path: Path) -> tuple[list[Any], list[Any], list[tuple[str, str, str]]]:
    """Parse a sidecar: (valid, invalid, problems as (pointer, kind, reason))."""
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        return [], [], [("", "unreadable", f"cannot read examples: {exc}")]
    # two levels more than a schema file: {"valid": [instance]}
    data, found = parse(text, MAX_DEPTH + 2)
    if found:
        return [], [], [(ptr, kind, f"examples file: {reason}") for ptr, kind, reason in found]
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
    validator: Any, valid: list[Any], invalid: list[Any], timeout: float = 1.0
) -> list[tuple[str, str, str]]:
    """Problems for each valid example that fails and each invalid one that passes.

    A ``pattern`` can backtrack catastrophically on an example, and ``re`` cannot be
    stopped from inside: the check runs under ``schemaops.watchdog`` (the same SIGALRM bound
    ``audit --timeout`` uses; main thread only, ``timeout`` <= 0 = no bound).
    An example whose check runs past ``timeout`` seconds is ``example_unproven`` (a
    problem: nothing is known about it), and the schema's remaining examples are not run,
    so one schema costs at most about ``timeout`` seconds.
    """
    problems: list[tuple[str, str, str]] = []
    cases = [("valid", i, x) for i, x in enumerate(valid)]
    cases += [("invalid", i, x) for i, x in enumerate(invalid)]
    with armed(timeout):
        for n, (which, i, instance) in enumerate(cases):
            try:
                problems.extend(_watched(validator, which, i, instance))
            except WatchdogTimeout:
                rest = len(cases) - n - 1
                problems.append(
                    (
                        f"/{which}/{i}",
                        "example_unproven",
                        f"{which} example {i} could not be checked within {timeout:g}s (a "
                        "pattern backtracking catastrophically?): unproven, not passed"
                        + (f"; {rest} later example(s) not checked" if rest else ""),
                    )
                )
                break
            except RecursionError:
                problems.append(
                    (f"/{which}/{i}", "too_deep", f"{which} example {i} nested too deeply")
                )
    return problems


def _watched(validator: Any, which: str, i: int, instance: Any) -> list[tuple[str, str, str]]:
    """One example's check, marked as watched for the watchdog while it runs."""
    with watched():
        return _check_one(validator, which, i, instance)


def _check_one(validator: Any, which: str, i: int, instance: Any) -> list[tuple[str, str, str]]:
    problems = []
    if which == "valid":
        from jsonschema.exceptions import best_match  # with a sidecar only (start-up)

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
    else:
        if validator.is_valid(instance):
            problems.append(
                (
                    f"/invalid/{i}",
                    "example_invalid_passes",
                    f"invalid example {i} is accepted: {short(json.dumps(instance), 120)}",
                )
            )
    return problems
