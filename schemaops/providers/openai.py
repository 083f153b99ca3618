"""OpenAI Structured Outputs (``strict: true``): the documented schema subset, as one table.

Read 2026-12-01 from the "Supported schemas" section of the Structured Outputs guide
(``SOURCE``; the search tool's stored copy of the guide, the same text as
developers.openai.com/api/docs/guides/structured-outputs). The page says: "If you turn on
Structured Outputs by supplying ``strict: true`` and call the API with an unsupported JSON
Schema, you will receive an error", so every rule here is ``refused`` (HTTP 400).

Where the page is ambiguous the rule's note says so and the verdict is the conservative one
(refused): a keyword the page neither lists as supported nor as unsupported, a ``format`` value
not in its list, and how nesting levels are counted.
"""

from __future__ import annotations

from typing import Any

from schemaops.providers.base import (
    DEFS,
    Finding,
    Rule,
    Table,
    nesting,
    open_object,
    walk,
)

SOURCE = "https://platform.openai.com/docs/guides/structured-outputs#supported-schemas"
#: The OpenAI Python SDK's own strict-schema helper, which sends pydantic's ``title``s.
SDK_SOURCE = "https://github.com/openai/openai-python/blob/main/src/openai/lib/_pydantic.py"
READ = "2026-12-01"

MAX_PROPERTIES = 5000
MAX_NESTING = 10
MAX_STRING_CHARS = 120_000
MAX_ENUM_VALUES = 1000
LARGE_ENUM = 250
MAX_LARGE_ENUM_CHARS = 15_000

#: Keywords the page documents as supported (types, their listed properties, anyOf,
#: definitions and recursion via $ref; ``title`` via the SDK, see ``undocumented-keyword``).
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
        "$ref",
        "$defs",
        "definitions",
        "description",
        "title",
        "pattern",
        "format",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "minItems",
        "maxItems",
    }
)
#: "Some type-specific keywords are not yet supported: Composition: ..."
COMPOSITION = ("allOf", "not", "dependentRequired", "dependentSchemas", "if", "then", "else")
#: "format — Predefined formats for strings. Currently supported: ..."
FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)


def _rule(rid: str, summary: str, note: str = "", source: str = SOURCE) -> Rule:
    return Rule(f"openai.{rid}", summary, "refused", source, READ, note)


RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        _rule("root-object", "the root must be an object (type: object), not anyOf"),
        _rule("all-required", "every property must be listed in required"),
        _rule("additional-properties", "additionalProperties: false must be set on every object"),
        _rule(
            "max-properties",
            f"at most {MAX_PROPERTIES} object properties in total",
        ),
        _rule(
            "max-nesting",
            f"at most {MAX_NESTING} levels of nesting",
            "The page does not say how levels are counted; object and array schemas both "
            "count here, $refs followed (conservative).",
        ),
        _rule(
            "max-string-size",
            f"property names, definition names, enum and const values: at most "
            f"{MAX_STRING_CHARS:,} characters in total",
            "Non-string enum/const values count with their JSON text (conservative).",
        ),
        _rule("max-enum-values", f"at most {MAX_ENUM_VALUES} enum values across the schema"),
        _rule(
            "max-large-enum-size",
            f"a string enum of more than {LARGE_ENUM} values: at most "
            f"{MAX_LARGE_ENUM_CHARS:,} characters in total",
        ),
        _rule(
            "unsupported-composition",
            "allOf, not, dependentRequired, dependentSchemas, if, then, else are not supported",
        ),
        _rule(
            "undocumented-keyword",
            "a keyword outside the documented subset",
            "Ambiguous: the page lists the supported keywords and says an unsupported schema "
            "gets an error; it lists minLength/maxLength, patternProperties and minItems/"
            "maxItems as 'additionally' unsupported for fine-tuned models only, which suggests "
            "but does not say that base models accept some of them. Judged refused "
            "(conservative). 'title' is taken as accepted: the SDK's helper sends pydantic's "
            f"titles ({SDK_SOURCE}).",
        ),
        _rule(
            "ref-siblings",
            "a $ref may have no sibling keywords",
            "Not on the guide page: OpenAI's own SDK says 'we can't use $refs if there are also "
            "other properties defined' and inlines such refs before sending.",
            SDK_SOURCE,
        ),
        _rule(
            "format-value",
            "format must be one of " + ", ".join(sorted(FORMATS)),
            "A format value outside the list is judged refused (conservative).",
        ),
    )
}


