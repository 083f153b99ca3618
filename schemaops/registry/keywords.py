"""Unknown keywords in schema positions: a misspelled keyword is a constraint nobody applies.

Why: every JSON Schema validator and every grammar compiler ignores a keyword it does not
know, and the metaschemas of every draft allow any extra key. So ``proprties``, ``requried``
and ``maxLenght`` beside ``"additionalProperties": false`` pass every metaschema check and
compile into a grammar that only ever allows ``{}``. This module walks a schema's *schema
positions* (the schema itself and the subschemas under its draft's applicator keywords; never
property names nor the values of ``enum``, ``const``, ``examples`` or ``default``) and sorts
each key it does not know for the schema's draft into:

- ``unknown_keyword_typo`` (a problem): a likely misspelling of a keyword of that draft that
  constrains or structures the schema (case only, or a small Damerau-Levenshtein distance for
  its length), reported with "did you mean";
- ``keyword_other_draft`` (a warning): a keyword of another draft (``dependentRequired`` under
  draft-07), which validators of this draft ignore;
- ``unknown_keyword`` (a warning): anything else, e.g. an OpenAPI ``nullable``.

Fine and silent: ``x-`` extensions (the registry's own ``x-schemaops-*`` included), the
annotations (``title``, ``description``, ``examples``, ``$comment``, ``default``,
``deprecated``, ``readOnly``, ``writeOnly``) and the two definitions containers (``$defs``,
``definitions``) in any draft, since a ``$ref`` reaches them as a JSON pointer in every draft.

The keyword sets are those of each draft's specification and metaschema:
https://json-schema.org/draft-04/json-schema-validation (and -core), draft-06, draft-07,
https://json-schema.org/draft/2019-09/json-schema-core.html (and -validation),
https://json-schema.org/draft/2020-12/json-schema-core.html (and -validation); the 2019-09 and
2020-12 metaschemas (``schema.json``) also declare ``definitions`` and ``dependencies`` (and
2020-12's ``$recursiveRef``/``$recursiveAnchor``), which are kept as keywords of those drafts.
``tests/test_registry_keywords.py`` holds them against jsonschema's bundled metaschemas.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from schemaops.strings import pointer

#: the problem kind of a likely misspelling (the other findings are warnings)
TYPO_KIND = "unknown_keyword_typo"
#: annotations: no effect on what validates, so never a problem (nor, when unknown, a typo)
ANNOTATIONS = frozenset(
    {"title", "description", "examples", "$comment", "default", "deprecated"}
    | {"readOnly", "writeOnly"}
)
#: definitions containers: a ``$ref`` reaches either as a JSON pointer under every draft
CONTAINERS = frozenset({"$defs", "definitions"})

_D03 = frozenset(
    {"$schema", "id", "$ref", "type", "properties", "patternProperties"}
    | {"additionalProperties", "items", "additionalItems", "required", "dependencies"}
    | {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems"}
    | {"uniqueItems", "pattern", "minLength", "maxLength", "enum", "default", "title"}
    | {"description", "format", "divisibleBy", "disallow", "extends"}
)
_D04 = (_D03 - {"divisibleBy", "disallow", "extends"}) | {
    "multipleOf",
    "maxProperties",
    "minProperties",
    "definitions",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
}
_D06 = (_D04 - {"id"}) | {"$id", "const", "contains", "propertyNames", "examples"}
_D07 = (
    _D06
    | {"$comment", "if", "then", "else", "readOnly", "writeOnly"}
    | {
        "contentMediaType",
        "contentEncoding",
    }
)
_D2019 = (_D07 - {"dependencies"}) | {
    "$anchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "$vocabulary",
    "$defs",
    "unevaluatedItems",
    "unevaluatedProperties",
    "dependentSchemas",
    "dependentRequired",
    "maxContains",
    "minContains",
    "deprecated",
    "contentSchema",
    # declared by the 2019-09 metaschema for compatibility (schema.json)
    "dependencies",
}
# the 2020-12 metaschema still declares $recursiveRef/$recursiveAnchor (deprecated), as it
# does definitions and dependencies
_D2020 = (_D2019 - {"additionalItems"}) | {
    "$dynamicRef",
    "$dynamicAnchor",
    "prefixItems",
}

#: draft label (``drafts.draft_label``) -> every keyword of that draft
KEYWORDS: dict[str, frozenset[str]] = {
    "draft-03": _D03,
    "draft-04": _D04,
    "draft-06": _D06,
    "draft-07": _D07,
    "2019-09": _D2019,
    "2020-12": _D2020,
}
ALL_KEYWORDS = frozenset().union(*KEYWORDS.values())

# Where subschemas are, per keyword: one schema, a list of schemas, a map of schemas. A
# keyword a draft does not know is not walked under that draft (its value may be anything).
_SINGLE = frozenset(
    {"additionalItems", "additionalProperties", "not", "items", "contains", "propertyNames"}
    | {"if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
    | {"extends"}
)
_LISTS = frozenset({"allOf", "anyOf", "oneOf", "items", "prefixItems", "extends"})
_MAPS = frozenset(
    {"properties", "patternProperties", "dependentSchemas", "dependencies"} | CONTAINERS
)


#: invented keywords whose intended keyword is not the nearest spelling
LOOKALIKES = {"inclusiveMinimum": "minimum", "inclusiveMaximum": "maximum"}

_NUMBER = frozenset({"multipleOf", "maximum", "minimum", "divisibleBy"})
_COUNT = frozenset(
    {"maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties"}
    | {"maxContains", "minContains"}
)
_STRING = frozenset(
    {"pattern", "format", "$ref", "$id", "id", "$schema", "$anchor", "$dynamicRef"}
    | {"$dynamicAnchor", "$recursiveRef", "contentMediaType", "contentEncoding"}
)
_OBJECT = frozenset(
    {"properties", "patternProperties", "dependentSchemas", "dependencies"}
    | {"dependentRequired", "$vocabulary"}
    | CONTAINERS
)


def fits(keyword: str, value: Any) -> bool:
    """Whether ``value`` has a type ``keyword`` takes: ``"multiple": true`` is no misspelt
    ``multipleOf`` (a number), it is a key of someone's own; ``"requried": [...]`` is one."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if keyword in _NUMBER:
        return number
    if keyword in ("exclusiveMaximum", "exclusiveMinimum"):  # a boolean in draft-04
        return number or isinstance(value, bool)
    if keyword in _COUNT:
        return number and value >= 0
    if keyword in _STRING:
        return isinstance(value, str)
    if keyword in _OBJECT:
        return isinstance(value, dict)
    if keyword in ("enum", "allOf", "anyOf", "oneOf", "prefixItems"):
        return isinstance(value, list)
    if keyword in ("uniqueItems", "$recursiveAnchor"):
        return isinstance(value, bool)
    if keyword in ("type", "disallow"):
        return isinstance(value, (str, list))
    if keyword == "required":  # an array; a boolean in draft-03
        return isinstance(value, (list, bool))
    if keyword in ("items", "extends"):
        return isinstance(value, (dict, bool, list))
    if keyword == "const":
        return True
    return isinstance(value, (dict, bool))  # every other keyword left takes a schema


