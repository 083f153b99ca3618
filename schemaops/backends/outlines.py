"""outlines backend via ``outlines_core`` (0.2.x), the engine of outlines' own backend.

JSON schema -> regex (``outlines_core.json_schema.build_regex_from_schema``, whitespace
pattern ``[ ]?`` and recursion unrolled to ``max_recursion_depth=3``: deeper valid instances
are refused, which the enforcement walk reports as ``rejects_valid``) -> ``Index`` (a
token-level DFA over the whole vocabulary; this is the expensive, single-threaded step) ->
one ``Guide`` per generation.

The ``Vocabulary`` maps each token's *bytes* to its ids, decoded from the HF tokenizer's
token strings (byte-level BPE via the GPT-2 byte alphabet; SentencePiece via ``▁`` and
``<0xNN>``), as outlines and vLLM do. Special/added tokens are left out; the stop token is
the tokenizer's EOS.
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any

import numpy as np

from schemaops.backends.base import CompiledGrammar, GrammarBackend, Matcher, UnsupportedSchema

_UNSUPPORTED = re.compile(r"unsupported|not supported|invalid reference path", re.IGNORECASE)


@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """Inverse of GPT-2's ``bytes_to_unicode``: printable stand-in char -> byte."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    bs += list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs, strict=True)}


def token_bytes_map(hf_tokenizer: Any) -> dict[bytes, list[int]]:
    """Token bytes -> ids for every ordinary (non-added) token of a HF fast tokenizer."""
    added = set(hf_tokenizer.added_tokens_decoder)
    vocab = hf_tokenizer.get_vocab()
    dec = byte_decoder()
    byte_level = "ByteLevel" in repr(hf_tokenizer.backend_tokenizer.decoder)
    out: dict[bytes, list[int]] = {}
    for tok, i in vocab.items():
        if i in added:
            continue
        if byte_level and all(ch in dec for ch in tok):
            b = bytes(dec[ch] for ch in tok)
        elif len(tok) == 6 and tok.startswith("<0x") and tok.endswith(">"):
            b = bytes([int(tok[3:5], 16)])
        else:
            b = tok.replace("\u2581", " ").encode("utf-8")
        out.setdefault(b, []).append(i)
    return out


class OutlinesMatcher(Matcher):
    __slots__ = ("_g", "_done", "_eos")

    def __init__(self, guide: Any, eos: int) -> None:
        self._g = guide
        self._eos = eos
        self._done = False

    def fill_mask(self, bitmask: np.ndarray) -> None:
        self._g.write_mask_into(bitmask.ctypes.data, bitmask.size, 4)

    def mask_filler(self, bitmask: np.ndarray) -> Callable[[], object]:
        # ``ndarray.ctypes`` costs about a microsecond: resolve the pointer once.
        return partial(self._g.write_mask_into, bitmask.ctypes.data, bitmask.size, 4)

    def accept_token(self, token_id: int) -> bool:
        if self._done:
            return False
        if token_id == self._eos and self._g.is_finished():
            # EOS is in a final state's mask but is no transition of the Index: ``advance``
            # would raise, so the stop is taken here, as outlines' logits processor does.
            self._done = True
            return True
        try:
            self._g.advance(token_id, return_tokens=False)
        except ValueError:
            return False
        return True

    def can_stop(self) -> bool:
        return bool(self._g.is_finished())

    def is_terminated(self) -> bool:
        return self._done

    def reset(self) -> None:
        self._g.reset()
        self._done = False


class OutlinesCompiled(CompiledGrammar):
    def __init__(self, index: Any, regex: str, eos: int) -> None:
        self.index = index
        self.regex = regex
        self.eos = eos

    def matcher(self) -> Matcher:
        import outlines_core

        return OutlinesMatcher(outlines_core.Guide(self.index), self.eos)


class OutlinesBackend(GrammarBackend):
    name = "outlines"

    def __init__(
        self, hf_tokenizer: Any, vocab_size: int | None = None, *, table_cache: Any = None
    ) -> None:
        super().__init__(hf_tokenizer, vocab_size)
        import outlines_core

        self.table_cache = table_cache
        self.vocabulary = None
        data = self._cached_table()
        if data is not None:
            try:  # Vocabulary pickles to its binary form (20 ms vs ~1.3 s to rebuild)
                vocabulary = pickle.loads(data)
                if vocabulary.get_eos_token_id() == self.stop_token_id:
                    self.vocabulary = vocabulary
            except Exception:
                pass
        if self.vocabulary is None:
            mapping = token_bytes_map(hf_tokenizer)
            self.vocabulary = outlines_core.Vocabulary(self.stop_token_id, mapping)
            self._store_table(pickle.dumps(self.vocabulary))

    def compile(self, schema_text: str) -> CompiledGrammar:
        import outlines_core
        from outlines_core.json_schema import build_regex_from_schema

        try:
            regex = build_regex_from_schema(schema_text)
        except TypeError as exc:  # not JSON
            raise RuntimeError(str(exc)) from exc
        except ValueError as exc:
            if _UNSUPPORTED.search(str(exc)):
                raise UnsupportedSchema(str(exc).split("\n")[0].strip()) from exc
            raise RuntimeError(str(exc)) from exc
        try:
            index = outlines_core.Index(regex, self.vocabulary)
        except ValueError as exc:
            raise RuntimeError(str(exc).split("\n")[0].strip()) from exc
        return OutlinesCompiled(index, regex, self.stop_token_id)
