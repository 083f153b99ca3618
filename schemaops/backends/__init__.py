"""Grammar backends behind one protocol (see ``base``): xgrammar, llguidance, outlines.

``get_backend(name)`` returns the backend *class* without importing its library; call
``.from_tokenizer(hf_tokenizer, vocab_size)`` to build it (this imports the library: xgrammar
pulls in torch, so build each backend in the process that uses it).
"""

from __future__ import annotations

from schemaops.backends.base import (
    CompiledGrammar,
    GrammarBackend,
    Matcher,
    UnsupportedSchema,
    allocate_bitmask,
    allowed_ids,
    is_allowed,
)

BACKENDS = ("xgrammar", "llguidance", "outlines")


def get_backend(name: str) -> type[GrammarBackend]:
    """The backend class for ``name`` (one of ``BACKENDS``)."""
    if name == "xgrammar":
        from schemaops.backends.xgrammar import XGrammarBackend

        return XGrammarBackend
    if name == "llguidance":
        from schemaops.backends.llguidance import LLGuidanceBackend

        return LLGuidanceBackend
    if name == "outlines":
        from schemaops.backends.outlines import OutlinesBackend

        return OutlinesBackend
    raise ValueError(f"unknown backend {name!r}: expected one of {', '.join(BACKENDS)}")


__all__ = [
    "BACKENDS",
    "CompiledGrammar",
    "GrammarBackend",
    "Matcher",
    "UnsupportedSchema",
    "allocate_bitmask",
    "allowed_ids",
    "get_backend",
    "is_allowed",
]