def _max_distance(length: int) -> int:
    """How many edits a misspelling of a keyword this long may have and still be read as one.

    Short keywords have short neighbours (``not``, ``if``, ``$id``): only a difference of case
    counts for them; ``type`` and ``enum`` take one edit, ``properties`` two."""
    if length <= 3:
        return 0
    return 1 if length <= 7 else 2


def distance(a: str, b: str, limit: int) -> int:
    """Damerau-Levenshtein distance (optimal string alignment) of ``a`` and ``b``, or
    ``limit + 1`` as soon as it must be larger than ``limit`` (keys are short: a plain table)."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


def suggestion(key: str, value: Any, draft: str) -> str | None:
    """The keyword of ``draft`` that ``key`` (holding ``value``) most likely misspells, or None.

    Candidates are the keywords that constrain or structure a schema and take a value of
    ``value``'s type: a misspelled annotation changes nothing that validates (it is an
    ``unknown_keyword`` warning instead). A key starting with ``_`` (a keyword switched off on
    purpose, as JSONSchemaBench's ``_format``) or ``@`` (JSON-LD's ``@type``) is no typo."""
    if key[:1] in ("_", "@"):
        return None
    if key in LOOKALIKES and LOOKALIKES[key] in KEYWORDS[draft]:
        return LOOKALIKES[key]
    best: tuple[int, str] | None = None
    folded = key.casefold()
    for kw in sorted(KEYWORDS[draft] - ANNOTATIONS):
        if not fits(kw, value):
            continue
        if kw.casefold() == folded:
            return kw
        limit = _max_distance(len(kw))
        if limit == 0:
            continue
        d = distance(folded, kw.casefold(), limit)
        if d <= limit and (best is None or d < best[0]):
            best = (d, kw)
    return best[1] if best else None


def _drafts_of(key: str) -> str:
    return ", ".join(label for label, kws in KEYWORDS.items() if key in kws)


def keyword_findings(schema: Any, draft: str) -> list[tuple[str, str, str]]:
    """Each unknown keyword in a schema position as ``(json pointer, kind, reason)``.

    ``kind`` is ``unknown_keyword_typo`` (a problem) or ``keyword_other_draft`` /
    ``unknown_keyword`` (warnings); see the module docstring. Iterative: a deeply nested
    schema cannot reach Python's recursion limit. A misspelled keyword's value is walked as
    the keyword it most likely means, so ``maxLenght`` inside ``proprties`` is found too.

    Each subschema's place is kept as a link to its parent's (``_place``), written out as a
    pointer only for a finding: a registry's first use walks every subschema of every file
    here, and a path list per subschema was half of this walk's cost (issue 36, cold).
    """
    known = KEYWORDS[draft]
    out: list[tuple[str, str, str]] = []
    stack: list[tuple[Any, Any]] = [(schema, None)]
    child_kind = _CHILD_KIND
    while stack:
        node, where = stack.pop()
        if not isinstance(node, dict):
            continue
        children: list[tuple[Any, Any]] = []
        for key, value in node.items():
            if not isinstance(key, str):
                continue
            as_kw = key
            if key not in known and key not in CONTAINERS and key not in ANNOTATIONS:
                if key[:2].casefold() == "x-":
                    continue
                found = _unknown(key, value, draft)
                out.append((pointer(_place(where, (key,))), *found[:2]))
                if found[2] is None:
                    continue
                as_kw = found[2]
            kind = child_kind.get(as_kw)
            if kind is None:
                continue
            # a keyword's subschemas in this order: the one, the list's, the map's
            if kind & _ONE and isinstance(value, dict):
                children.append((value, (where, (key,))))
            if kind & _LIST and isinstance(value, list):
                children.extend((sub, (where, (key, i))) for i, sub in enumerate(value))
            if kind & _MAP and isinstance(value, dict):
                children.extend((sub, (where, (key, k))) for k, sub in value.items())
        stack.extend(reversed(children))
    return out


def _place(where: Any, last: tuple) -> list:
    """The path of a subschema's key from its chain of parent links (``keyword_findings``)."""
    parts: list = list(last)
    while where is not None:
        where, segs = where
        parts[:0] = segs
    return parts


