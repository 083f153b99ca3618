"""The registry's data model: one ``Schema`` per file, with its exact wire strings.

SGLang caches compiled grammars by ``(key_type, key_string)`` where the key string is the
exact schema text, so the registry owns the one canonical serialisation and every other part
(warm-up, audit, check) asks the registry for it instead of re-serialising.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from schemaops.formats import format_checker
from schemaops.registry.drafts import DEFAULT_DRAFT, draft_label, validator_class
from schemaops.registry.refs import no_fetch
from schemaops.strings import sha256_hex

Api = Literal["native", "openai"]


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
    return sha256_hex(canonical_text(schema))


@dataclass
class Schema:
    """One registry schema.

    ``name`` is the file stem (or an ``x-schemaops-name`` override), ``version`` from
    ``x-schemaops-version`` / ``version`` (default ``"1"``), ``draft`` the canonical
    ``$schema`` URI of its dialect (default 2020-12). ``valid``/``invalid`` are the sidecar
    example instances. ``self_contained`` is set by the loader when the schema refers to
    other registry files: the same schema with those refs inlined into local ``$defs``.
    """

    name: str
    schema: Any
    path: Path | None = None
    version: str = "1"
    draft: str = DEFAULT_DRAFT
    valid: list[Any] = field(default_factory=list)
    invalid: list[Any] = field(default_factory=list)
    self_contained: Any = field(default=None, repr=False)
    _validator: Any = field(default=None, repr=False, compare=False)

    @property
    def hash(self) -> str:
        """Identity of what is served: sha256 of ``wire("native")`` (the bundled form).

        So a change to a library this schema refers to changes its hash too, and the hash
        always matches the native cache key's sha256.
        """
        return content_hash(self.bundled())

    @property
    def source_hash(self) -> str:
        """sha256 of the file's own canonical text (refs not inlined): duplicate detection."""
        return content_hash(self.schema)

    @property
    def title(self) -> str:
        """The schema's ``title`` (or ``""``), for listings."""
        return str(self.schema.get("title", "")) if isinstance(self.schema, dict) else ""

    @property
    def description(self) -> str:
        """The schema's ``description`` (or ``""``), for listings."""
        return str(self.schema.get("description", "")) if isinstance(self.schema, dict) else ""

    def bundled(self) -> Any:
        """The self-contained form: what a grammar backend can compile without a registry.

        Grammar backends resolve only local ``#...`` refs, so cross-file refs are inlined by
        the loader. A schema without cross-file refs is returned as is (the same object).
        """
        return self.schema if self.self_contained is None else self.self_contained

    def wire(self, api: Api = "native") -> str:
        """The exact string a server keys its grammar cache on for this API path.

        Built from ``bundled()``: the string must be what the application really sends, and
        a server cannot follow a ref to another registry file.
        """
        if api == "native":
            return canonical_text(self.bundled())
        if api == "openai":
            return openai_text(self.bundled())
        raise ValueError(f"unknown api {api!r}: expected 'native' or 'openai'")

    def validator(self) -> Any:
        """A jsonschema validator for instances, with format assertions on (cached).

        Formats follow ``schemaops.formats`` (the audit's semantics: RFC 3339 dates and
        times); audit's ``--no-format`` builds its own validator without a format checker.
        """
        if self._validator is None:
            cls = validator_class(draft_label(self.draft))
            fmt = format_checker()
            self._validator = cls(self.bundled(), format_checker=fmt, registry=no_fetch())
        return self._validator
