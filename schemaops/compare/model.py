"""The compare result model: statuses, verdicts and the shape of one result, defined once.

One result per (schema, backend)::

    {"schema", "backend", "status", "compile_ms", "mask_us": {"mean", "p50", "p99"},
     "advance_us": {...}, "enforcement": {"verdict", "accepts_invalid", "rejects_valid",
     "rejects_valid_content", "accepted_retokenized", "valid", "invalid", "keywords",
     "details", "reason"}, "instance_errors": [str], "error": str|None}

``status`` says what happened to the compile: ``ok``; ``unsupported`` (the backend itself
says it does not implement the schema); ``error`` (the backend failed otherwise);
``timeout``, ``crash``, ``oom`` (the worker process was stopped, died, or ran out of memory).

``enforcement.verdict`` says whether the backend constrains to the schema:

- ``enforced``: every valid example walked to a stop and every invalid one was refused;
- ``accepts_invalid``: an invalid example walked to a stop (the backend ignores a keyword);
- ``rejects_valid``: a valid example could not be produced under any tokenization tried;
- ``unchecked``: the schema compiled but no example was walked: no evidence either way
  (``reason`` says why, e.g. instance generation was not possible);
- ``unsupported``: the backend does not support the schema (``status == "unsupported"``);
- ``failed``: the compile or walk errored, timed out, crashed or ran out of memory
  (``status`` says which). Kept apart from ``unsupported``: a timeout is not the backend
  declining a keyword, and a summary that merged them would misname the problem.
"""

from __future__ import annotations

from typing import Any

OK, UNSUPPORTED, ERROR, TIMEOUT, CRASH, OOM = (
    "ok",
    "unsupported",
    "error",
    "timeout",
    "crash",
    "oom",
)
STATUSES = (OK, UNSUPPORTED, ERROR, TIMEOUT, CRASH, OOM)

ENFORCED, ACCEPTS_INVALID, REJECTS_VALID, UNCHECKED, FAILED = (
    "enforced",
    "accepts_invalid",
    "rejects_valid",
    "unchecked",
    "failed",
)
VERDICTS = (ENFORCED, ACCEPTS_INVALID, REJECTS_VALID, UNCHECKED, UNSUPPORTED, FAILED)

# Per-keyword example counts: invalid examples violating the keyword that the backend
# refused / let through to a stop / could not walk because the schema did not compile.
KW_COUNTS = ("enforced", "ignored", "rejected")


def not_compiled_verdict(status: str) -> str:
    """The verdict of a result whose schema was not compiled and walked: see module doc."""
    return UNSUPPORTED if status == UNSUPPORTED else FAILED


def empty_result(
    schema: str, backend: str, status: str = OK, error: str | None = None
) -> dict[str, Any]:
    """A result with every field present (figures None until measured)."""
    return {
        "schema": schema,
        "backend": backend,
        "status": status,
        "compile_ms": None,
        "mask_us": {"mean": None, "p50": None, "p99": None},
        "advance_us": {"mean": None, "p50": None, "p99": None},
        "enforcement": None,
        "instance_errors": [],
        "error": error,
    }


def unwalked(instances: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Details for a schema that was not compiled and walked: nothing walked, keywords kept."""
    return [
        {
            "kind": i["kind"],
            "index": i["index"],
            "source": i.get("source"),
            "keyword": i.get("keyword"),
            "outcome": "not_compiled",
        }
        for i in instances
    ]
