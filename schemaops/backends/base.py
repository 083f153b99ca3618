"""The one protocol every grammar backend implements, modelled on SGLang's
``srt/constrained/base_grammar_backend.py`` and outlines' ``backends/base.py``.

A :class:`GrammarBackend` is built once per tokenizer (building its token table costs about a
second, so workers keep it for many schemas) and compiles schema text into a
:class:`CompiledGrammar`; each compiled grammar hands out fresh :class:`Matcher` objects that
walk one token sequence. Bitmasks are numpy ``int32`` arrays of shape ``(1, ceil(V / 32))``
where ``V`` is the *lm head* width (``vocab_size``), which may exceed the tokenizer's length:
bit ``i % 32`` of word ``i // 32`` set means token ``i`` is allowed.

Library caches are off: ``compile`` always does the full work, so its wall time is the cold
compile a server pays on a cache miss.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

#: a token table in the cache (xgrammar's JSON, outlines' pickle: tens of MiB for a 150k
#: vocabulary); a file past this is not one
_MAX_TABLE_BYTES = 1 << 30


class UnsupportedSchema(Exception):
    """The backend itself says it does not support this schema (a keyword, a recursive
    ``$ref``, ...). Any other exception from ``compile`` is an error in the backend."""


def allocate_bitmask(vocab_size: int) -> np.ndarray:
    """A ``(1, ceil(vocab_size / 32))`` int32 bitmask, all tokens allowed."""
    return np.full((1, (vocab_size + 31) // 32), -1, dtype=np.int32)


def is_allowed(bitmask: np.ndarray, token_id: int) -> bool:
    """Whether ``token_id``'s bit is set in a filled bitmask."""
    word = int(bitmask[0, token_id >> 5])
    return bool((word >> (token_id & 31)) & 1)


def allowed_ids(bitmask: np.ndarray, vocab_size: int) -> np.ndarray:
    """All allowed token ids of a filled bitmask (for tests and debugging; not hot)."""
    bits = np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")[:vocab_size]
    return np.flatnonzero(bits)


class Matcher(ABC):
    """The state of one generation under a compiled grammar."""

    @abstractmethod
    def fill_mask(self, bitmask: np.ndarray) -> None:
        """Write the allowed next tokens into ``bitmask`` (row 0). Does not change state."""

    def mask_filler(self, bitmask: np.ndarray) -> Callable[[], object]:
        """A zero-argument callable that fills ``bitmask`` for the current state.

        The timing loop calls this instead of ``fill_mask`` so that the per-token figure is
        the library call alone: backends return the library's own bound method with its
        arguments pre-bound (``functools.partial``, resolved once), not a Python wrapper.
        """
        return lambda: self.fill_mask(bitmask)

    @abstractmethod
    def accept_token(self, token_id: int) -> bool:
        """Advance by ``token_id``; False if the grammar forbids it. After a False the
        matcher's state is backend-specific (llguidance enters a permanent error state):
        callers stop the walk or ``reset()``."""

    @abstractmethod
    def can_stop(self) -> bool:
        """Whether the text so far is a complete value: the stop token would be allowed."""

    @abstractmethod
    def is_terminated(self) -> bool:
        """Whether the matcher has finished (accepted the stop token, or nothing can follow)."""

    @abstractmethod
    def reset(self) -> None:
        """Back to the initial state, reusing the compiled grammar."""


class CompiledGrammar(ABC):
    """A schema compiled for one tokenizer; cheap to make matchers from."""

    @abstractmethod
    def matcher(self) -> Matcher:
        """A fresh matcher at the start of the grammar."""


class GrammarBackend(ABC):
    """A grammar library bound to one tokenizer.

    ``name`` is the registry name (``xgrammar``, ``llguidance``, ``outlines``);
    ``vocab_size`` the bitmask width; ``stop_token_id`` the token that ends a generation.
    """

    name: str = ""

    def __init__(self, hf_tokenizer: Any, vocab_size: int | None = None) -> None:
        self.tokenizer = hf_tokenizer
        self.vocab_size = int(vocab_size or len(hf_tokenizer))
        if self.vocab_size < len(hf_tokenizer):
            raise ValueError(
                f"vocab_size {self.vocab_size} is smaller than the tokenizer ({len(hf_tokenizer)})"
            )
        self.stop_token_id: int = int(hf_tokenizer.eos_token_id)

    @classmethod
    def from_tokenizer(cls, hf_tokenizer: Any, vocab_size: int | None = None) -> GrammarBackend:
        """Build the backend's token table for a HF fast tokenizer (about a second)."""
        return cls(hf_tokenizer, vocab_size)

    # ---- optional on-disk cache of the token table (set by ``schemaops.compare.measure``) ----
    table_cache: Path | None = None  # a file for this backend+tokenizer+vocab+version

    def _cached_table(self) -> bytes | None:
        """The cached token table bytes, if a cache file is set and readable: a regular file
        (opened without blocking: a FIFO in its place would hang), owned by this user and
        writable by no one else (outlines unpickles it)."""
        if self.table_cache is None:
            return None
        from schemaops.cachekeys import private, read_regular

        try:
            return read_regular(self.table_cache, _MAX_TABLE_BYTES, accept=private)
        except OSError:
            return None

    def _store_table(self, data: bytes) -> None:
        """Write the token table atomically; a cache that cannot be written is skipped."""
        if self.table_cache is None:
            return
        try:
            self.table_cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.table_cache.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, self.table_cache)
        except OSError:
            pass

    @abstractmethod
    def compile(self, schema_text: str) -> CompiledGrammar:
        """Compile a JSON schema, cold. Raises :class:`UnsupportedSchema` when the backend
        reports the schema as unsupported; any other exception is an error."""

    def serialize(self, instance: Any) -> str:
        """The text of ``instance`` as this backend's grammar would let a model write it.

        Every backend here is compiled with the whitespace SGLang uses by default, under
        which compact JSON (``","``/``":"``, no spaces) is a legal rendering: xgrammar with
        ``any_whitespace=True``, llguidance with its default flexible whitespace, outlines
        with its ``[ ]?`` whitespace pattern. Key order is the instance's own; callers order
        keys like the schema first (see ``schemaops.compare.instances.order_like_schema``)
        because all three backends emit properties in schema order. Strings holding lone
        surrogates (which UTF-8 cannot carry) are written with ``\\u`` escapes instead.
        """
        text = json.dumps(instance, separators=(",", ":"), ensure_ascii=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates (generated strings): only \u escapes
            text = json.dumps(instance, separators=(",", ":"))
        return text

    def allocate_bitmask(self) -> np.ndarray:
        return allocate_bitmask(self.vocab_size)
