"""A failed output's ``best_match`` located by jsonschema-rs, worded by ``jsonschema``.

Why: explaining a violation with ``jsonschema`` walks the failing part of the output with a
new validator object per subschema (tens to hundreds of µs a line; issue 36: 64 % of a
platform's lines fail). jsonschema-rs lists every error of an output in Rust
(``Validator.iter_errors``: keyword location, instance location) for a fraction of that. What
the report prints (keyword, path, message) must stay exactly ``best_match``'s
(``jsonschema.exceptions``, 4.26.0), so this module only *locates* the error with
jsonschema-rs and lets ``jsonschema``'s own keyword function write it:

1. ``best_match`` picks the maximum of ``relevance`` over the top-level errors, the first one
   among equals, then descends into a weak error's context. ``relevance`` is a function of
   an error's instance path, keyword, and whether the instance matches the subschema's
   ``type``: all of them are known from jsonschema-rs's errors (the subschema is found by
   walking its keyword location, ``schema_path``, through the root schema), so the maximum is
   computed here over jsonschema-rs's list.
2. Order is the one thing jsonschema-rs does not share with ``jsonschema``: when the
   maximum is held by errors of more than one (subschema, keyword, instance location), each
   is worded and they must read the same, else ``jsonschema`` explains as before.
3. The chosen keyword's function from ``jsonschema`` (``cls.VALIDATORS``) runs on that
   subschema and instance alone, as ``iter_errors`` would call it, and ``best_match`` of
   what it yields (one keyword at one place: the first, then the context descent) is the
   answer; the path is the instance location plus the error's own. It yielding nothing
   (jsonschema-rs stricter there: an ASCII ``\\d``, a native format) sends the output to
   ``jsonschema``.

Held to ``best_match`` by ``tests/test_audit_rs_explain.py`` (the JSON-Schema-Test-Suite and
a JSONSchemaBench sample with mutated instances, field by field). It answers only where that
differential found no disagreement; everything else returns None (``jsonschema`` answers):

- a schema with ``unevaluatedProperties``/``unevaluatedItems`` (``explainable``);
- a schema with any ``$id``-family key (its refs may change the base: a ``schema_path`` is
  then relative to another resource), or one jsonschema-rs does not answer for at all;
- errors whose keyword is not in ``TERMINALS`` (``unevaluatedProperties``/``Items``,
  ``propertyNames`` (its errors' instance is a key, not a location), ``minContains``/
  ``maxContains`` (``jsonschema`` reports them as ``contains``), ``dependencies`` mixing
  arrays and schemas, and jsonschema-rs's ``falseSchema`` errors (``items: false`` is one
  error at the array in ``jsonschema``, one per extra item in jsonschema-rs));
- a keyword location that does not walk through the schema as expected.

The instance given is the value the audit parsed; everything is read, nothing is changed.
"""

from __future__ import annotations

from typing import Any

import orjson
from jsonschema.exceptions import WEAK_MATCHES, ValidationError, best_match

#: keywords whose error ``jsonschema`` yields itself (not an applicator passing on its
#: subschemas' errors) and whose location and wording the differential test found equal
TERMINALS = frozenset(
    {
        "type",
        "enum",
        "const",
        "required",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "additionalProperties",
        "additionalItems",
        "anyOf",
        "oneOf",
        "not",
        "contains",
        "dependentRequired",
        "dependencies",
    }
)
#: applicators whose next location segment names a subschema in an object
_BY_NAME = frozenset(
    {"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"}
)
#: applicators whose next segment is an index into a list of subschemas
_BY_INDEX = frozenset({"allOf", "prefixItems"})
#: applicators holding one subschema (when it is an object; ``false`` is a terminal)
_ONE = frozenset({"then", "else", "additionalProperties", "items", "additionalItems"})
#: jsonschema-rs error kinds never read here
_REFUSED_KINDS = frozenset({"falseSchema", "propertyNames", "unevaluatedProperties"})


def explainable(schema: Any) -> bool:
    """Whether jsonschema-rs's errors can locate this schema's ``best_match``: not where
    ``unevaluatedProperties``/``unevaluatedItems`` appear (``jsonschema`` counts a property
    that failed ``additionalProperties`` as unevaluated and reports that error too, where
    jsonschema-rs does not: found by the suite's differential). A byte scan of orjson's
    text (a superset: a property of that name costs speed, never a verdict)."""
    try:
        return b'"unevaluated' not in orjson.dumps(schema)
    except TypeError:
        return False