_ONE, _LIST, _MAP = 1, 2, 4
#: keyword -> which of the three shapes of subschema it may hold (one dict lookup a key)
_CHILD_KIND: dict[str, int] = {}
for _kw in _SINGLE | _LISTS | _MAPS:
    _CHILD_KIND[_kw] = (
        (_ONE if _kw in _SINGLE else 0)
        | (_LIST if _kw in _LISTS else 0)
        | (_MAP if _kw in _MAPS else 0)
    )


#: a value standing for each shape ``fits`` tells apart (its answer for every keyword is the
#: same as for any value of that shape): JSON type, and for a number whether it is negative
SHAPES: dict[str, Any] = {
    "bool": True,
    "count": 0,
    "negative": -1,
    "str": "",
    "list": [],
    "dict": {},
    "null": None,
}


def shape_of(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "count" if value >= 0 else "negative"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    return "dict" if isinstance(value, dict) else "null"


def _unknown(key: str, value: Any, draft: str) -> tuple[str, str, str | None]:
    """(kind, reason, the keyword to walk the value as) for a key ``draft`` does not know.

    Found once per (key, shape of its value, draft) in a process: a platform registry names
    the same unknown keys in thousands of files (JSONSchemaBench: ``javaType``,
    ``markdownDescription``...), and each finding compares the key with every keyword by edit
    distance (a third of a cold audit's first use of a schema)."""
    return _unknown_shaped(key, shape_of(value), draft)


@lru_cache(maxsize=8192)
def _unknown_shaped(key: str, shape: str, draft: str) -> tuple[str, str, str | None]:
    value = SHAPES[shape]
    if key in ALL_KEYWORDS:
        reason = (
            f"`{key}` is a keyword of {_drafts_of(key)}, not of draft {draft}: validators of"
            f" draft {draft} ignore it (set $schema to the draft that has it, or use this"
            " draft's keyword)"
        )
        return "keyword_other_draft", reason, None
    near = suggestion(key, value, draft)
    if near is not None:
        reason = (
            f"unknown keyword `{key}`: did you mean `{near}`? (draft {draft} ignores unknown"
            " keywords: no validator checks it and no grammar enforces it)"
        )
        return TYPO_KIND, reason, near
    annotation = next(
        (a for a in sorted(ANNOTATIONS) if a.casefold() == key.casefold()), None
    ) or next((a for a in sorted(ANNOTATIONS) if distance(key, a, 1) <= 1), None)
    hint = f" (did you mean the annotation `{annotation}`?)" if annotation else ""
    reason = (
        f"unknown keyword `{key}` (not a draft {draft} keyword): ignored by validators and"
        f" grammar compilers{hint}; name an extension `x-{key}` to say it is one"
    )
    return "unknown_keyword", reason, None