def _r(rid: str) -> Rule:
    return RULES[f"openai.{rid}"]


def _chars(value: Any) -> int:
    import json

    return len(value) if isinstance(value, str) else len(json.dumps(value, default=str))


def judge(schema: Any) -> list[Finding]:
    """Every documented OpenAI strict-mode rule the schema breaks, with its pointer."""
    out: list[Finding] = []
    if not isinstance(schema, dict) or schema.get("type") != "object" or "anyOf" in schema:
        where = "/anyOf" if isinstance(schema, dict) and "anyOf" in schema else ""
        out.append(Finding(_r("root-object"), where, "the root is not a plain object schema"))
    nodes = walk(schema)
    props_total = enum_total = chars = 0
    for node in nodes:
        s = node.schema
        for kw in s:
            if kw in COMPOSITION:
                out.append(Finding(_r("unsupported-composition"), node.at(kw), f"'{kw}'"))
            elif kw not in SUPPORTED:
                out.append(Finding(_r("undocumented-keyword"), node.at(kw), f"'{kw}'"))
        fmt = s.get("format")
        if isinstance(fmt, str) and fmt not in FORMATS:
            out.append(Finding(_r("format-value"), node.at("format"), f"format '{fmt}'"))
        if "$ref" in s and len(s) > 1:
            extra = [k for k in s if k != "$ref"]
            out.append(Finding(_r("ref-siblings"), node.at(extra[0]), f"next to $ref: {extra}"))
        props = s.get("properties")
        if isinstance(props, dict):
            props_total += len(props)
            chars += sum(len(str(k)) for k in props)
            req = s.get("required")
            required = set(req) if isinstance(req, list) else set()
            for name in props:
                if name not in required:
                    out.append(
                        Finding(
                            _r("all-required"),
                            node.at("properties", name),
                            f"'{name}' is not in required",
                        )
                    )
        for kw in DEFS:
            if isinstance(s.get(kw), dict):
                chars += sum(len(str(k)) for k in s[kw])
        closed = open_object(_r("additional-properties"), node, s)
        if closed is not None:
            out.append(closed)
        enum = s.get("enum")
        if isinstance(enum, list):
            enum_total += len(enum)
            size = sum(_chars(v) for v in enum)
            chars += size
            strings = all(isinstance(v, str) for v in enum)
            if strings and len(enum) > LARGE_ENUM and size > MAX_LARGE_ENUM_CHARS:
                out.append(
                    Finding(
                        _r("max-large-enum-size"),
                        node.at("enum"),
                        f"{len(enum)} values, {size:,} characters",
                    )
                )
        if "const" in s:
            chars += _chars(s["const"])
    if props_total > MAX_PROPERTIES:
        out.append(Finding(_r("max-properties"), "", f"{props_total} object properties"))
    if enum_total > MAX_ENUM_VALUES:
        out.append(Finding(_r("max-enum-values"), "", f"{enum_total} enum values"))
    if chars > MAX_STRING_CHARS:
        out.append(Finding(_r("max-string-size"), "", f"{chars:,} characters"))
    depth, where = nesting(schema, arrays=True)
    if depth > MAX_NESTING:
        out.append(Finding(_r("max-nesting"), where, f"{depth} levels"))
    return out


TABLE = Table(
    target="openai",
    version=READ,
    api="Structured Outputs, strict: true (response_format json_schema / strict function tools)",
    rules=RULES,
    judge=judge,
)
