"""Input errors grouped by reason, each with its lines: what every report prints of them.

Why: a log with a renamed schema and one broken line has two reasons, and each line number
must sit beside its own. Printing the first line's reason after every line number told a
reader that the record naming ``get_ordr`` was "not JSON". A parser's position inside the
line (``line 1 column 53 (char 52)``) is left out of the reason, so one broken-JSON cause is
one group; the ``--json`` document's ``input_error_lines`` keeps each message as it was.
"""

from __future__ import annotations

import re
from typing import Any

from schemaops.strings import plural

#: a parser's position inside one line (``json``/``orjson`` messages): not part of the reason
_POSITION = re.compile(r"(?::? line \d+ column \d+ \(char \d+\)| at char \d+)")
#: reasons about the whole run, not a line (the resolver's missing registry): printed first
RUN_WIDE = ("registry folder not found",)
#: line numbers printed per group in the terminal and Markdown reports
SHOWN_LINES = 10


def reason_of(message: str) -> str:
    """The reason a message gives, without the position inside the line."""
    return _POSITION.sub("", message)


def group(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``[{reason, count, lines}]`` over ``entries`` (``input_error_lines``), run-wide reasons
    first, then the most frequent, then the earliest; each group's lines in input order."""
    groups: dict[str, dict[str, Any]] = {}
    for e in entries:
        reason = reason_of(str(e["message"]))
        g = groups.setdefault(reason, {"reason": reason, "count": 0, "lines": []})
        g["count"] += 1
        g["lines"].append(e["line"])
    return sorted(
        groups.values(),
        key=lambda g: (not g["reason"].startswith(RUN_WIDE), -g["count"], g["lines"][0]),
    )


def lines_text(lines: list[int], where: dict[int, str] | None = None) -> str:
    """``line 2`` / ``lines 3, 4`` / ``lines 1, 2, ... (and 12 more)``; ``where``: how to show
    a line (``12 (part-0.jsonl:3)`` with several shards)."""
    where = where or {}
    shown = ", ".join(where.get(n, str(n)) for n in lines[:SHOWN_LINES])
    more = f" (and {len(lines) - SHOWN_LINES} more)" if len(lines) > SHOWN_LINES else ""
    return f"{'line' if len(lines) == 1 else 'lines'} {shown}{more}"


def summary_lines(doc: dict[str, Any]) -> list[str]:
    """Plain lines for a report: ``lines 3, 4: REASON`` per group, and a note when the groups
    cover only the first input errors (the tally keeps the first ``INPUT_ERROR_LINES``)."""
    entries = doc.get("input_error_lines") or []
    groups = doc.get("input_error_groups") or group(entries)
    # several shards: each line also as its shard's file and line there
    where = {
        e["line"]: f"{e['line']} ({e['shard']}:{e['shard_line']})" for e in entries if "shard" in e
    }
    out = [f"{lines_text(g['lines'], where)}: {g['reason']}" for g in groups]
    if not doc.get("input_error_groups_complete", True):
        kept = sum(g["count"] for g in groups)
        out.append(f"(grouped: the first {kept:,} of {doc['input_errors']:,} input errors)")
    return out


def no_output_message(path: str, errors: int, entries: list[dict[str, Any]]) -> str:
    """The exit-2 message of an input with no usable line: each reason once, its lines."""
    parts = [f"{lines_text(g['lines'])}: {g['reason']}" for g in group(entries)[:5]]
    return (
        f"{path}: no model output to audit: no line is a usable record"
        f" ({plural(errors, 'input error')}):\n  " + "\n  ".join(parts)
    )
