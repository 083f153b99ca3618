"""Anthropic structured outputs (``output_config.format`` and ``strict: true`` tools), as one
table.

Read 2026-12-01: the "JSON Schema limitations" and schema complexity limits of the structured
outputs page (``SOURCE``). The search tool's stored copy of that page holds only its
navigation; its text was read through copies that quote it (Anthropic's own claude-api skill
summary and third-party quotations of the limits table), so each rule's wording is that of
the page as quoted. The page lists what is "not supported"; an over-complex schema gets HTTP
400 ("Schema is too complex for compilation"), and the SDKs strip the unsupported constraints
before sending, which they would not need to if the API ignored them: the rules here are
``refused``. Where that is an inference the note says so (conservative). One rule is
``restricted`` (verdict ``unproven``): a counted repeat whose bound may or may not be the
"large range" the page does not support, since the page gives no number. Re-read 2026-12-03
for the pattern rules (large quantifiers; Python's named backreference ``(?P=name)``).
"""

from __future__ import annotations

from typing import Any

from schemaops.providers.base import (
    Finding,
    Rule,
    Table,
    open_object,
    ref_cycles,
    walk,
)
from schemaops.providers.patterns import scan

SOURCE = "https://platform.claude.com/docs/en/build-with-claude/structured-outputs"
LIMITS = SOURCE + "#json-schema-limitations"
#: The Python SDK's own schema transform: what it keeps is what it expects the API to take.
SDK_SOURCE = (
    "https://github.com/anthropics/anthropic-sdk-python/blob/main/src/anthropic/lib/_parse/"
    "_transform.py"
)
READ = "2026-12-01"
REREAD = "2026-12-03"

MAX_OPTIONAL = 24
MAX_UNIONS = 16

SUPPORTED = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "allOf",
        "$ref",
        "$defs",
        "definitions",
        "default",
        "description",
        "title",
        "format",
        "pattern",
        "minItems",
    }
)
NUMERIC = ("minimum", "maximum", "multipleOf", "exclusiveMinimum", "exclusiveMaximum")
STRING_LENGTH = ("minLength", "maxLength")
ARRAY = ("maxItems", "uniqueItems", "contains", "minContains", "maxContains")
FORMATS = frozenset(
    {
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "uri",
        "ipv4",
        "ipv6",
        "uuid",
    }
)
#: A counted repeat ``{n,m}`` whose largest bound is above this is "large" for the
#: restricted rule; above ``LARGE_REPEAT_REFUSED`` for the refused one (see the rules' notes:
#: the page gives no number, these are this table's reading).
LARGE_REPEAT = 100
LARGE_REPEAT_REFUSED = 1000


def _rule(
    rid: str,
    summary: str,
    note: str = "",
    source: str = LIMITS,
    effect: str = "refused",
    read: str = READ,
) -> Rule:
    return Rule(f"anthropic.{rid}", summary, effect, source, read, note)  # type: ignore[arg-type]


_INFERRED = (
    "The page says 'not supported'; that the API answers 400 rather than ignoring it is "
    "inferred from the SDKs stripping it before sending (conservative)."
)

RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        _rule("recursive", "recursive schemas are not supported"),
        _rule(
            "numeric-constraints",
            "numerical constraints (minimum, maximum, multipleOf, ...) are not supported",
            "exclusiveMinimum/exclusiveMaximum are read as part of the page's 'etc.'. " + _INFERRED,
        ),
        _rule(
            "string-length",
            "string constraints (minLength, maxLength) are not supported",
            _INFERRED,
        ),
        _rule(
            "array-constraints",
            "array constraints beyond minItems 0 or 1 are not supported",
            "maxItems, uniqueItems and contains are read as 'beyond minItems'. " + _INFERRED,
        ),
        _rule(
            "additional-properties",
            "additionalProperties must be false on every object",
            "An object without additionalProperties is judged refused (conservative): the "
            "page says it must be set to false for objects.",
        ),
        _rule("enum-complex", "enum values must be strings, numbers, booleans or null"),
        _rule("external-ref", "external $ref is not supported"),
        _rule("allof-ref", "allOf with $ref is not supported"),
        _rule(
            "format-value",
            "string formats: " + ", ".join(sorted(FORMATS)),
            "A format outside the list is judged refused (conservative).",
        ),
        _rule(
            "pattern-features",
            "patterns without backreferences, lookahead/lookbehind or word boundaries",
            "Read from a scan of the pattern (schemaops/providers/patterns.py): \\1-\\9, "
            "\\k<name> and Python's (?P=name) are backreferences; \\b inside a character "
            "class is a backspace, not a word boundary.",
            read=REREAD,
        ),
        _rule(
            "pattern-large-quantifier",
            f"patterns without large counted repeats: a {{n,m}} bound above "
            f"{LARGE_REPEAT_REFUSED} is refused",
            "The page lists 'complex {n,m} quantifiers with large ranges' as not supported "
            "and gives no number. A bound above 1000 is large on any reading: refused "
            "(inferred, as the table's other rules). Bounds from 101 to 1000 are "
            "anthropic.pattern-quantifier-range (unproven).",
            read=REREAD,
        ),
        _rule(
            "pattern-quantifier-range",
            f"a {{n,m}} bound from {LARGE_REPEAT + 1} to {LARGE_REPEAT_REFUSED}: may be a "
            "'large range' the page does not support",
            "Restricted, not known refused: the page does not say where 'large' starts, and "
            "no report shows such a bound refused or served. Verdict unproven; 100 and 1000 "
            "are this table's reading, not the page's.",
            effect="restricted",
            read=REREAD,
        ),
        _rule(
            "max-optional",
            f"at most {MAX_OPTIONAL} optional parameters across all strict schemas of a request",
            "Request-wide; checked per schema here, so a lower bound for a request that sends "
            "several schemas.",
            SOURCE,
        ),
        _rule(
            "max-unions",
            f"at most {MAX_UNIONS} parameters using anyOf or type arrays across all strict "
            "schemas of a request",
            "Request-wide; checked per schema here (a lower bound).",
            SOURCE,
        ),
        _rule(
            "undocumented-keyword",
            "a keyword the page does not list as supported",
            "Ambiguous: the page lists supported and unsupported features; a keyword it names "
            "in neither list (minProperties, oneOf, not, ...) is judged refused (conservative). "
            "'title' is taken as accepted: the SDK's transform keeps it, as it keeps "
            "description, $defs, a bare $ref, anyOf, allOf, minItems 0/1 and the listed formats, "
            "and rewrites oneOf as anyOf; it also moves pattern, const and default into the "
            "description although the page lists them as supported (the page wins): "
            f"{SDK_SOURCE}",
        ),
    )
}


def _r(rid: str) -> Rule:
    return RULES[f"anthropic.{rid}"]


def _pattern_findings(where: str, pat: str) -> list[Finding]:
    """The pattern rules that fire on ``pat`` (one finding per rule, naming the first
    construct and its offset)."""
    sc = scan(pat)
    out: list[Finding] = []
    features = [
        (kind, text, at)
        for kind, found in (
            ("backreference", sc.backreferences),
            ("lookaround", sc.lookaround),
            ("word boundary", sc.word_boundaries),
        )
        for text, at in found
    ]
    if features:
        kind, text, at = min(features, key=lambda f: f[2])
        msg = f"unsupported regex: {kind} {text!r} at offset {at}"
        out.append(Finding(_r("pattern-features"), where, msg))
    large = [c for c in sc.counted if c[2] > LARGE_REPEAT_REFUSED]
    ranged = [c for c in sc.counted if LARGE_REPEAT < c[2] <= LARGE_REPEAT_REFUSED]
    for rid, found in (("pattern-large-quantifier", large), ("pattern-quantifier-range", ranged)):
        if found:
            text, at, _ = found[0]
            msg = f"counted repeat {text} at offset {at}"
            out.append(Finding(_r(rid), where, msg))
    return out


