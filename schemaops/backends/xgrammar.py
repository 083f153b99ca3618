"""xgrammar backend, built the way SGLang's ``xgrammar_backend.py`` builds it.

``TokenizerInfo.from_huggingface(tokenizer, vocab_size=head)`` once per tokenizer, a
``GrammarCompiler`` with ``cache_enabled=False`` (so every compile is cold) and
``compile_json_schema(schema, any_whitespace=True)``: SGLang's default (its
``--constrained-json-disable-any-whitespace`` flips it) and xgrammar's default
``strict_mode=True``, under which properties/items the schema does not list are refused even
where JSON Schema would allow them. That is what a deployment gets, so that is what we measure.
``max_threads`` defaults to 8, xgrammar's own ``GrammarCompiler`` default, which is what SGLang
(``GrammarCompiler(tokenizer_info=...)``) and vLLM (``max_threads=8``) build: the cold compile a
server pays. xgrammar spreads one compile over these threads (its token-mask cache is built
per grammar state in parallel), so on a host with more cores the server's compile is faster
than a one-thread figure; pass ``max_threads=1`` for a single-core figure.

xgrammar imports torch and transformers; it is imported lazily, only in the process that
uses this backend.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from schemaops.backends.base import CompiledGrammar, GrammarBackend, Matcher, UnsupportedSchema

# xgrammar raises RuntimeError for everything; these messages mean "feature not supported".
_UNSUPPORTED = re.compile(r"not supported|unsupported|not implemented", re.IGNORECASE)

# xgrammar's GrammarCompiler default, used by SGLang (default argument) and vLLM (explicit).
ENGINE_MAX_THREADS = 8


class XGrammarMatcher(Matcher):
    __slots__ = ("_m",)

    def __init__(self, m: Any) -> None:
        self._m = m

    def fill_mask(self, bitmask: np.ndarray) -> None:
        self._m.fill_next_token_bitmask(bitmask, 0)

    def mask_filler(self, bitmask: np.ndarray) -> Callable[[], object]:
        return partial(self._m.fill_next_token_bitmask, bitmask, 0)

    def accept_token(self, token_id: int) -> bool:
        return bool(self._m.accept_token(token_id))

    def can_stop(self) -> bool:
        return bool(self._m.is_completed())

    def is_terminated(self) -> bool:
        return bool(self._m.is_terminated())

    def reset(self) -> None:
        self._m.reset()


class XGrammarCompiled(CompiledGrammar):
    def __init__(self, compiled: Any) -> None:
        self.compiled = compiled

    def matcher(self) -> Matcher:
        import xgrammar as xgr

        return XGrammarMatcher(xgr.GrammarMatcher(self.compiled))


class XGrammarBackend(GrammarBackend):
    name = "xgrammar"

    def __init__(
        self,
        hf_tokenizer: Any,
        vocab_size: int | None = None,
        *,
        any_whitespace: bool = True,
        table_cache: Any = None,
        max_threads: int = ENGINE_MAX_THREADS,
    ) -> None:
        super().__init__(hf_tokenizer, vocab_size)
        import xgrammar as xgr

        self.any_whitespace = any_whitespace
        self.table_cache = table_cache
        self.max_threads = int(max_threads)
        self.info = self._tokenizer_info(xgr, hf_tokenizer)
        self.compiler = xgr.GrammarCompiler(
            self.info, max_threads=self.max_threads, cache_enabled=False
        )
        if self.info.stop_token_ids:
            self.stop_token_id = int(self.info.stop_token_ids[0])

    def _tokenizer_info(self, xgr: Any, hf_tokenizer: Any) -> Any:
        """``TokenizerInfo`` from the cache (0.2 s) or built from the tokenizer (1-2 s)."""
        data = self._cached_table()
        if data is not None:
            try:
                info = xgr.TokenizerInfo.deserialize_json(data.decode("utf-8"))
                if info.vocab_size == self.vocab_size:
                    return info
            except Exception:  # stale or foreign cache file: rebuild
                pass
        info = xgr.TokenizerInfo.from_huggingface(hf_tokenizer, vocab_size=self.vocab_size)
        self._store_table(info.serialize_json().encode("utf-8"))
        return info

    def compile(self, schema_text: str) -> CompiledGrammar:
        try:
            compiled = self.compiler.compile_json_schema(
                schema_text, any_whitespace=self.any_whitespace
            )
        except RuntimeError as exc:
            if _UNSUPPORTED.search(str(exc)):
                raise UnsupportedSchema(_clean(str(exc))) from exc
            raise RuntimeError(_clean(str(exc))) from exc
        return XGrammarCompiled(compiled)


def _clean(msg: str) -> str:
    """Drop the ``[hh:mm:ss] /project/cpp/file.cc:123: `` prefix xgrammar puts on errors."""
    return re.sub(r"^\[[\d:]+\] \S+:\d+: ", "", msg.strip())
