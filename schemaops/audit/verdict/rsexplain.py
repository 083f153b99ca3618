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
   maximum is held by errors of more than one keyword of one subschema at one place, the
   keyword first in that subschema's own order is ``iter_errors``' first (it runs
   ``applicable_validators``, the schema's items in order); when it is held by more than one
   subschema or place, each is worded and they must read the same, else ``jsonschema``
   explains as before.
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
- a schema with any ``$id``-family key but a root ``$id`` (``root_id_only``: a nested one may
  change the base, and a ``schema_path`` is then relative to another resource), or one
  jsonschema-rs does not answer for at all;
- errors whose keyword is not in ``TERMINALS`` (``unevaluatedProperties``/``Items``,
  ``propertyNames`` (its errors' instance is a key, not a location), ``minContains``/
  ``maxContains`` (``jsonschema`` reports them as ``contains``), ``dependencies`` mixing
  arrays and schemas, and jsonschema-rs's ``falseSchema`` errors (``items: false`` is one
  error at the array in ``jsonschema``, one per extra item in jsonschema-rs));
- a keyword location that does not walk through the schema as expected;
- an empty-string key in the schema or the output: jsonschema-rs 0.61.2 drops it from the
  locations it reports (and reads a key such as ``"0"`` as an index: such a location does
  not walk, and is handed back).

The instance given is the value the audit parsed; everything is read, nothing is changed.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

import jsonschema_rs
import orjson

from schemaops.audit.verdict.schemakeys import ID_MEMBERS

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

# ``jsonschema`` itself is imported by the functions that word an error, not here: the audit
# asks ``explainable`` of every schema it sets up, and a warm audit of outputs jsonschema-rs
# accepts never imports ``jsonschema`` (issue 36, start-up).

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
#: keywords whose one error ``jsonschema`` yields at the failing place itself (no context, no
#: path of its own) from a count or an equality the two libraries define alike (no regex, no
#: format, no type name a draft reads otherwise): chosen alone, such an error's keyword and
#: path are known from jsonschema-rs's list, and its wording can wait until an example or a
#: ``--records`` row reads it (``Wording``; a failure is mostly only counted). ``type`` waits
#: too once the draft's own type checker confirms the error (``_type_missed``)
LAZY_WORDED = frozenset(
    {
        "required",
        "enum",
        "const",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "dependentRequired",
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


def explainable(schema: Any) -> bool:
    """Whether jsonschema-rs's errors can locate this schema's ``best_match``: not where
    ``unevaluatedProperties``/``unevaluatedItems`` appear (``jsonschema`` counts a property
    that failed ``additionalProperties`` as unevaluated and reports that error too, where
    jsonschema-rs does not: found by the suite's differential). A byte scan of orjson's
    text (a superset: a property of that name costs speed, never a verdict)."""
    try:
        text = orjson.dumps(schema)
    except TypeError:
        return False
    return b'"unevaluated' not in text and _EMPTY_KEY not in text


def root_id_only(schema: Any) -> bool:
    """Whether the schema's one ``$id``-family key is a string ``$id`` at its root naming no
    anchor: its base is the root's for every subschema, so jsonschema-rs's keyword locations
    walk this document as they do one without ``$id``, and ``jsonschema``'s root validator
    resolves its refs from that same base (a sixth of JSONSchemaBench's schemas, whose
    failures ``jsonschema`` walked: 8,832 of issue 36's (b) at ~100 µs each). One member
    ``"$id":`` in orjson's text (inside a string every quote is escaped) and no other of the
    family; an ``$id`` with a fragment (a draft-07 anchor such as ``#top``) is left out."""
    if type(schema) is not dict:
        return False
    rid = schema.get("$id")
    if type(rid) is not str or "#" in rid.rstrip("#"):
        return False
    try:
        text = orjson.dumps(schema)
    except TypeError:
        return False
    return text.count(b'"$id":') == 1 and not any(m in text for m in _OTHER_ID_MEMBERS)


#: the ``$id`` family but ``$id`` itself, as members in orjson's text
_OTHER_ID_MEMBERS = tuple(m for m in ID_MEMBERS if m != b'"$id":')
#: an empty-string key in orjson's text (inside a string orjson escapes every quote, so only a
#: key can read so): jsonschema-rs 0.61.2 drops such a key from its instance and keyword
#: locations (``{"": "x"}`` fails at ``[]``), found by the suite's differential
_EMPTY_KEY = b'"":'


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


def _type_missed(validator: Any, schema: dict, instance: Any) -> bool:
    """Whether ``jsonschema``'s ``type`` keyword yields its (one) error for ``instance`` at
    ``schema``: none of the names is the instance's type by the draft's own type checker
    (``_keywords.type``, 4.26.0). Where it does, the error's keyword and place are known and
    its message can wait (a type name a draft reads otherwise, ``integer`` for ``1.0``, is
    decided here by that checker, as the keyword decides it); an unknown type name is
    jsonschema's to explain."""
    names = schema.get("type")
    names = [names] if type(names) is str else names
    if type(names) is not list:
        return False
    try:
        return not any(validator.is_type(instance, t) for t in names)
    except Exception:  # noqa: BLE001 (UnknownType: jsonschema raises it, and explains)
        return False


def _worded(validator: Any, schema: dict, keyword: str, instance: Any) -> ValidationError | None:
    """``best_match`` of what ``jsonschema``'s ``keyword`` function yields at ``schema`` for
    ``instance``: its first error (every error one keyword yields at one place has the same
    ``relevance``, so ``max`` keeps the first), completed as ``iter_errors`` completes it, and
    ``best_match``'s descent into its context. The function is given the root's validator:
    with no ``$id``-family key in the schema every subschema resolves refs against the root
    document, as the validator ``iter_errors`` would have evolved for it does, and these
    keywords read their subschema from their ``schema`` argument."""
    fn = validator.VALIDATORS.get(keyword)
    if fn is None:
        return None
    value = schema[keyword]
    for error in fn(validator, value, instance, schema) or ():
        error._set(
            validator=keyword,
            validator_value=value,
            instance=instance,
            schema=schema,
            type_checker=validator.TYPE_CHECKER,
        )
        return _jsonschema()[1]([error]) if error.context else error
    return None


def _no_extras_allowed(schema: dict) -> bool:
    """``additionalProperties: false`` beside no ``patternProperties``: jsonschema's keyword
    (``_keywords.additionalProperties``, 4.26.0) then yields one error naming the extra
    names, with no subschema walked and no pattern searched, so its message can wait like a
    ``LAZY_WORDED`` one (14 % of the located violations on the JSONSchemaBench workload, ~19
    µs each to word at once)."""
    return schema.get("additionalProperties") is False and "patternProperties" not in schema


@cache
def _jsonschema() -> tuple[frozenset[str], Any]:
    """``jsonschema.exceptions``' ``WEAK_MATCHES`` and ``best_match``, imported on first use
    (a function-level import on every failure cost ~5 µs there)."""
    from jsonschema.exceptions import WEAK_MATCHES, best_match

    return WEAK_MATCHES, best_match


def rs_best_match(
    rs_validator: Any, validator: Any, root: Any, instance: Any, lazy: bool = False
) -> Any:
    """(keyword, absolute path list, message) of ``best_match(validator.iter_errors(instance))``
    for an ``instance`` jsonschema-rs refuses, or None when this module cannot be sure
    (``jsonschema`` then answers). ``validator``: ``jsonschema``'s validator of ``root``
    (format checker included); ``rs_validator``: jsonschema-rs's of the same schema.
    ``lazy``: for one error of a ``LAZY_WORDED`` keyword the message is a ``Wording``, called
    when read.

    ``relevance`` is compared in two steps: (instance path length, instance path, not a weak
    keyword) for every error, then whether the instance matches the subschema's ``type``
    only among the errors that tie on those (the key's last element; its fourth, a "strong"
    keyword, is always False: ``STRONG_MATCHES`` is empty)."""
    weak = _jsonschema()[0]
    try:
        if _EMPTY_KEY in orjson.dumps(instance):
            return None  # jsonschema-rs would drop that key from its locations
    except TypeError:  # an integer beyond 64 bits: orjson cannot write it, so no key is known
        return None
    errors = list(rs_validator.iter_errors(instance))
    if len(errors) == 1:  # most refused outputs: nothing to rank
        return _one_error(errors[0], validator, root, instance, lazy)
    top: Any = None
    group: dict[tuple, tuple[dict, str, Any]] = {}
    for err in errors:
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
        key = (-len(at), at, keyword not in weak)
        if top is None or key > top:
            top, group = key, {}
        if key == top:
            group.setdefault((id(schema), keyword, tuple(at)), (schema, keyword, at, err))
    if top is None:
        return None
    try:
        chosen = [
            (schema, keyword, _at(instance, at), at, err)
            for schema, keyword, at, err in group.values()
        ]
        if len(chosen) > 1:
            checker = validator.TYPE_CHECKER
            marks = [not _matches_type(checker, c[0], c[2]) for c in chosen]
            chosen = [c for c, mark in zip(chosen, marks, strict=True) if mark == max(marks)]
        if len(chosen) > 1 and len({(id(c[0]), tuple(c[3])) for c in chosen}) == 1:
            # one subschema at one place: ``iter_errors`` yields its keywords' errors in the
            # order of its keys (``applicable_validators``: ``schema.items()``), so the first
            # of them holds the maximum
            order = list(chosen[0][0])
            chosen = [min(chosen, key=lambda c: order.index(c[1]))]
    except Exception:  # noqa: BLE001 (a location or type jsonschema-rs reads otherwise)
        return None
    if lazy and len(chosen) == 1:
        found = _lazily(validator, *chosen[0][:4])
        if found is None and chosen[0][1] in _BRANCHING:
            found = _descended(validator, root, *chosen[0])
        if found is not None:
            return found
    return _written(validator, [c[:4] for c in chosen])


def _one_error(err: Any, validator: Any, root: Any, instance: Any, lazy: bool) -> Any:
    """``rs_best_match`` for a value jsonschema-rs finds one error in: that error is the
    best match (the group of the greatest key holds it alone), so no key is built."""
    try:
        found = _locate(root, err.schema_path)
    except (KeyError, IndexError, TypeError):  # a location outside this document
        return None
    if found is None or found[1] not in TERMINALS:
        return None
    schema, keyword = found
    at = err.instance_path
    try:
        inst = _at(instance, at)
    except Exception:  # noqa: BLE001 (a location jsonschema-rs reads otherwise)
        return None
    if lazy:
        lazily = _lazily(validator, schema, keyword, inst, at)
        if lazily is None and keyword in _BRANCHING:
            lazily = _descended(validator, root, schema, keyword, inst, at, err)
        if lazily is not None:
            return lazily
    return _written(validator, [(schema, keyword, inst, at)])


#: applicators whose failure carries every branch's errors, into which ``best_match``
#: descends; jsonschema-rs keeps those errors too (``kind.context``, one list per branch)
_BRANCHING = frozenset({"anyOf", "oneOf"})
_CONTEXT_KINDS = {
    "anyOf": jsonschema_rs.ValidationErrorKind.AnyOf,
    "oneOf": jsonschema_rs.ValidationErrorKind.OneOfNotValid,
}


def _descended(
    validator: Any, root: Any, schema: dict, keyword: str, inst: Any, at: list, err: Any
) -> Any:
    """``best_match``'s descent into an ``anyOf``/``oneOf`` failure's context, read from
    jsonschema-rs's branch errors instead of running every branch with ``jsonschema`` (its
    keyword function validates each branch: ~300 µs a ``oneOf`` on JSONSchemaBench, a
    quarter of all located explanations' cost on issue 36's (b)). Returns (keyword, path,
    message or a callable writing it) or None (worded by ``jsonschema`` as before).

    ``jsonschema`` 4.26.0: ``anyOf``, and ``oneOf`` when no branch is valid, yield one error
    "``{instance!r}`` is not valid under any of the given schemas" whose context is every
    branch's errors in branch order (``_keywords.py``); ``best_match`` then takes, while the
    error has a context, the context error of least ``relevance``, or stays where the two
    least tie (``exceptions.best_match``). ``relevance`` of a context error is (its path's
    length negated, its path relative to the failing instance, not a weak keyword, False,
    not matching its subschema's ``type``): all read here from each branch error's keyword
    location (walked through the branch, as ``_locate`` walks, or from the root for a
    ``$ref``'s target, as for the top errors) and instance location. So the
    least and whether it ties do not depend on the errors' order. Anything not read so
    (a location that does not walk, a keyword outside ``TERMINALS``, ``oneOf`` valid under
    several branches) returns None. Held to ``best_match`` by
    ``tests/test_audit_rs_explain.py``."""
    weak = _jsonschema()[0]
    checker = validator.TYPE_CHECKER
    try:
        while True:
            if not isinstance(err.kind, _CONTEXT_KINDS[keyword]):
                return None
            base = err.schema_path
            n, m = len(at), len(base)
            keyed = []
            for index, branch_errors in enumerate(err.kind.context):
                branch = schema[keyword][index]
                for c in branch_errors:
                    where, sp = c.instance_path, c.schema_path
                    if where[:n] != at:
                        return None
                    if sp[:m] == base:  # in this branch (a ``false`` one has no keyword)
                        if len(sp) <= m + 1 or sp[m] != index:
                            return None
                        found = _locate(branch, sp[m + 1 :])
                    else:  # reached through a $ref: its target's keyword location, as for
                        found = _locate(root, sp)  # ``rs_best_match``'s own errors
                    # the whole location walked, ending at the keyword (``_locate`` stops at
                    # the first segment it does not walk)
                    if found is None or found[1] not in TERMINALS or sp[-1] != found[1]:
                        return None
                    sub, kw = found
                    rel = where[n:]
                    keyed.append(((-len(rel), rel, kw not in weak), sub, kw, _at(inst, rel), c))
            if not keyed:
                return None
            least = _least_relevant(keyed, checker)
            if least is None:  # tied: this error is the match
                return keyword, list(at), _not_valid_under_any(inst)
            _, schema, keyword, inst, err = least
            at = err.instance_path
            if keyword not in _BRANCHING:
                found = _lazily(validator, schema, keyword, inst, at)
                if found is None:
                    found = _written(validator, [(schema, keyword, inst, at)])
                return found
    except Exception:  # noqa: BLE001 (a location or type read otherwise: jsonschema words it)
        return None


def _least_relevant(keyed: list[tuple], checker: Any) -> tuple | None:
    """The context error of least ``relevance`` among ``keyed`` ((the key's first three
    elements, subschema, keyword, instance, error), in branch order), or None when the two
    least tie (``best_match`` then stays at the branching error).

    The key's last element (whether the instance misses its subschema's ``type``) is read only
    for the errors that tie on the first three: every other error is larger whatever it is
    (a tuple compares its first differing element). This is ``sorted(key)[:2]`` compared, as
    ``best_match``'s ``heapq.nsmallest(2, ...)`` is, without a type check per branch error (a
    third of the descent's cost on an ``anyOf`` over eight tools, issue 36)."""
    least = min(k[0] for k in keyed)
    group = [k for k in keyed if k[0] == least]
    if len(group) > 1:
        misses = [not _matches_type(checker, k[1], k[3]) for k in group]
        fewest = min(misses)
        group = [k for k, miss in zip(group, misses, strict=True) if miss == fewest]
        if len(group) > 1:
            return None
    return group[0]


def _not_valid_under_any(instance: Any) -> Any:
    """The message ``jsonschema``'s ``anyOf``/``oneOf`` give a value no branch accepts
    (4.26.0), written when read (a ``repr`` of the value, which is mostly only counted)."""
    return lambda: f"{instance!r} is not valid under any of the given schemas"


def _lazily(validator: Any, schema: dict, keyword: str, inst: Any, at: list) -> Any:
    """(keyword, path, ``Wording``) for an error whose message can wait, else None."""
    if (
        keyword in LAZY_WORDED
        or (keyword == "type" and _type_missed(validator, schema, inst))
        or (keyword == "additionalProperties" and _no_extras_allowed(schema))
    ):
        return keyword, list(at), Wording(validator, schema, keyword, inst)
    return None


def _written(validator: Any, chosen: list[tuple[dict, str, Any, list]]) -> Any:
    """(keyword, path, message) written now for the chosen errors, or None where they do
    not agree (tied at the top in an order only jsonschema knows)."""
    answer = None
    for schema, keyword, inst, at in chosen:
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


class Wording:
    """The message of a ``LAZY_WORDED`` error, written by ``jsonschema``'s keyword function
    when called (``_worded``). It runs outside the audit's watchdog, so it runs nothing but that
    keyword (no regex can be reached from these keywords). Should the function find nothing
    (never seen: the keywords are chosen so), the message says so rather than walking the whole
    output, which could reach a pattern unguarded."""

    __slots__ = ("validator", "schema", "keyword", "instance")

    def __init__(self, validator: Any, schema: dict, keyword: str, instance: Any) -> None:
        self.validator = validator
        self.schema = schema
        self.keyword = keyword
        self.instance = instance

    def __call__(self) -> str:
        err = _worded(self.validator, self.schema, self.keyword, self.instance)
        if err is not None:
            return err.message
        return f"{self.keyword} failed in jsonschema-rs; jsonschema's {self.keyword} found no error"
