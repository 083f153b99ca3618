"""Gemini ``generationConfig.responseJsonSchema``: the documented keyword set, as one table.

Read 2026-12-01 from the API reference of ``GenerationConfig.response_json_schema``
(``SOURCE``; the same text is the field's comment in Google's published
``generative_service.proto``, ``PROTO``): "While the full JSON Schema may be sent, not all
features are supported. Specifically, only the following properties are supported: ...". So a
keyword outside that list is sent and dropped (``ignored``: a residual the application must
re-check), while the two sentences phrased as restrictions ("may only be used within
non-required properties", "no other properties ... may be set") are judged ``refused``
(conservative: the page does not say what the API does when they are broken).
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


def _rule(rid: str, summary: str, effect: str, note: str = "") -> Rule:
    return Rule(f"gemini.{rid}", summary, effect, SOURCE, READ, note)  # type: ignore[arg-type]


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
            "refused",
            "The page does not say whether the API answers 400 or drops the siblings; judged "
            "refused (conservative).",
        ),
        _rule(
            "cyclic-required",
            "cyclic references may only be used within non-required properties",
            "refused",
            "'Nullable properties are not sufficient.' A cycle with no non-required property "
            "on it is judged refused (conservative); cycles are unrolled 'to a limited "
            "degree', which the page does not quantify.",
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
            extra = [k for k in s if not k.startswith("$")]
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
    version=READ,
    api="generateContent generationConfig.responseJsonSchema (responseMimeType application/json)",
    rules=RULES,
    judge=judge,
)
