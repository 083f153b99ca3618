"""The keyword tables the lowering passes share: which keywords hold subschemas, which move
into union branches, which capability probe answers for a keyword, and how a capability is
said.

Why apart: the core walk (``passes``) and the pass families (``passes_composition``,
``passes_values``) read the same tables; one place keeps them the same.
"""

from __future__ import annotations

from schemaops.lower.merge import VOCABULARY

#: the largest integer range (or multipleOf set) turned into an enum
MAX_ENUM = 256

# The subschemas the rewrite descends into: not registry/refs.py's list (every subschema
# keyword) on purpose, since the insides of not, if and contains are never rewritten.
MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")

SINGLE = (
    "items",
    "additionalProperties",
    "then",
    "else",
    "propertyNames",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
)

LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")

#: keywords that move into union branches (validation, not annotations or $defs)
SIBLINGS = VOCABULARY - {"$defs", "definitions"}

NUMERIC = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")

PROBE_OF = {
    "minLength": "string.minLength",
    "maxLength": "string.maxLength",
    "pattern": "pattern.anchored",
    "minItems": "array.minItems",
    "maxItems": "array.maxItems",
    "uniqueItems": "array.uniqueItems",
    "contains": "array.contains",
    "minContains": "array.contains",
    "maxContains": "array.contains",
    "minProperties": "object.minProperties",
    "maxProperties": "object.maxProperties",
    "dependentRequired": "object.dependentRequired",
    "not": "not",
    "oneOf": "oneOf",
}

VERB = {
    "ignored": "ignores it (an invalid probe instance walked to a stop)",
    "refused": "refuses it (the probe schema does not compile)",
    "narrower": "is stricter than JSON Schema (a valid probe instance cannot be produced)",
}


def capability(caps: dict[str, str], key: str) -> str:
    return caps.get(key, "refused")
