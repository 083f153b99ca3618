"""When a keyword the provider drops makes the served schema refuse valid outputs.

An ``ignored`` rule usually widens: the provider serves the schema without the keyword, so
outputs can break it (the residual). Not always: ``patternProperties`` beside
``additionalProperties: false``, with ``patternProperties`` dropped (Gemini does not list it:
``gemini.unsupported-keyword``) and ``additionalProperties: false`` kept, refuses every key the
patterns allowed. That is a narrowing, not a residual: ``check --target gemini`` said
``accepted_ignored`` for it while ``lower --target gemini`` said ``relaxed+narrowed``.

One judgement, used by both: ``pattern_keys_refused`` (what ``lower --target`` asks of each
object it serves) and ``narrowings`` (what ``check --target`` asks of a schema as it is sent,
from the table's findings).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from schemaops.providers.base import Finding, walk

PATTERN = "patternProperties"
CLOSED = "additionalProperties"
WHY = (
    "patternProperties is dropped and additionalProperties: false is kept: the keys the "
    "patterns allowed are refused (valid outputs cannot be produced)"
)


def pattern_keys_refused(node: Any, dropped: Iterable[str]) -> bool:
    """Whether serving the object ``node`` without the keywords ``dropped`` refuses keys the
    original allowed: ``patternProperties`` dropped, ``additionalProperties: false`` kept."""
    gone = set(dropped)
    return (
        isinstance(node, dict)
        and PATTERN in gone
        and CLOSED not in gone
        and node.get(CLOSED) is False
        and bool(node.get(PATTERN))
    )


def narrowings(schema: Any, findings: list[Finding]) -> list[tuple[str, str]]:
    """(pointer of the dropped ``patternProperties``, why) for each object of ``schema`` that
    the provider serves narrower: the keywords its ``ignored`` findings drop, judged by
    ``pattern_keys_refused``."""
    dropped: dict[str, set[str]] = {}
    for f in findings:
        if f.rule.effect == "ignored" and "/" in f.pointer:
            parent, kw = f.pointer.rsplit("/", 1)
            dropped.setdefault(parent, set()).add(kw)
    out = []
    for node in walk(schema):
        if pattern_keys_refused(node.schema, dropped.get(node.pointer, ())):
            out.append((node.at(PATTERN), WHY))
    return out
