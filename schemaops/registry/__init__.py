"""Schema registry: load, validate, version and serialise an application's schemas.

Public API (other areas rely on it):

- ``load_registry(path) -> Registry``: a folder of ``NAME.json`` schema files (plus optional
  ``NAME.examples.json`` sidecars). Raises ``RegistryError`` listing every problem
  (``.problems``: dicts with ``file``, ``pointer``, ``kind``, ``reason``; ``.exit_code``).
- ``inspect_registry(path) -> (Registry, problems)``: the same without raising.
- ``LazyRegistry(path)``: the same checks one schema at a time, on first use (``audit``):
  ``schema(name)`` raises InputError for an unknown name or a schema with problems.
- ``Registry``: ``.schemas`` (name -> Schema, in file path order), ``.libraries`` (shared-defs
  files), ``get(name)`` (InputError if unknown), iteration, ``len``, ``in``.
- ``Schema``: ``name``, ``version``, ``draft``, ``hash`` (sha256 of ``wire("native")``),
  ``schema`` (the parsed file), ``bundled()`` (self-contained form), ``valid``/``invalid``
  examples, ``wire(api)`` for ``api`` in ``native``/``openai``, ``validator()``.
- ``load_schema_file(path)``, ``load_schema_text(text)``: one schema, raising on problems.
- ``validate_schema_object(obj) -> problems``: never raises (corpora, benchmarks).
- ``diff_schemas(old, new) -> [Change]``, ``diff_paths(old, new) -> DiffReport``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below, for type checkers; at run time __getattr__ loads them
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

#: public name -> the submodule defining it. Imported on first use (PEP 562 ``__getattr__``,
#: https://peps.python.org/pep-0562/, read 2026-12-01): importing one submodule, such as
#: ``schemaops.registry.defaults`` for a command's option default, must not import jsonschema,
#: referencing and the diff code for every ``schemaops`` process (issue 24, start-up).
_HOME = {
    "Change": "diff",
    "diff_schemas": "diff",
    "DiffReport": "diffpaths",
    "diff_paths": "diffpaths",
    "LazyRegistry": "lazy",
    "Registry": "loader",
    "RegistryError": "loader",
    "format_problem": "loader",
    "inspect_registry": "loader",
    "load_registry": "loader",
    "load_schema_file": "loader",
    "load_schema_text": "loader",
    "validate_schema_object": "loader",
    "Schema": "model",
    "canonical_text": "model",
    "content_hash": "model",
    "openai_text": "model",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # once: later lookups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))


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
