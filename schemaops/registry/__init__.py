"""Schema registry: load, validate, version and serialise an application's schemas.

Public API (other areas rely on it):

- ``load_registry(path) -> Registry``: a folder of ``NAME.json`` schema files (plus optional
  ``NAME.examples.json`` sidecars). Raises ``RegistryError`` listing every problem
  (``.problems``: dicts with ``file``, ``pointer``, ``kind``, ``reason``; ``.exit_code``).
- ``inspect_registry(path) -> (Registry, problems)``: the same without raising.
- ``LazyRegistry(path)``: the same checks one schema at a time, on first use (``audit``):
  ``schema(name)`` raises InputError for an unknown name or a schema with problems.
- ``Registry``: ``.schemas`` (name -> Schema, in name order), ``.libraries`` (shared-defs
  files), ``get(name)`` (InputError if unknown), iteration, ``len``, ``in``.
- ``Schema``: ``name``, ``version``, ``draft``, ``hash`` (sha256 of ``wire("native")``),
  ``schema`` (the parsed file), ``bundled()`` (self-contained form), ``valid``/``invalid``
  examples, ``wire(api)`` for ``api`` in ``native``/``openai``, ``validator()``.
- ``load_schema_file(path)``, ``load_schema_text(text)``: one schema, raising on problems.
- ``validate_schema_object(obj) -> problems``: never raises (corpora, benchmarks).
- ``diff_schemas(old, new) -> [Change]``, ``diff_paths(old, new) -> DiffReport``.
"""

from schemaops.registry.diff import Change, diff_schemas
from schemaops.registry.diffpaths import DiffReport, diff_paths
from schemaops.registry.lazy import LazyRegistry
from schemaops.registry.loader import (
    Registry,
    RegistryError,
    format_problem,
    inspect_registry,
    load_registry,
    load_schema_file,
    load_schema_text,
    validate_schema_object,
)
from schemaops.registry.model import Schema, canonical_text, content_hash, openai_text

__all__ = [
    "Change",
    "DiffReport",
    "LazyRegistry",
    "Registry",
    "RegistryError",
    "Schema",
    "canonical_text",
    "content_hash",
    "diff_paths",
    "diff_schemas",
    "format_problem",
    "inspect_registry",
    "load_registry",
    "load_schema_file",
    "load_schema_text",
    "openai_text",
    "validate_schema_object",
]
