"""What reading a record yields: the model outputs found in it (``Output``), or why it is not
a usable record (``RecordError``).

Why its own module: the record readers (``extract`` for SGLang, OpenAI-compatible and vLLM
records, ``hosted_bodies`` for hosted APIs' bodies) all make these, and ``extract`` hands a
hosted body to ``hosted_bodies``: the types cannot live in either without an import cycle.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Output(NamedTuple):
    """One model output found in a record: its text, schema name (if any) and sub-index.

    ``index`` is the tool call's position for OpenAI ``tool_calls`` fan-out, or the element's
    position in a batch response (``record`` is then that element); None otherwise.
    ``source`` is the field the text came from, as a path in the record (``text``,
    ``choices[0].message.content``, ``choices[1].text``,
    ``choices[0].message.tool_calls[0].function.arguments``), reported per output and counted.
    ``refusal`` is the provider's refusal (its words, or its reason such as ``SAFETY``) when
    the model refused instead of answering: the text is then empty (``hosted_bodies.py``).
    A NamedTuple, not a dataclass: one is made per line, and this is several times cheaper.
    """

    text: str
    schema: str | None
    index: int | None = None
    # The element of a batch response, or a one-choice view of a record with several
    # choices (each choice's own finish_reason and message for the diagnoses).
    record: dict | None = None
    source: str = "text"
    refusal: str | None = None
    # ``record`` is a view whose ``usage`` counts this answer alone (a hosted body with one
    # candidate): the token budget may read it although ``record`` is set (hosted_bodies.py)
    own_usage: bool = False
    # the verdict when the reader knows it without the text (``no_tool_call``), or
    # ``toolcalls.SKIP`` for a text answer that is no tool output (not counted)
    verdict: Any = None
    # (tool set, response) of an output of a response judged against a tool set: the audit
    # counts agent steps by it (``verdict/toolcalls.py``)
    step: tuple | None = None


class RecordError(Exception):
    """A line that is not a usable record (counted as an input error)."""
