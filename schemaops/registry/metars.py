"""The metaschema fast path: jsonschema-rs (Rust) validators of the drafts' metaschemas.

Why: a schema's first use is mostly its metaschema check. ``jsonschema``'s ``iter_errors``
costs milliseconds a schema, the closures compiled from each metaschema in Python that used
to stand in front of it (``registry/metacheck.py``, issue 15) still about 1.2 ms on a cold
audit (issue 24's profile); jsonschema-rs, a dependency already (``audit/verdict/rscheck.py``),
answers the same question in microseconds, so the home-made compiler was removed.

The contract is one-sided: ``rs_valid`` True means ``jsonschema``'s metaschema validator (with
``schemaops.formats``) finds no error; False only sends the schema to ``jsonschema``, which
stays the authority for every reported problem (pointer and message). So jsonschema-rs may be
stricter, never more lenient, and what would make it more lenient is handled here (each case
tried with jsonschema-rs 0.61.2 and jsonschema 4.26.0; ``tests/test_registry_meta_rs.py``):

- the draft: each draft's metaschema gets the draft-specific validator class (draft-04's
  ``integer`` refuses ``1.0`` there as in ``jsonschema``); the schema checked is an instance,
  so its own ``$schema`` changes nothing. Draft-03 has no jsonschema-rs class: ``jsonschema``.
- ``format``: the metaschemas use ``regex`` (``pattern``, ``patternProperties`` keys), ``uri``
  and ``uri-reference`` (``$id``, ``$ref``, ``$schema``). Every format ``schemaops.formats``
  knows is passed as a custom format (custom formats take precedence over built-in ones), so
  a ``pattern`` is a regex when Python's ``re`` compiles it; ``validate_formats=True`` makes
  2019-09 and 2020-12 assert ``format`` as ``jsonschema`` does with a format checker.
- the metaschemas' own ``pattern``s (``$anchor``, ``$id`` in 2019-09 and 2020-12) are plain
  ASCII classes and ``$``; ECMA-262's ``$`` does not match before a final newline where
  Python's does, which only makes jsonschema-rs stricter. No metaschema uses ``multipleOf``.
- Python values that are not JSON: jsonschema-rs reads a tuple as an array and a ``Decimal``
  as a number, where ``jsonschema`` refuses both as ``array``/``integer``. Only a schema made
  of exactly ``dict`` (``str`` keys), ``list``, ``str``, ``int``, ``float``, ``bool`` and
  ``None`` is asked here (what ``json.loads`` gives); anything else goes to ``jsonschema``.
- depth: ``jsonschema`` raises RecursionError on a schema nested a hundred-odd levels deep
  (2020-12 ``items`` chains: 125) where jsonschema-rs answers. A schema nested deeper than
  the registry's parse bound (``jsontext.MAX_DEPTH``, 128 containers; the loader refuses such
  a document as ``too_deep`` before this check) goes to ``jsonschema``. Within it the removed
  closures answered too (they found 2020-12 chains of ``items`` valid up to 150 levels), so a
  registry's verdicts are today's.
- anything jsonschema-rs raises (a value it cannot convert: a NaN, a ``str`` subclass, a
  non-string key) is "not valid here".
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import jsonschema
import jsonschema_rs

from schemaops.formats import rs_formats
from schemaops.registry.jsontext import MAX_DEPTH as REGISTRY_DEPTH

#: a schema nested deeper than this (containers, root = 1) is left to ``jsonschema``
MAX_DEPTH = REGISTRY_DEPTH

#: draft label -> (Python jsonschema's class, jsonschema-rs's); draft-03 has no Rust class
RS_METASCHEMAS: dict[str, tuple[type, type]] = {
    "draft-04": (jsonschema.Draft4Validator, jsonschema_rs.Draft4Validator),
    "draft-06": (jsonschema.Draft6Validator, jsonschema_rs.Draft6Validator),
    "draft-07": (jsonschema.Draft7Validator, jsonschema_rs.Draft7Validator),
    "2019-09": (jsonschema.Draft201909Validator, jsonschema_rs.Draft201909Validator),
    "2020-12": (jsonschema.Draft202012Validator, jsonschema_rs.Draft202012Validator),
}

_JSON_SCALARS = frozenset((str, int, float, bool, type(None)))


@cache
def meta_is_valid(label: str) -> Callable[[Any], bool] | None:
    """jsonschema-rs's ``is_valid`` for draft ``label``'s metaschema (built once per process),
    or None for a draft it has no class for."""
    pair = RS_METASCHEMAS.get(label)
    if pair is None:
        return None
    py_cls, rs_cls = pair
    validator = rs_cls(
        py_cls.META_SCHEMA, validate_formats=True, offline=True, formats=rs_formats()
    )
    return validator.is_valid


def plain_json(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """True when ``value`` is made of exact JSON types (``str`` keys) and nested at most
    ``max_depth`` containers deep."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    scalars = _JSON_SCALARS
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        if kind is dict:
            if depth > max_depth:
                return False
            for k, v in node.items():
                if type(k) is not str:
                    return False
                t = type(v)
                if t is dict or t is list:
                    stack.append((v, depth + 1))
                elif t not in scalars:
                    return False
        elif kind is list:
            if depth > max_depth:
                return False
            for v in node:
                t = type(v)
                if t is dict or t is list:
                    stack.append((v, depth + 1))
                elif t not in scalars:
                    return False
        elif kind not in scalars:
            return False
    return True


def rs_valid(schema: Any, label: str, plain: bool = False) -> bool:
    """True only when ``jsonschema`` would find ``schema`` valid against draft ``label``'s
    metaschema (see the module docstring); False: ask ``jsonschema``. ``plain``: the caller
    knows ``schema`` passes ``plain_json`` (``jsontext.parse`` read it: exact JSON types,
    nested no deeper than ``MAX_DEPTH``), so it is not walked again."""
    is_valid = meta_is_valid(label)
    if is_valid is None or not (plain or plain_json(schema)):
        return False
    try:
        return bool(is_valid(schema))
    except Exception:  # a value jsonschema-rs cannot read: jsonschema answers
        return False
