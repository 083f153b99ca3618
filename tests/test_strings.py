"""schemaops.strings: the one JSON-pointer, sha256 and truncation helper (issue 16.4)."""

from __future__ import annotations

import hashlib
from collections import deque

from hypothesis import given
from hypothesis import strategies as st

from schemaops.strings import pointer, pointer_token, sha256_hex, truncate


def test_pointer_escapes_and_round_trips() -> None:
    parts = ["a/b", "c~d", 0, "x"]
    ptr = pointer(deque(parts))
    assert ptr == "/a~1b/c~0d/0/x" and pointer([]) == ""
    assert [pointer_token(p) for p in ptr.split("/")[1:]] == ["a/b", "c~d", "0", "x"]


@given(st.lists(st.one_of(st.text(alphabet="a~/0~1é\ud800", max_size=6), st.integers(0, 99))))
def test_pointer_is_rfc6901s_joined_tokens(parts: list) -> None:
    """The loop equals RFC 6901's definition written as one expression (section 3: "~" as
    "~0" first, then "/" as "~1"), on tokens made of the characters that need escaping."""
    expected = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    assert pointer(parts) == expected == pointer(deque(parts))


def test_sha256_hex_of_text_bytes_and_a_lone_surrogate() -> None:
    assert sha256_hex("é") == hashlib.sha256("é".encode()).hexdigest() == sha256_hex("é".encode())
    assert len(sha256_hex("\ud800")) == 64  # a log's "\ud800" is hashable, not an error


def test_truncate_keeps_the_limit() -> None:
    assert truncate("abc", 3) == "abc"
    assert truncate("abcdef", 5) == "ab..." and truncate("abcdef", 5, "…") == "abcd…"
