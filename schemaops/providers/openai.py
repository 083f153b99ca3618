"""OpenAI Structured Outputs (``strict: true``): the documented schema subset, as one table.

Read 2026-12-01 from the "Supported schemas" section of the Structured Outputs guide
(``SOURCE``; the search tool's stored copy of the guide, the same text as
developers.openai.com/api/docs/guides/structured-outputs). The page says: "If you turn on
Structured Outputs by supplying ``strict: true`` and call the API with an unsupported JSON
Schema, you will receive an error", so the page's rules here are ``refused`` (HTTP 400).

Re-read 2026-12-03 against what OpenAI's own SDKs send and what the API was observed to do
(each rule cites its source):

- the SDKs' strict transforms (openai-python ``src/openai/lib/_pydantic.py``
  ``to_strict_json_schema``, ``SDK_SOURCE``; openai-node ``src/lib/transform.ts``
  ``toStrictJsonSchema``, ``NODE_SOURCE``) keep the annotations ``$comment``, ``default``
  (non-null), ``description``, ``examples``, ``readOnly``, ``title``, ``writeOnly`` and send
  them: a provider accepts what its own SDK sends, and a maintainer's probe of api.openai.com
  with a non-null ``default`` was served (openai-agents-python #4390). They are accepted.
- ``minLength``/``maxLength``: the SDKs keep them, a live probe was served (pydantic-ai #7315,
  #7400). Accepted; the guide does not document them as enforced for base models, so they
  are the residual (``ignored``), not a refusal.
- ``anyOf`` branches whose objects share their first key: observed 400 (``ANYOF_SOURCE``).

Where the page is ambiguous and no SDK or observation settles it, the rule's note says so and
the verdict is the conservative one (refused): a keyword in none of these lists, a ``format``
value not in the page's list, and how nesting levels are counted.

Azure OpenAI differs (a non-null ``default`` is refused there: openai-agents-python #4390); this
table is api.openai.com's and does not model Azure.
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
    resolve_ref_node,
    walk,
)

SOURCE = "https://platform.openai.com/docs/guides/structured-outputs#supported-schemas"
#: The OpenAI Python SDK's own strict-schema helper, which sends pydantic's ``title``s.
SDK_SOURCE = "https://github.com/openai/openai-python/blob/main/src/openai/lib/_pydantic.py"
#: The OpenAI Node SDK's strict transform: its ``JSON_SCHEMA_ANNOTATION_KEYWORDS`` are kept
#: (also beside a ``$ref``: ``hasOnlyRefAndAnnotations``), a nested ``$id`` is refused
#: (``assertNoNestedSchemaIds``), a root one passes through.
NODE_SOURCE = "https://github.com/openai/openai-node/blob/master/src/lib/transform.ts"
#: openai-node's zod helper: ``z4.toJSONSchema(..., {target: 'draft-7'})`` writes the root
#: ``$schema``, and ``toStrictJsonSchema`` sends it on.
ZOD_SOURCE = "https://github.com/openai/openai-node/blob/master/src/helpers/zod.ts"
#: api.openai.com served a strict schema with a non-null ``default`` (a maintainer's probe);
#: Azure OpenAI refused it ("'default' is not permitted within a property definition").
DEFAULT_SOURCE = "https://github.com/openai/openai-agents-python/issues/4390"
#: "live-probed: 200" with minLength/maxLength in strict mode (pydantic-ai #7315 reports it).
LENGTH_SOURCE = "https://github.com/pydantic/pydantic-ai/pull/7400"
#: "Objects provided via 'anyOf' must not share identical first keys" (the API's 400 text,
#: reported on OpenAI's forum and in openai-python #2193 with a pydantic repro).
ANYOF_SOURCE = "https://github.com/openai/openai-python/issues/2193"
ANYOF_FORUM = (
    "https://community.openai.com/t/objects-provided-via-anyof-must-not-share-identical-first-"
    "keys-error-in-structured-output/958572"
)
READ = "2026-12-01"
REREAD = "2026-12-03"

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
#: Annotations the SDKs send (openai-node ``JSON_SCHEMA_ANNOTATION_KEYWORDS``; openai-python
#: keeps every one of them, dropping only a ``null`` default): accepted, they constrain nothing.
ANNOTATIONS = frozenset(
    {"$comment", "default", "description", "examples", "readOnly", "title", "writeOnly"}
)
#: Accepted at the root only: the root ``$schema`` zod's helper writes (``ZOD_SOURCE``) and a
#: root ``$id`` (openai-node refuses a nested one only: ``NODE_SOURCE``).
ROOT_ONLY = frozenset({"$schema", "$id"})
#: Accepted (``LENGTH_SOURCE``), not documented as enforced for base models: the residual.
LENGTH = ("minLength", "maxLength")
#: "Some type-specific keywords are not yet supported: Composition: ..."
COMPOSITION = ("allOf", "not", "dependentRequired", "dependentSchemas", "if", "then", "else")
#: "format — Predefined formats for strings. Currently supported: ..."
FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)


def _rule(
    rid: str,
    summary: str,
    note: str = "",
    source: str = SOURCE,
    effect: str = "refused",
    read: str = READ,
) -> Rule:
    return Rule(f"openai.{rid}", summary, effect, source, read, note)  # type: ignore[arg-type]


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
            "a keyword outside the documented subset, the annotations the SDKs send, and "
            "the root $schema/$id",
            "Ambiguous: the page lists the supported keywords and says an unsupported schema "
            "gets an error; it lists patternProperties as 'additionally' unsupported for "
            "fine-tuned models only, which suggests but does not say that base models accept "
            "it. Judged refused (conservative). Accepted, because OpenAI's SDKs send them: the "
            f"annotations {sorted(ANNOTATIONS)} ({NODE_SOURCE}; {SDK_SOURCE}; a non-null "
            f"default was served by api.openai.com: {DEFAULT_SOURCE}) and a root $schema/$id "
            f"({ZOD_SOURCE}). A nested $id stays refused (the Node SDK refuses it). "
            "minLength/maxLength: see openai.string-length.",
            read=REREAD,
        ),
        _rule(
            "string-length",
            "minLength/maxLength are accepted; not documented as enforced (residual)",
            "Observed: a live probe with minLength/maxLength in strict mode was served (200) "
            "and reported the constraints enforced (pydantic-ai #7315, #7400), and both SDKs "
            f"keep them ({NODE_SOURCE} does not list them as unsupported). The guide lists "
            "them as unsupported for fine-tuned models only and does not say base models "
            "enforce them: the table follows the observed acceptance (not refused) and the "
            "page's silence on enforcement (ignored: the application re-checks them), since "
            "one probe does not document a guarantee.",
            LENGTH_SOURCE,
            "ignored",
            REREAD,
        ),
        _rule(
            "ref-siblings",
            "a $ref may have no sibling keywords other than annotations",
            "Not on the guide page. openai-python inlines a $ref that has any sibling ('we "
            f"can't use $refs if there are also other properties defined', {SDK_SOURCE}), "
            "while openai-node sends a $ref beside annotations (hasOnlyRefAndAnnotations) and "
            "refuses other siblings: the table follows the Node SDK, which sends the $ref, so "
            "annotations beside a $ref are accepted and other siblings refused.",
            NODE_SOURCE,
            read=REREAD,
        ),
        _rule(
            "anyof-first-keys",
            "object branches of one anyOf must not share their first property name",
            "Not on the guide page: observed 400 'Objects provided via 'anyOf' must not share "
            f"identical first keys' ({ANYOF_FORUM}; openai-python #2193 reproduces it with two "
            "pydantic models whose first field is the same, labelled Azure there). Against "
            "it: openai-node's zod helper sends a discriminated union as anyOf "
            f"({ZOD_SOURCE}), whose branches usually start with the discriminator. The table "
            "follows the observed error (the API's own text) over the SDK's intent: refused. "
            "A branch that is a $ref is judged by its target; the first key is the first of "
            "its properties, in the order sent.",
            ANYOF_SOURCE,
            read=REREAD,
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


def _first_key(root: Any, branch: Any) -> str | None:
    """The first property name of an object branch (a ``$ref`` chain followed, each ref
    once); None for a branch that is not an object schema with properties."""
    seen: set[str] = set()
    while isinstance(branch, dict) and isinstance(branch.get("$ref"), str):
        ref = branch["$ref"]
        target = resolve_ref_node(root, ref)
        if ref in seen or target is None:
            return None
        seen.add(ref)
        branch = target.schema
    props = branch.get("properties") if isinstance(branch, dict) else None
    if not isinstance(props, dict) or not props:
        return None
    return str(next(iter(props)))


def _shared_first_keys(root: Any, node: Any) -> list[Finding]:
    """``openai.anyof-first-keys`` at each branch whose first key an earlier branch has."""
    branches = node.schema.get("anyOf")
    if not isinstance(branches, list):
        return []
    out: list[Finding] = []
    first: dict[str, int] = {}
    for i, b in enumerate(branches):
        key = _first_key(root, b)
        if key is None:
            continue
        if key in first:
            msg = f"branches {first[key]} and {i} both start with '{key}'"
            out.append(Finding(_r("anyof-first-keys"), node.at("anyOf", i), msg))
        else:
            first[key] = i
    return out


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
            elif kw in LENGTH:
                out.append(Finding(_r("string-length"), node.at(kw), f"'{kw}'"))
            elif kw in ANNOTATIONS or (kw in ROOT_ONLY and not node.parts):
                continue
            elif kw not in SUPPORTED:
                out.append(Finding(_r("undocumented-keyword"), node.at(kw), f"'{kw}'"))
        fmt = s.get("format")
        if isinstance(fmt, str) and fmt not in FORMATS:
            out.append(Finding(_r("format-value"), node.at("format"), f"format '{fmt}'"))
        if "$ref" in s:
            extra = [k for k in s if k != "$ref" and k not in ANNOTATIONS]
            if extra:
                where = node.at(extra[0])
                out.append(Finding(_r("ref-siblings"), where, f"next to $ref: {extra}"))
        out.extend(_shared_first_keys(schema, node))
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
    version=REREAD,
    api="Structured Outputs, strict: true (response_format json_schema / strict function tools)",
    rules=RULES,
    judge=judge,
)
