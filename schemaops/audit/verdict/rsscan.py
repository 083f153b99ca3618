"""What the audit's jsonschema-rs check reads from a schema before compiling it: the scan facts.

``rscheck.compile_rs`` may hand a schema to jsonschema-rs only where its answers cannot be
more lenient than Python ``jsonschema``'s (``rscheck.py``'s module doc says why each rule
exists). These functions find what decides that, from the schema alone: whether every pattern
reads the same in both engines (``scan``, ``ascii_fit``; each pattern judged by
``rspattern.py``), a non-integer ``multipleOf``, a ``"format": "regex"``, the formats named,
and whether an integer and its nearest double could be judged apart (``numbers_matter``).
``scan_facts`` gathers them: a pure function of the schema and of this module,
``rspattern.py`` and Python's ``re`` parser, so the audit's facts cache keeps it
(``cachekeys.AUDIT_SOURCES`` hashes this file).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from schemaops.audit.verdict.rspattern import ascii_pattern, exact_pattern, portable_pattern
from schemaops.registry.drafts import dialect_label, own_draft_uris

# What ``scan`` looks for in orjson's compact writing of a schema. orjson writes a member as
# ``"key":value`` with no space, and escapes every quote inside a string, so a ``"pattern":"``
# there is a member named ``pattern`` with a string value (or, at worst, the tail of a key
# that holds an escaped quote: one more pattern judged, never one fewer).
_PATTERN_VALUE = re.compile(rb'"pattern":"((?:[^"\\]|\\.)*)"')
_MULTIPLE_OF = re.compile(rb'"multipleOf":(-?[0-9][0-9.eE+-]*)')
_SCHEMA_VALUE = b'"$schema":"'
#: keywords under which a failed match can make an instance valid (``not``; an ``if`` that
#: fails picks ``else``; a ``oneOf`` branch that fails can leave exactly one; fewer items
#: matching ``contains`` pass ``maxContains``): there a pattern that is only stricter in Rust
#: is more lenient, so with any of them in the schema every pattern must read exactly the same
#: (``rspattern.exact_pattern``). A ``$ref`` can lead anywhere, so the test is the schema's.
NEGATING_KEYWORDS = ("not", "if", "oneOf", "maxContains")
_NEGATING_MEMBERS = tuple(b'"%s":' % k.encode() for k in NEGATING_KEYWORDS)


def nested_drafts_alike(schema: Any) -> bool:
    """Whether every ``$schema`` string below the root of ``schema`` names the root's own draft
    as both libraries read it: then neither switches drafts anywhere, and a nested ``$schema``
    changes nothing. Both do switch at any subschema that names another one: ``jsonschema``'s
    ``evolve`` picks ``validator_for(subschema, default=its class)`` for every subschema it
    descends into (4.26.0), and jsonschema-rs detects a draft per subschema
    (``Draft::detect``, ``crates/jsonschema-referencing/src/draft.rs``), where the two differ
    (``KNOWN_DIFFERENCES`` in ``tests/test_audit_rs_agreement.py``). The strings allowed are
    ``drafts.own_draft_uris``: the metaschema id with or without its empty ``#``, which
    jsonschema-rs reads as that draft too (``Draft::from_schema_uri`` trims the ``#``). On
    JSONSchemaBench 131 of the 182 schemas with a nested ``$schema`` repeat the root's own
    draft (draft-04 mostly): they were left to the closure tree and ``jsonschema`` whole."""
    if type(schema) is not dict:
        return True
    same = own_draft_uris(dialect_label(schema))
    stack: list[Any] = list(schema.values())
    while stack:
        node = stack.pop()
        if type(node) is dict:
            nested = node.get("$schema")
            if type(nested) is str and nested not in same:
                return False
            stack.extend(node.values())
        elif type(node) is list:
            stack.extend(node)
    return True


def patterns_fit(patterns: list[str], keys: list[str], negating: bool) -> bool:
    """Whether jsonschema-rs may judge these ``pattern`` values and ``patternProperties``
    keys: keys always need the exact reading (a key Rust misses escapes its subschema), the
    values too where the schema has a ``NEGATING_KEYWORDS`` keyword, else stricter is
    enough."""
    fits = exact_pattern if negating else portable_pattern
    return all(exact_pattern(k) for k in keys) and all(fits(p) for p in patterns)


def scan(schema: Any) -> tuple[bool, bool, bool]:
    """(every pattern fit for jsonschema-rs and no ``$schema`` below the root naming another
    draft (``nested_drafts_alike``), a non-integer ``multipleOf`` somewhere, a ``"format":
    "regex"``), from the schema's JSON text: written
    by orjson in C and searched with bytes scans, where a walk of the schema costs a Python
    step per node (a tenth of a schema's first use on JSONSchemaBench). ``walk_scan`` answers
    the same by walking; a schema with ``patternProperties`` (whose keys are patterns) is
    walked, as is one orjson cannot write. The text only finds where the patterns are; each is
    judged from Python's parse of it (``rspattern.py``). The text may find more than the walk
    (a ``pattern`` member inside an ``enum`` value, a property named ``not``): then the schema
    is judged by more patterns, or more strictly, or watched, which costs speed and never a
    verdict (``tests/test_audit_rs_agreement.py`` compares both)."""
    try:
        text = orjson.dumps(schema)
    except TypeError:  # not JSON-shaped (a non-string key, 256 levels deep): walk it
        return walk_scan(schema)
    if b'"patternProperties":' in text:
        return walk_scan(schema)
    own = 1 if isinstance(schema, dict) and isinstance(schema.get("$schema"), str) else 0
    portable = text.count(_SCHEMA_VALUE) <= own or nested_drafts_alike(schema)
    if portable and b'"pattern":"' in text:
        negating = any(m in text for m in _NEGATING_MEMBERS)
        patterns = [orjson.loads(b'"' + m.group(1) + b'"') for m in _PATTERN_VALUE.finditer(text)]
        portable = patterns_fit(patterns, [], negating)
    float_multiple = False
    if b'"multipleOf":' in text:
        float_multiple = any(
            any(c in m.group(1) for c in b".eE") for m in _MULTIPLE_OF.finditer(text)
        )
    return portable, float_multiple, b'"format":"regex"' in text


def walk_scan(schema: Any) -> tuple[bool, bool, bool]:
    """``scan`` by walking every node (what ``scan`` falls back to, and its reference)."""
    portable, float_multiple, regex_format, negating = True, False, False, False
    alike: bool | None = None  # ``nested_drafts_alike(schema)``, asked at the first nested one
    patterns: list[str] = []
    keys: list[str] = []
    stack: list[tuple[Any, bool]] = [(schema, True)]
    while stack:
        node, root = stack.pop()
        if isinstance(node, dict):
            if not root and isinstance(node.get("$schema"), str) and alike is None:
                alike = nested_drafts_alike(schema)  # once: it walks the whole schema
                portable = portable and alike
            pat = node.get("pattern")
            if isinstance(pat, str):
                patterns.append(pat)
            props = node.get("patternProperties")
            if isinstance(props, dict):
                keys.extend(props)
            if not negating and any(k in node for k in NEGATING_KEYWORDS):
                negating = True
            if isinstance(node.get("multipleOf"), float):
                float_multiple = True
            if node.get("format") == "regex":
                regex_format = True
            stack.extend((v, False) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, False) for v in node)
    portable = portable and patterns_fit(patterns, keys, negating)
    return portable, float_multiple, regex_format


def ascii_fit(schema: Any) -> bool:
    """Whether every pattern of ``schema`` (``pattern`` values and ``patternProperties`` keys,
    wherever they are) reads the same in jsonschema-rs and Python's ``re`` on printable ASCII
    strings (``rspattern.ascii_pattern``), with no ``$schema`` below the root naming another
    draft (``nested_drafts_alike``): the schemas ``scan`` refuses that jsonschema-rs may still
    judge for an output ``ascii_text`` admits.
    There every string the patterns can meet is such a string, so each pattern matches the
    same strings in both and the polarity of a match (``not``, ``if``, ``oneOf``, a key that
    escapes its subschema) cannot make jsonschema-rs more lenient."""
    patterns: list[str] = []
    checked = False  # ``nested_drafts_alike(schema)`` held (asked at the first nested one)
    stack: list[tuple[Any, bool]] = [(schema, True)]
    while stack:
        node, root = stack.pop()
        if isinstance(node, dict):
            if not root and isinstance(node.get("$schema"), str) and not checked:
                if not nested_drafts_alike(schema):  # once: it walks the whole schema
                    return False
                checked = True
            pat = node.get("pattern")
            if isinstance(pat, str):
                patterns.append(pat)
            props = node.get("patternProperties")
            if isinstance(props, dict):
                patterns.extend(props)
            stack.extend((v, False) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, False) for v in node)
    return all(ascii_pattern(p) for p in patterns)


_FORMAT_VALUE = re.compile(rb'"format":"((?:[^"\\]|\\.)*)"')


def format_names(schema: Any) -> frozenset[str]:
    """Every string value of a member named ``format`` anywhere in ``schema`` (a superset of
    the formats it asserts: an ``enum`` value's member counts too). jsonschema-rs is given
    custom checkers for these only: a custom format the schema never names changes nothing,
    and building the full set needs ``jsonschema``'s format checker, whose import is most of a
    one-line audit's start (issue 36)."""
    try:
        text = orjson.dumps(schema)
    except TypeError:  # not JSON-shaped: walk it
        found: set[str] = set()
        stack = [schema]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                if isinstance(node.get("format"), str):
                    found.add(node["format"])
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
        return frozenset(found)
    if b'"format":"' not in text:
        return frozenset()
    return frozenset(orjson.loads(b'"' + m.group(1) + b'"') for m in _FORMAT_VALUE.finditer(text))


#: ``scan_facts``' flags
SCAN_FLAGS = ("portable", "float_multiple", "regex_format", "ascii_only", "numbers_matter")

#: members of a schema's orjson text whose keyword can judge an integer and the double orjson
#: reads for it differently (an integer beyond 64 bits: ``exactjson.may_have_long_int``):
#: bounds, multiples, ``integer`` (as a ``type``, or anywhere), equality of array items
_NUMBER_MEMBERS = (
    b'"minimum":',
    b'"maximum":',
    b'"exclusiveMinimum":',
    b'"exclusiveMaximum":',
    b'"multipleOf":',
    b'"divisibleBy":',
    b'"uniqueItems":true',
    b'"integer"',
)


def numbers_matter(schema: Any) -> bool:
    """Whether an integer and its nearest double could get different verdicts from this
    schema: a number keyword (``_NUMBER_MEMBERS``, found in orjson's text: a superset, a
    property of that name only costs speed), or an ``enum``/``const`` holding a number (the
    schema walked for those). Where nothing does, a value is judged alike whether orjson read
    a long integer in it as a float or not: every other keyword reads a number only as "a
    number" (``type`` ``number``, or not a string, object, ...). The audit's lean loop then
    skips its walk of the value for floats (``lines.py``)."""
    try:
        text = orjson.dumps(schema)
    except TypeError:
        return True
    if any(m in text for m in _NUMBER_MEMBERS):
        return True
    if b'"enum":' not in text and b'"const":' not in text:
        return False
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            for key in ("enum", "const"):
                if key in node and _holds_number(node[key]):
                    return True
            stack.extend(node.values())
        elif type(node) is list:
            stack.extend(node)
    return False


def _holds_number(value: Any) -> bool:
    """Whether an ``enum``/``const`` value holds a JSON number anywhere (a bool is not one):
    equality with it could tell a long integer from the double orjson reads for it."""
    stack = [value]
    while stack:
        node = stack.pop()
        t = type(node)
        if t is int or t is float:
            return True
        if t is dict:
            stack.extend(node.values())
        elif t is list:
            stack.extend(node)
    return False


def scan_facts(schema: Any) -> dict[str, Any]:
    """What ``compile_rs`` reads from the schema before compiling it: ``scan``'s three
    answers, ``ascii_fit`` where the patterns are not portable, and the formats it names.
    A pure function of the schema (and of this module, ``rspattern.py`` and Python's ``re``
    parser), so the audit's facts cache keeps it beside the checker hints (issue 36: on
    JSONSchemaBench the scan was a fifth of a warm schema's set-up, ``ascii_fit`` on a
    schema with patterns up to milliseconds)."""
    portable, float_multiple, regex_format = scan(schema)
    return {
        "portable": portable,
        "float_multiple": float_multiple,
        "regex_format": regex_format,
        "ascii_only": not portable and ascii_fit(schema),
        "numbers_matter": numbers_matter(schema),
        "formats": sorted(format_names(schema)),
    }


def scan_facts_ok(facts: Any) -> bool:
    """``scan_facts``' shape (anything else, from a damaged cache entry, is scanned afresh)."""
    return (
        type(facts) is dict
        and facts.keys() == {*SCAN_FLAGS, "formats"}
        and all(type(facts[k]) is bool for k in SCAN_FLAGS)
        and type(facts["formats"]) is list
        and all(type(f) is str for f in facts["formats"])
    )
