"""Schema registry: load, validate, version and serialise an application's schemas.

Public API (other areas rely on it):

- ``load_registry(path) -> Registry``: a folder of ``NAME.json`` schema files (plus optional
  ``NAME.examples.json`` sidecars). Raises ``RegistryError`` listing every problem.
- ``Registry``: ``.schemas`` (name -> Schema, in name order), ``get(name)``, iteration, ``len``.
- ``Schema``: ``name``, ``version``, ``draft``, ``hash``, ``schema`` (the parsed JSON),
  ``valid``/``invalid`` examples, ``wire(api)`` for ``api`` in ``native``/``openai``.
"""

from schemaops.registry.loader import Registry, RegistryError, load_registry
from schemaops.registry.model import Schema, canonical_text, content_hash, openai_text

__all__ = [
    "Registry",
    "RegistryError",
    "Schema",
    "canonical_text",
    "content_hash",
    "load_registry",
    "openai_text",
]