def _node_counts(s: dict[str, Any]) -> tuple[int, int]:
    """(optional properties, 1 if a union parameter else 0) of one subschema."""
    optional = 0
    props = s.get("properties")
    if isinstance(props, dict):
        req = s.get("required")
        required = set(req) if isinstance(req, list) else set()
        optional = sum(1 for k in props if k not in required)
    return optional, int("anyOf" in s or isinstance(s.get("type"), list))


def request_counts(schema: Any) -> tuple[int, int]:
    """(optional parameters, union parameters) of one strict schema, counted as ``judge``
    counts them: the limits ``max-optional``/``max-unions`` are across all strict schemas of
    a request, so a tool set sums these over its tools (``providers/tools.py``)."""
    optional = unions = 0
    for node in walk(schema):
        o, u = _node_counts(node.schema)
        optional, unions = optional + o, unions + u
    return optional, unions


def judge(schema: Any) -> list[Finding]:
    """Every documented Anthropic structured-output rule the schema breaks."""
    out: list[Finding] = []
    nodes = walk(schema)
    optional = unions = 0
    for node in nodes:
        s = node.schema
        for kw in s:
            if kw in NUMERIC:
                out.append(Finding(_r("numeric-constraints"), node.at(kw), f"'{kw}'"))
            elif kw in STRING_LENGTH:
                out.append(Finding(_r("string-length"), node.at(kw), f"'{kw}'"))
            elif kw in ARRAY:
                out.append(Finding(_r("array-constraints"), node.at(kw), f"'{kw}'"))
            elif kw not in SUPPORTED:
                out.append(Finding(_r("undocumented-keyword"), node.at(kw), f"'{kw}'"))
        mi = s.get("minItems")
        if "minItems" in s and mi not in (0, 1):
            out.append(Finding(_r("array-constraints"), node.at("minItems"), f"minItems {mi}"))
        closed = open_object(_r("additional-properties"), node, s)
        if closed is not None:
            out.append(closed)
        enum = s.get("enum")
        if isinstance(enum, list):
            for i, v in enumerate(enum):
                if isinstance(v, (dict, list)):
                    out.append(Finding(_r("enum-complex"), node.at("enum", i), "complex value"))
        ref = s.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            out.append(Finding(_r("external-ref"), node.at("$ref"), f"$ref '{ref}'"))
        all_of = s.get("allOf")
        if isinstance(all_of, list):
            for i, sub in enumerate(all_of):
                if isinstance(sub, dict) and "$ref" in sub:
                    out.append(Finding(_r("allof-ref"), node.at("allOf", i, "$ref"), "$ref"))
        fmt = s.get("format")
        if isinstance(fmt, str) and fmt not in FORMATS:
            out.append(Finding(_r("format-value"), node.at("format"), f"format '{fmt}'"))
        pat = s.get("pattern")
        if isinstance(pat, str):
            out.extend(_pattern_findings(node.at("pattern"), pat))
        o, u = _node_counts(s)
        optional, unions = optional + o, unions + u
    if optional > MAX_OPTIONAL:
        out.append(Finding(_r("max-optional"), "", f"{optional} optional parameters"))
    if unions > MAX_UNIONS:
        out.append(Finding(_r("max-unions"), "", f"{unions} union parameters"))
    for cyc in ref_cycles(schema, nodes):
        out.append(Finding(_r("recursive"), cyc.closing, f"$ref cycle of {len(cyc.members)}"))
    return out


TABLE = Table(
    target="anthropic",
    version=REREAD,
    api="Messages structured outputs: output_config.format json_schema / strict tools",
    rules=RULES,
    judge=judge,
)
