"""Other tokenizations of a valid instance, for when its canonical one is refused in a string.

A model does not have to emit the tokenizer's canonical (longest-merge) tokenization: any
token sequence that spells the same bytes is a possible output, and a grammar backend has to
allow at least one of them for the value to be producible. When the canonical tokenization of
a valid example is refused inside a string literal holding characters outside printable ASCII
("Zoë", Korean, an emoji, a control character), the walk tries, in order:

- ``chars``: every character of those strings as its own tokenization (shorter tokens);
- ``bytes``: every non-ASCII character as single-byte tokens (the byte-level vocabulary's
  256 byte tokens), the way a model can emit a character split across tokens;
- ``escaped``: the same JSON value with its invisible characters (controls such as U+007F
  and U+0085, format characters, separators, unassigned code points) written as
  ``\\uXXXX`` escapes and everything else raw, another rendering a model may emit for the
  same content (llguidance takes ``\\u`` escapes only for such characters);
- ``ascii``: every non-ASCII character as a ``\\uXXXX`` escape (Python's ``ensure_ascii``).

If one is accepted, the value is producible and the detail says which (``accepted_as``); if
none is, the backend cannot produce the value: ``rejects_valid``, which fails ``check``.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from typing import Any

ALTERNATIVES = ("chars", "bytes", "escaped", "ascii")
# Unicode categories of characters a model would write as an escape rather than raw.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def printable_ascii(text: str) -> bool:
    """Printable ASCII only."""
    return all(" " <= c <= "~" for c in text)


def string_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) char offsets of the *contents* of every JSON string literal in ``text``."""
    spans: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            spans.append((i + 1, min(j, n)))
            i = j + 1
        else:
            i += 1
    return spans


@lru_cache(maxsize=4)
def _byte_ids(tokenizer: Any) -> tuple[int | None, ...]:
    """Token id of each single byte 0..255 (None where the vocabulary has no such token)."""
    from schemaops.backends.outlines import byte_decoder

    vocab = tokenizer.get_vocab()
    byte_level = "ByteLevel" in repr(tokenizer.backend_tokenizer.decoder)
    out: list[int | None] = [None] * 256
    if byte_level:
        for ch, b in byte_decoder().items():
            out[b] = vocab.get(ch)
    else:  # SentencePiece byte fallback
        for b in range(256):
            out[b] = vocab.get(f"<0x{b:02X}>")
    return tuple(out)


def _encoder(tokenizer: Any) -> Callable[[str], list[int]]:
    rust = tokenizer.backend_tokenizer
    return lambda s: rust.encode(s, add_special_tokens=False).ids if s else []


def tokenizations(tokenizer: Any, text: str, value: Any) -> list[tuple[str, list[int]]]:
    """The alternative tokenizations (name, ids) of ``text`` (the serialised ``value``)."""
    enc = _encoder(tokenizer)
    byte_ids = _byte_ids(tokenizer)

    def by_char(ch: str) -> list[int] | None:
        return enc(ch)

    def by_byte(ch: str) -> list[int] | None:
        if " " <= ch <= "~":
            return enc(ch)
        ids = [byte_ids[b] for b in ch.encode("utf-8", "surrogatepass")]
        return None if any(i is None for i in ids) else ids  # type: ignore[misc]

    def retok(piece: Callable[[str], list[int] | None]) -> list[int] | None:
        ids: list[int] = []
        pos = 0
        for s, e in string_spans(text):
            content = text[s:e]
            if printable_ascii(content):
                continue
            ids += enc(text[pos:s])
            for ch in content:
                got = piece(ch)
                if got is None:
                    return None
                ids += got
            pos = e
        ids += enc(text[pos:])
        return ids

    out: list[tuple[str, list[int]]] = []
    for name, piece in (("chars", by_char), ("bytes", by_byte)):
        ids = retok(piece)
        if ids is not None:
            out.append((name, ids))
    seen = {text}
    for name, rendering in (("escaped", _escape_invisible(text)), ("ascii", _ascii(value))):
        if rendering not in seen:
            seen.add(rendering)
            out.append((name, enc(rendering)))
    return out


def _u(ch: str) -> str:
    """``ch`` as JSON ``\\u`` escape(s) (a surrogate pair above U+FFFF)."""
    return json.dumps(ch, ensure_ascii=True)[1:-1]


def _escape_invisible(text: str) -> str:
    """``text`` (compact JSON) with invisible non-ASCII characters and DEL as ``\\u``
    escapes. Safe on the whole text: outside strings JSON text is ASCII without them."""
    return "".join(
        _u(c) if c == "\x7f" or (c > "~" and unicodedata.category(c) in _INVISIBLE) else c
        for c in text
    )


def _ascii(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True)
