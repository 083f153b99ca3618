"""The registry's data model: one ``Schema`` per file, with its exact wire strings.

SGLang caches compiled grammars by ``(key_type, key_string)`` where the key string is the
exact schema text, so the registry owns the one canonical serialisation and every other part
(warm-up, audit, check) asks the registry for it instead of re-serialising.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Api = Literal["native", "openai"]

DEFAULT_DRAFT = "https://json-schema.org/draft/2020-12/schema"


def canonical_text(schema: Any) -> str:
    """The registry's one canonical serialisation: compact, key order preserved, UTF-8.

    Key order is kept (never sorted) because property order is generation order in xgrammar
    and llguidance: sorting would change what the model writes.
    """
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def openai_text(schema: Any) -> str:
    """What SGLang's OpenAI endpoints derive from ``response_format``: ``json.dumps(schema)``."""
    return json.dumps(schema)


def content_hash(schema: Any) -> str:
    """sha256 of the canonical text: the schema's identity (first 16 hex digits shown)."""
    return hashlib.sha256(canonical_text(schema).encode("utf-8")).hexdigest()


@dataclass
class Schema:
    """One registry schema.

    ``name`` is the file stem (or the schema's ``title`` override via ``x-schemaops-name``),
    ``version`` from ``x-schemaops-version`` / ``version`` (default ``"1"``), ``draft`` from
    ``$schema`` (default 2020-12). ``valid``/``invalid`` are the sidecar example instances.
    """

    name: str
    schema: Any
    path: Path | None = None
    version: str = "1"
    draft: str = DEFAULT_DRAFT
    valid: list[Any] = field(default_factory=list)
    invalid: list[Any] = field(default_factory=list)

    @property
    def hash(self) -> str:
        return content_hash(self.schema)

    def wire(self, api: Api = "native") -> str:
        """The exact string a server keys its grammar cache on for this API path."""
        if api == "native":
            return canonical_text(self.schema)
        if api == "openai":
            return openai_text(self.schema)
        raise ValueError(f"unknown api {api!r}: expected 'native' or 'openai'")
