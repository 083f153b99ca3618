"""Gemini ``generationConfig.responseJsonSchema``: the documented keyword set, as one table.

Read 2026-12-01 from the API reference of ``GenerationConfig.response_json_schema``
(``SOURCE``; the same text is the field's comment in Google's published
``generative_service.proto``, ``PROTO``): "While the full JSON Schema may be sent, not all
features are supported. Specifically, only the following properties are supported: ...". So a
keyword outside that list is sent and dropped (``ignored``: a residual the application must
re-check), while the two sentences phrased as restrictions ("may only be used within
non-required properties", "no other properties ... may be set") are ``restricted`` (verdict
``unproven``): the page says what a schema may do, not what the API does when it does not
(400, or served with the siblings dropped or the cycle unrolled), and no source read shows
the 400. Re-read 2026-12-03; until 2026-12-01 they were judged ``refused``,
which made a false 400 of every such schema.
"""

from __future__ import annotations

from typing import Any

from schemaops.providers.base import (
    Finding,
    Rule,
    Table,
    constrains,
    optional_step,
    ref_cycles,
    walk,
)
from schemaops.strings import pointer

SOURCE = "https://ai.google.dev/api/generate-content#FIELDS.response_json_schema"
PROTO = (
    "https://github.com/googleapis/googleapis/blob/master/google/ai/generativelanguage/"
    "v1beta/generative_service.proto"
)
READ = "2026-12-01"
REREAD = "2026-12-03"
#: The API's 400 text on the function-declaration path: "If a schema node has $ref set, then
#: only description and default can be set alongside it" (quoted in these reports).
REF_SIBLING_REPORTS = (
    "https://github.com/anomalyco/opencode/issues/12295",
    "https://github.com/su-kaka/gcli2api/pull/374",
)
#: Siblings the API's own error text allows beside a $ref (``REF_SIBLING_REPORTS``); the page
#: allows only keywords starting with $.
REF_SIBLINGS_ALLOWED = frozenset({"description", "default"})

SUPPORTED = frozenset(
    {
        "$id",
        "$defs",
        "$ref",
        "$anchor",
        "type",
        "format",
        "title",
        "description",
        "enum",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "anyOf",
        "oneOf",
        "properties",
        "additionalProperties",
        "required",
        "propertyOrdering",
    }
)


def _rule(rid: str, summary: str, effect: str, note: str = "", read: str = READ) -> Rule:
    return Rule(f"gemini.{rid}", summary, effect, SOURCE, read, note)  # type: ignore[arg-type]


RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        _rule(
            "unsupported-keyword",
            "only the listed keywords are supported; the full JSON Schema may be sent",
            "ignored",
            "A keyword outside the list is sent and not enforced. Annotations and x- "
            f"extensions constrain nothing and are not listed. Same text: {PROTO}",
        ),
        _rule(
            "enum-types",
            "enum is supported for strings and numbers",
            "ignored",
            "An enum holding other values (booleans, null, objects) is taken as not enforced.",
        ),
        _rule(
            "oneof-as-anyof",
            "oneOf is interpreted the same as anyOf",
            "ignored",
            "The exclusivity of oneOf is dropped: an output matching two branches is served.",
        ),
        _rule(
            "ref-siblings",
            "a subschema with $ref may set no other property except those starting with $",
            "restricted",
            "A documented restriction, not a documented 400: the page does not say whether "
            "the API answers 400 or drops the siblings. A 400 was reported on the "
            "function-declaration path, whose error text allows description and default "
            f"beside a $ref ({', '.join(REF_SIBLING_REPORTS)}); none is reported for "
            "responseJsonSchema. The table follows the page for what is restricted, the "
            "observed error text for what is allowed (description, default), and says "
            "unproven rather than refused.",
            REREAD,
        ),
        _rule(
            "cyclic-required",
            "cyclic references may only be used within non-required properties",
            "restricted",
            "'Nullable properties are not sufficient.' A documented restriction, not a "
            "documented 400: cycles are unrolled 'to a limited degree', which the page does "
            "not quantify, and no source read shows a 400 for it. A cycle with no "
            "non-required property on it is unproven, not refused.",
            REREAD,
        ),
    )
}


def _r(rid: str) -> Rule:
    return RULES[f"gemini.{rid}"]


def judge(schema: Any) -> list[Finding]:
    """Every documented Gemini responseJsonSchema rule the schema breaks."""
    out: list[Finding] = []
    nodes = walk(schema)
    for node in nodes:
        s = node.schema
        for kw in s:
            if kw not in SUPPORTED and constrains(kw):
                out.append(Finding(_r("unsupported-keyword"), node.at(kw), f"'{kw}'"))
        if "oneOf" in s:
            out.append(Finding(_r("oneof-as-anyof"), node.at("oneOf"), "'oneOf'"))
        enum = s.get("enum")
        if isinstance(enum, list):
            bad = [
                i
                for i, v in enumerate(enum)
                if isinstance(v, bool) or not isinstance(v, (str, int, float))
            ]
            if bad:
                out.append(
                    Finding(_r("enum-types"), node.at("enum", bad[0]), "not a string or number")
                )
        if "$ref" in s:
            extra = [k for k in s if not k.startswith("$") and k not in REF_SIBLINGS_ALLOWED]
            if extra:
                out.append(Finding(_r("ref-siblings"), node.at(extra[0]), f"next to $ref: {extra}"))
    for cyc in ref_cycles(schema, nodes):
        if not any(optional_step(schema, parts) for parts in cyc.members):
            out.append(
                Finding(
                    _r("cyclic-required"),
                    cyc.closing,
                    "the cycle passes through required properties only: "
                    + ", ".join(pointer(p) for p in cyc.members),
                )
            )
    return out


TABLE = Table(
    target="gemini",
    version=REREAD,
    api="generateContent generationConfig.responseJsonSchema (responseMimeType application/json)",
    rules=RULES,
    judge=judge,
)
