"""What the audit loop (``lines.py``) records for an output that is not a plain ok: an input
error, a failure's counts and diagnoses, a ``--records`` row. Kept apart from the loop, which
is written for the ok path's speed; these run once per failure or row."""

from __future__ import annotations

import json
from typing import IO, Any

import orjson

from schemaops.audit.options import AuditOptions
from schemaops.audit.read.extract import Output, record_id
from schemaops.audit.tally.diagnose import diagnose
from schemaops.audit.tally.stats import Tally
from schemaops.audit.verdict.classify import VIOLATION, Classification


def unusable_schema(name: str | None, exc: Exception) -> str:
    """Why an output could not be judged against schema ``name`` (its checker raised: the
    schema's fault, not the output's). A ``$ref`` that does not resolve is named: a remote or
    missing resource is never fetched (``registry.refs.no_fetch``), which a tool set offered
    in a logged request can hold, as the registry's own files cannot."""
    import referencing.exceptions

    if isinstance(exc, referencing.exceptions.Unresolvable):
        ref = str(getattr(exc, "ref", ""))[:200]
        return (
            f"cannot validate against schema {name!r}: its $ref {ref!r} does not resolve (a"
            " remote or missing schema is never fetched: inline it)"
        )
    return f"cannot validate against schema {name!r}: {type(exc).__name__}: {exc}"[:300]


def input_error(
    tally: Tally,
    out: IO[bytes] | None,
    line: int,
    rid: Any,
    message: str,
    shard: str | None = None,
    first_line: int = 1,
) -> None:
    tally.add_input_error(line, message)
    if out is not None:
        doc: dict[str, Any] = {"line": line}
        if shard is not None:
            doc["shard"], doc["shard_line"] = shard, line - first_line + 1
        if rid is not None:
            doc["id"] = rid
        doc.update(category="input_error", subtype=None, path=None, message=message)
        out.write(dumps_row(doc))


def count_failure(
    tally: Tally,
    line: int,
    rec: dict,
    name: str,
    outcome: Classification,
    out: Output,
    checker: Any,
    value: Any,
    opts: AuditOptions,
    entry: list | None = None,
) -> Any:
    """Count one failed output: category, subtype, location, example, timeouts, all errors.
    Returns its diagnoses (``diagnose.diagnose``), which its ``--records`` row carries.

    ``entry``: the output's verdict-memo entry when its record has no finish reason and no
    message (``diagnose`` then reads only the text and the verdict): its diagnoses are kept
    there, found once."""
    text = out.text
    tally.source_failures[out.source] += 1
    examples = tally.add_failure(name, outcome)
    if examples is not None:
        tally.add_example(examples, line, record_id(rec), name, outcome, text)
    if entry is None:
        found: Any = diagnose(rec, text, outcome)
    else:
        found = entry[2]
        if found is None:
            found = entry[2] = tuple(diagnose(rec, text, outcome))
    if found:
        counts = tally.diagnoses
        for d in found:  # not Counter.update: its Mapping test costs more than the count
            counts[d] = counts.get(d, 0) + 1
    if outcome.timed_out:
        tally.add_timeout(line)
    elif outcome.category.startswith(VIOLATION):
        if opts.all_errors and checker is not None:
            errors, complete = checker.all_errors(value)
            tally.all_errors.update(errors)
            if not complete:
                tally.all_errors_cut += 1
    return found


def write_record(
    dest: IO[bytes],
    line: int,
    rec: dict,
    out: Output,
    schema: str,
    outcome: Classification,
    batch: bool = False,
    dups: list[str] | None = None,
    shard: str | None = None,
    first_line: int = 1,
    diagnoses: Any = (),
) -> None:
    """One ``--records`` row for an output. ``diagnoses``: what ``diagnose`` found in it
    (always a list, empty for an ok output), so the rows name the outputs the report's
    ``diagnoses`` counts are made of."""
    doc: dict[str, Any] = {"line": line}  # first: multi.shift_records rewrites it
    if shard is not None:
        doc["shard"], doc["shard_line"] = shard, line - first_line + 1
    rid = record_id(rec)
    if rid is not None:
        doc["id"] = rid
    if out.index is not None:
        doc["batch_index" if batch else "tool_call"] = out.index
    doc.update(
        source=out.source,
        schema=schema,
        category=outcome.category,
        subtype=outcome.subtype,
        path=outcome.path,
        message=outcome.message,
        diagnoses=list(diagnoses),
    )
    if dups:  # names repeated in one object: the last value was validated
        doc["duplicate_keys"] = dups
    dest.write(dumps_row(doc))


def dumps_row(doc: dict) -> bytes:
    """One JSON line; ASCII-escaped stdlib fallback for what orjson refuses (lone surrogates,
    integers beyond 64 bits in a record id)."""
    try:
        return orjson.dumps(doc, default=str) + b"\n"
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(doc, default=str).encode("ascii") + b"\n"
