"""Where orjson's reading of JSON differs from the stdlib's on integers, in one place.

orjson reads an integer below -2**63 or from 2**64 as a float; the stdlib keeps it exact. The
shortest such integer has 19 digits (-9223372036854775809), so a text without a run of 19
ASCII digits reads the same in both. Used by the audit (``audit/verdict/classify.py`` and its
lean loop) and the registry (``registry/jsontext.py``) before trusting orjson's value.
"""

from __future__ import annotations

# C-speed bytes ops: a regex scan costs several microseconds per output, more than the parse
_DIGIT_MAP = bytes(49 if 48 <= i <= 57 else 48 for i in range(256))
_LONG_RUN = b"1" * 19


def may_have_long_int(text: str) -> bool:
    """A run of 19 digits somewhere in ``text``: an integer orjson may read as a float."""
    return len(text) >= 19 and _LONG_RUN in text.encode("utf-8", "surrogatepass").translate(
        _DIGIT_MAP
    )
