"""Where orjson's reading of JSON differs from the stdlib's on integers, in one place.

orjson reads an integer below -2**63 or from 2**64 as a float; the stdlib keeps it exact. The
shortest such integer has 19 digits (-9223372036854775809), so a text without a run of 19
ASCII digits reads the same in both. Used by the audit (``audit/verdict/classify.py`` and its
lean loop) and the registry (``registry/jsontext.py``) before trusting orjson's value.

A number beyond double range (``1e999``) is one more difference: orjson refuses it, the
stdlib reads ±inf; ``exact_float`` reads it exactly for the audit's strict parser and for
tool-call arguments held as objects.
"""

from __future__ import annotations

from decimal import Decimal

# C-speed bytes ops: a regex scan costs several microseconds per output, more than the parse
_DIGIT_MAP = bytes(49 if 48 <= i <= 57 else 48 for i in range(256))
_LONG_RUN = b"1" * 19


def may_have_long_int(text: str) -> bool:
    """A run of 19 digits somewhere in ``text``: an integer orjson may read as a float."""
    return len(text) >= 19 and _LONG_RUN in text.encode("utf-8", "surrogatepass").translate(
        _DIGIT_MAP
    )


#: how large a number beyond double range may be and still be read exactly: the stdlib's own
#: bound on the digits of an integer (``sys.get_int_max_str_digits()``'s default, 4300)
MAX_EXACT_DIGITS = 4300


def exact_float(text: str) -> float | int:
    """``parse_float`` for the stdlib's json: a number within double range as the stdlib reads
    it (a float), one beyond it (``1e999``, that ``float()`` makes ±inf) as its exact value.

    Why: an infinity is not the number that was sent, and jsonschema-rs skips ``minimum``/
    ``maximum``/``multipleOf`` for one, so ``{"qty": 1e999}`` passed ``maximum: 10`` (issue 33
    item 19). A JSON number beyond double range is an integer unless it has more fraction
    digits than its exponent; it is read as that ``int``, which both jsonschema and
    jsonschema-rs compare exactly. Larger than ``MAX_EXACT_DIGITS`` digits, or with a fraction
    left, is a ``ValueError``: RFC 8259 section 9 lets a parser limit the size of numbers, and
    the audit counts it as ``json_parse_failure`` (``limit_exceeded``)."""
    value = float(text)
    if value - value == 0:  # finite
        return value
    exact = Decimal(text)
    if exact.adjusted() >= MAX_EXACT_DIGITS:
        raise ValueError(f"number {text[:40]} has more than {MAX_EXACT_DIGITS} digits")
    whole = int(exact)
    if whole != exact:
        raise ValueError(f"number {text[:40]} is beyond double range and not an integer")
    return whole
