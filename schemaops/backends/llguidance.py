"""llguidance backend, built the way SGLang's ``llguidance_backend.py`` builds it.

``llguidance.hf.from_tokenizer(tokenizer, n_vocab=head)`` once per tokenizer;
``LLMatcher.grammar_from_json_schema(schema)`` with llguidance's defaults: flexible JSON
whitespace and ``lenient`` off, so a keyword llguidance does not implement makes the schema
unsupported instead of being silently dropped. ``LLMatcher(...)`` never raises on a bad
grammar (it enters an error state), so ``compile`` checks ``is_error()``.

llguidance builds lexer states lazily: its "compile" is near zero and part of the work
moves into the first masks. That is the library's real cost profile, and it is what a server
pays, so we do not pre-warm it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from schemaops.backends.base import CompiledGrammar, GrammarBackend, Matcher, UnsupportedSchema

_UNSUPPORTED = re.compile(
    r"unimplemented|not supported|unsupported|not implemented|"
    r"is not present in a registry and retrieving it failed",
    re.IGNORECASE,
)


# Matcher, compiled grammar and backend have the shape of xgrammar.py's and outlines.py's
# (base.py's protocol, one file per library): the bodies are each library's own calls.
class LLGuidanceMatcher(Matcher):
    __slots__ = ("_m",)

    def __init__(self, m: Any) -> None:
        self._m = m

    def fill_mask(self, bitmask: np.ndarray) -> None:
        self._m.unsafe_compute_mask_ptr(bitmask.ctypes.data, bitmask.nbytes)

    def mask_filler(self, bitmask: np.ndarray) -> Callable[[], object]:
        # ``ndarray.ctypes`` costs about a microsecond: resolve the pointer once.
        return partial(self._m.unsafe_compute_mask_ptr, bitmask.ctypes.data, bitmask.nbytes)

    def accept_token(self, token_id: int) -> bool:
        m = self._m
        if m.is_error():
            return False
        # A forbidden token puts an LLMatcher in a permanent error state (see base.Matcher).
        return bool(m.consume_token(token_id)) and not m.is_error()

    def can_stop(self) -> bool:
        return bool(self._m.is_accepting())

    def is_terminated(self) -> bool:
        return bool(self._m.is_stopped())

    def reset(self) -> None:
        self._m.reset()


class LLGuidanceCompiled(CompiledGrammar):
    def __init__(self, proto: Any, grammar: str) -> None:
        self.proto = proto
        self.grammar = grammar

    def matcher(self) -> Matcher:
        return LLGuidanceMatcher(self.proto.deep_copy())


class LLGuidanceBackend(GrammarBackend):
    name = "llguidance"

    def __init__(
        self, hf_tokenizer: Any, vocab_size: int | None = None, *, lenient: bool = False
    ) -> None:
        super().__init__(hf_tokenizer, vocab_size)
        import llguidance.hf

        self.lenient = lenient
        self.lltok = llguidance.hf.from_tokenizer(hf_tokenizer, n_vocab=self.vocab_size)

    def compile(self, schema_text: str) -> CompiledGrammar:
        import llguidance

        opts = {"lenient": True} if self.lenient else None
        try:
            grammar = llguidance.LLMatcher.grammar_from_json_schema(schema_text, overrides=opts)
        except ValueError as exc:  # not a JSON object at all
            raise RuntimeError(str(exc)) from exc
        m = llguidance.LLMatcher(self.lltok, grammar, log_level=0)
        if m.is_error():
            msg = m.get_error()
            if _UNSUPPORTED.search(msg):
                raise UnsupportedSchema(msg)
            raise RuntimeError(msg)
        return LLGuidanceCompiled(m, grammar)