def _locate(root: Any, path: list[Any]) -> tuple[dict, str] | None:
    """(the subschema holding the failing keyword, the keyword) at ``path``, jsonschema-rs's
    keyword location, or None when it does not walk as an applicator chain."""
    node = root
    i, n = 0, len(path)
    while i < n:
        if type(node) is not dict:
            return None
        seg = path[i]
        value = node.get(seg)
        if seg in _BY_NAME or (seg == "items" and type(value) is list) or seg in _BY_INDEX:
            if i + 1 >= n:
                return None
            node = value[path[i + 1]]
            i += 2
        elif seg == "dependencies" and type(value) is dict and i + 1 < n:
            if not all(type(v) is dict for v in value.values()):
                return None  # array and schema forms in one keyword: jsonschema's own order
            node = value[path[i + 1]]
            i += 2
        elif seg in _ONE and type(value) is dict:
            node = value
            i += 1
        else:
            return node, seg
    return None


def _at(value: Any, path: list[Any]) -> Any:
    for seg in path:
        value = value[seg]
    return value


def _matches_type(checker: Any, schema: dict, instance: Any) -> bool:
    """``ValidationError._matches_type`` (jsonschema 4.26.0) for an error of ``schema``."""
    expected = schema.get("type")
    if expected is None:
        return False
    if isinstance(expected, str):
        return checker.is_type(instance, expected)
    return any(checker.is_type(instance, t) for t in expected)


def _worded(validator: Any, schema: dict, keyword: str, instance: Any) -> ValidationError | None:
    """``best_match`` of what ``jsonschema``'s ``keyword`` function yields at ``schema`` for
    ``instance``, each error completed as ``iter_errors`` completes it."""
    fn = validator.VALIDATORS.get(keyword)
    if fn is None:
        return None
    value = schema[keyword]
    evolved = validator.evolve(schema=schema)
    errors = list(fn(evolved, value, instance, schema) or ())
    for error in errors:
        error._set(
            validator=keyword,
            validator_value=value,
            instance=instance,
            schema=schema,
            type_checker=validator.TYPE_CHECKER,
        )
        if keyword != "$ref":
            error.schema_path.appendleft(keyword)
    return best_match(errors) if errors else None


def rs_best_match(rs_validator: Any, validator: Any, root: Any, instance: Any) -> Any:
    """(keyword, absolute path list, message) of ``best_match(validator.iter_errors(instance))``
    for an ``instance`` jsonschema-rs refuses, or None when this module cannot be sure
    (``jsonschema`` then answers). ``validator``: ``jsonschema``'s validator of ``root``
    (format checker included); ``rs_validator``: jsonschema-rs's of the same schema."""
    checker = validator.TYPE_CHECKER
    best_key: Any = None
    best: dict[tuple, tuple[dict, str, Any, list]] = {}
    for err in rs_validator.iter_errors(instance):
        if err.kind.name in _REFUSED_KINDS:
            return None
        try:
            found = _locate(root, err.schema_path)
        except (KeyError, IndexError, TypeError):  # a location outside this document
            return None
        if found is None:
            return None
        schema, keyword = found
        if keyword not in TERMINALS:
            return None
        at = err.instance_path
        try:
            inst = _at(instance, at)
            key = (
                -len(at),
                at,
                keyword not in WEAK_MATCHES,
                False,
                not _matches_type(checker, schema, inst),
            )
        except Exception:  # noqa: BLE001 (a location or type jsonschema-rs reads otherwise)
            return None
        if best_key is None or key > best_key:
            best_key, best = key, {}
        if key == best_key:
            best.setdefault((id(schema), keyword, tuple(at)), (schema, keyword, inst, at))
    if best_key is None:
        return None
    answer = None
    for schema, keyword, inst, at in best.values():
        err = _worded(validator, schema, keyword, inst)
        if err is None:
            return None
        got = (
            err.validator if err.validator is not None else "false",
            [*at, *err.absolute_path],
            err.message,
        )
        if answer is not None and got != answer:
            return None  # tied at the top in an order only jsonschema knows
        answer = got
    return answer
