"""Tool-call arguments held as a JSON object, written back as the text the audit parses.

Anthropic's ``tool_use.input``, Gemini's ``functionCall.args`` and the OpenAI arguments some
servers give as an object arrive parsed with the rest of the record line, by orjson first:
it reads an integer from 2^64 (or below -2^63) as a float, and the stdlib fallback reads a
number beyond double range as ±inf. Written back with ``json.dumps`` those were other values
(``18446744073709551617`` became ``1.8446744073709552e+19``, ``1e400`` the text ``Infinity``),
so the audit judged a value the provider never sent (issue 33 item 20).

``args_text`` refuses to write such a value (``InexactArgs``): a float that may be an integer
orjson could not hold (magnitude from 2^63) or an infinity. ``extract.find_outputs`` then reads
the line again with ``exact_record`` (the stdlib, whose integers are exact, with
``exactjson.exact_float`` for numbers beyond double range) and writes the arguments from that,
so they are judged as the same value sent as text would be.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from schemaops import jsonl
from schemaops.audit.read.output import RecordError
from schemaops.exactjson import exact_float

#: set while the outputs of an exactly read record are found (floats there are what was sent)
_EXACT: ContextVar[bool] = ContextVar("schemaops_exact_record", default=False)
# orjson holds integers in [-2^63, 2^64); a float of this magnitude may be one it could not
_INEXACT_FROM = float(2**63)


class InexactArgs(RecordError):
    """The arguments hold a number the record's first reading may have changed."""


def lossy(value: Any) -> bool:
    """True when ``value`` holds a float that may not be the number the text had: an
    infinity (or NaN), or a magnitude from 2^63 (an integer orjson read as a float)."""
    stack = [value]
    while stack:
        node = stack.pop()
        t = type(node)
        if t is float:
            if not -_INEXACT_FROM < node < _INEXACT_FROM:  # NaN fails both comparisons
                return True
        elif t is dict:
            stack.extend(node.values())
        elif t is list:
            stack.extend(node)
    return False


def args_text(args: Any) -> str:
    """The arguments as JSON text: a string as it is, an object written with ``json.dumps``
    (", " and ": ", as before). Raises ``InexactArgs`` when the object may hold a number
    read inexactly, unless the record was read exactly (``with exactly()``)."""
    if isinstance(args, str):
        return args
    if not _EXACT.get() and lossy(args):
        raise InexactArgs("tool-call arguments hold a number the line's parser read inexactly")
    try:
        return json.dumps(args)
    except (ValueError, RecursionError) as exc:  # a non-string key path, nesting too deep
        raise RecordError(f"tool-call arguments cannot be written as JSON ({exc})") from None


def exact_record(raw: bytes) -> Any:
    """The record line read with exact numbers: the stdlib's integers, and
    ``exact_float`` for numbers beyond double range (``NaN``/``Infinity`` stay floats, written
    back as the non-standard literals they were)."""
    try:
        return json.loads(raw, parse_float=exact_float)
    except UnicodeDecodeError as exc:
        raise RecordError(f"line is not JSON ({jsonl.not_utf8(exc)})") from None
    except (ValueError, RecursionError) as exc:
        raise RecordError(f"line is not JSON ({exc})") from None


@contextmanager
def exactly() -> Iterator[None]:
    """``with exactly():`` the outputs found are from an exactly read record: ``args_text``
    writes its floats as they are."""
    token = _EXACT.set(True)
    try:
        yield
    finally:
        _EXACT.reset(token)
