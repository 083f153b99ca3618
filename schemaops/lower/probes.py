"""What each backend does with each keyword, measured on the real library, never assumed.

Every probe is a tiny schema with valid and invalid instances chosen at the strictness of
``schemaops.formats`` (the project's one format semantics). ``probe_backend`` compiles and
walks them on a backend with ``schemaops.compare.measure_many`` (the same isolated workers and
enforcement walk ``compare``/``check`` use) and reads one capability per probe:

- ``enforced``: compiled, every valid instance produced, every invalid one refused;
- ``ignored``: compiled, but an invalid instance walked to a stop (the keyword is dropped);
- ``narrower``: compiled, but a valid instance could not be produced (the backend is
  stricter than JSON Schema, e.g. a format regex without numeric offsets);
- ``refused``: the backend does not compile the schema (unsupported or error).

Results are cached in the user cache directory, keyed on the fingerprint of the code and
libraries that measure them and on the probes themselves (``_cache_file``), so a ``lower``
run pays the probes (a few seconds on outlines) once per installed library and code.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from schemaops.cachekeys import read_regular

#: a probe table is a few KiB; anything larger in its place is not one
_MAX_CACHE_BYTES = 1 << 20

ENFORCED, IGNORED, NARROWER, REFUSED = "enforced", "ignored", "narrower", "refused"
CAPABILITIES = (ENFORCED, IGNORED, NARROWER, REFUSED)

_DIST = {"xgrammar": "xgrammar", "llguidance": "llguidance", "outlines": "outlines_core"}


@dataclass(frozen=True)
class Probe:
    """One keyword (or keyword form) under test."""

    key: str
    schema: dict[str, Any]
    valid: list[Any] = field(default_factory=list)
    invalid: list[Any] = field(default_factory=list)


def _obj(prop: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"v": prop},
        "required": ["v"],
        "additionalProperties": False,
    }


def _anychar(pattern: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"v": {"type": "string", "pattern": pattern}, "w": {"enum": ["a"]}},
        "required": ["v"],
        "additionalProperties": False,
    }


def _v(*xs: Any) -> list[dict[str, Any]]:
    return [{"v": x} for x in xs]


# One row per keyword form; the rows look alike by design (a table, not repeated code).
PROBES: tuple[Probe, ...] = (
    Probe("integer.minimum", _obj({"type": "integer", "minimum": 3}), _v(3, 40), _v(2, -5)),
    Probe("integer.maximum", _obj({"type": "integer", "maximum": 7}), _v(7, -2), _v(8, 70)),
    Probe(
        "integer.exclusiveMinimum",
        _obj({"type": "integer", "exclusiveMinimum": 3}),
        _v(4, 40),
        _v(3, -5),
    ),
    Probe(
        "integer.exclusiveMaximum",
        _obj({"type": "integer", "exclusiveMaximum": 7}),
        _v(6, -2),
        _v(7, 70),
    ),
    Probe("integer.multipleOf", _obj({"type": "integer", "multipleOf": 5}), _v(0, 15), _v(7, 11)),
    Probe("number.minimum", _obj({"type": "number", "minimum": 1.5}), _v(1.5, 20), _v(1.25, -3)),
    Probe("number.maximum", _obj({"type": "number", "maximum": 1.5}), _v(1.5, -20), _v(1.75, 30)),
    Probe(
        "number.exclusiveMinimum",
        _obj({"type": "number", "exclusiveMinimum": 0}),
        _v(0.5, 3),
        _v(0, -1.5),
    ),
    Probe(
        "number.exclusiveMaximum",
        _obj({"type": "number", "exclusiveMaximum": 10}),
        _v(9.5, -3),
        _v(10, 11.5),
    ),
    Probe("enum.integer", _obj({"type": "integer", "enum": [1, 2, 30]}), _v(1, 30), _v(3, 20)),
    Probe("string.minLength", _obj({"type": "string", "minLength": 3}), _v("abc"), _v("ab")),
    Probe("string.maxLength", _obj({"type": "string", "maxLength": 3}), _v("abc"), _v("abcd")),
    Probe(
        "pattern.anchored",
        _obj({"type": "string", "pattern": "^[a-c]{2}$"}),
        _v("ab"),
        _v("abc", "xy"),
    ),
    # JSON Schema's pattern is a search: "b" matches "abc"
    Probe(
        "pattern.unanchored",
        _obj({"type": "string", "pattern": "b[0-9]"}),
        _v("ab1c", "b2"),
        _v("ac", "b"),
    ),
    # a pattern and a length on one string (outlines keeps only one of them)
    Probe(
        "pattern.with_length",
        _obj({"type": "string", "pattern": "^[a-c]+$", "maxLength": 3}),
        _v("ab", "abc"),
        _v("xy", "abcc"),
    ),
    Probe(
        "format.with_length",
        _obj({"type": "string", "format": "uuid", "maxLength": 40}),
        _v("3f2b8c1e-9a4d-4e7b-8c21-5d6f7a8b9c0d"),
        _v("12345"),
    ),
    # the any-character class lowering uses to turn a search into an anchored match; the
    # optional second property shows a backend whose wildcard also matches the closing quote
    # (the model could then write `"a@b","w":"b"` inside the string)
    Probe(
        "pattern.anychar",
        _anychar("^[\\s\\S]*@[\\s\\S]*$"),
        [{"v": "a@b"}, {"v": "x y@z", "w": "a"}, {"v": "@"}],
        [{"v": "ab"}, {"v": "a@b", "w": "b"}],
    ),
    Probe(
        "pattern.jsonchar",
        _anychar('^[^"\\\\\\x00-\\x1f]*@[^"\\\\\\x00-\\x1f]*$'),
        [{"v": "a@b"}, {"v": "x y@z", "w": "a"}, {"v": "@"}],
        [{"v": "ab"}, {"v": "a@b", "w": "b"}],
    ),
    Probe(
        "format.date",
        _obj({"type": "string", "format": "date"}),
        _v("2024-02-29", "2026-12-31"),
        _v("2026-02-29", "2026-13-01", "26-01-01"),
    ),
    Probe(
        "format.date-time",
        _obj({"type": "string", "format": "date-time"}),
        _v("2026-12-01T09:00:00Z", "2026-12-02T14:00:00-08:00", "2026-12-01t09:00:00.5z"),
        # a leap second away from 23:59:60 UTC is no date-time (JSON-Schema-Test-Suite)
        _v(
            "2026-12-01 09:00:00Z",
            "2026-12-01T25:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-12-01T12:00:60Z",
        ),
    ),
    Probe(
        "format.time",
        _obj({"type": "string", "format": "time"}),
        _v("09:00:00Z", "23:59:60Z"),
        # 23:59:60+01:00 is 22:59:60 UTC: no leap second there (JSON-Schema-Test-Suite)
        _v("09:00:00", "24:00:00Z", "12:00:60Z", "23:59:60+01:00"),
    ),
    Probe(
        "format.uuid",
        _obj({"type": "string", "format": "uuid"}),
        _v("3f2b8c1e-9a4d-4e7b-8c21-5d6f7a8b9c0d", "A1B2C3D4-E5F6-4A7B-8C9D-0E1F2A3B4C5D"),
        _v("12345", "3f2b8c1e9a4d4e7b8c215d6f7a8b9c0d"),
    ),
    Probe(
        "format.email",
        _obj({"type": "string", "format": "email"}),
        _v("ana@example.com", "j.doe+shop@example.co.uk", "a@b"),
        _v("not-an-email"),
    ),
    Probe(
        "array.minItems",
        _obj({"type": "array", "items": {"type": "integer"}, "minItems": 2}),
        _v([1, 2]),
        _v([1], []),
    ),
    Probe(
        "array.maxItems",
        _obj({"type": "array", "items": {"type": "integer"}, "maxItems": 2}),
        _v([1, 2], []),
        _v([1, 2, 3]),
    ),
    Probe(
        "array.uniqueItems",
        _obj({"type": "array", "items": {"type": "integer"}, "uniqueItems": True}),
        _v([1, 2], []),
        _v([1, 1]),
    ),
    Probe(
        "array.contains",
        _obj({"type": "array", "items": {"type": "integer"}, "contains": {"const": 5}}),
        _v([1, 5]),
        _v([1, 2]),
    ),
    Probe(
        "object.minProperties",
        _obj(
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "additionalProperties": False,
                "minProperties": 1,
            }
        ),
        _v({"a": 1}, {"b": 2}),
        _v({}),
    ),
    Probe(
        "object.maxProperties",
        _obj(
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "additionalProperties": False,
                "maxProperties": 1,
            }
        ),
        _v({"a": 1}, {}),
        _v({"a": 1, "b": 2}),
    ),
    Probe(
        "object.dependentRequired",
        _obj(
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "additionalProperties": False,
                "dependentRequired": {"a": ["b"]},
            }
        ),
        _v({"a": 1, "b": 2}, {"b": 2}),
        _v({"a": 1}),
    ),
    # a required property that `properties` does not list (xgrammar's strict mode refuses it)
    Probe(
        "object.required_unlisted",
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["b"]},
        [{"b": 1}, {"a": 1, "b": "x"}],
        [{}, {"a": 1}],
    ),
    # keywords next to an anyOf (the union's branches list the properties)
    Probe(
        "anyOf.siblings",
        {
            "type": "object",
            "required": ["a"],
            "anyOf": [
                {"properties": {"a": {"type": "integer"}}},
                {"properties": {"a": {"type": "string"}}},
            ],
        },
        [{"a": 1}, {"a": "x"}],
        [{}, {"a": None}],
    ),
    Probe(
        "allOf",
        {
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]},
            ]
        },
        [{"a": 1, "b": "x"}],
        [{"a": 1}, {"b": "x"}, {"a": "1", "b": "x"}],
    ),
    Probe(
        "if",
        {
            "type": "object",
            "properties": {"k": {"enum": ["a", "b"]}, "n": {"type": "integer"}},
            "required": ["k", "n"],
            "additionalProperties": False,
            "if": {"properties": {"k": {"const": "a"}}},
            "then": {"properties": {"n": {"enum": [1]}}},
            "else": {"properties": {"n": {"enum": [2]}}},
        },
        [{"k": "a", "n": 1}, {"k": "b", "n": 2}],
        [{"k": "a", "n": 2}, {"k": "b", "n": 1}],
    ),
    Probe("not", _obj({"type": "integer", "not": {"const": 3}}), _v(2, 4), _v(3)),
    Probe(
        "$ref",
        {
            "$defs": {"d": {"type": "integer", "enum": [1, 2]}},
            "type": "object",
            "properties": {"v": {"$ref": "#/$defs/d"}},
            "required": ["v"],
            "additionalProperties": False,
        },
        _v(1, 2),
        _v(3, "1"),
    ),
    Probe(
        "$ref.siblings",
        {
            "$defs": {"d": {"type": "integer"}},
            "type": "object",
            "properties": {"v": {"$ref": "#/$defs/d", "enum": [1, 2]}},
            "required": ["v"],
            "additionalProperties": False,
        },
        _v(1, 2),
        _v(3, "1"),
    ),
    Probe(
        "oneOf",
        _obj({"oneOf": [{"type": "integer"}, {"type": "string"}]}),
        _v(1, "x"),
        _v(True, None),
    ),
    Probe("const", _obj({"const": "x"}), _v("x"), _v("y")),
    Probe(
        "schema.annotations_only",  # no validation keyword: any value (outlines refuses it)
        _obj({"description": "any value"}),
        _v(1, "x", None, [1], {"a": 1}),
        [{"w": 1}, {}],
    ),
    Probe("schema.empty", _obj({}), _v(1, "x", None, [1], {"a": 1}), [{"w": 1}, {}]),
)


def _library_version(backend: str) -> str:
    try:
        return metadata.version(_DIST.get(backend, backend))
    except metadata.PackageNotFoundError:
        return "unknown"


def _cache_file(backend: str, tokenizer: str) -> Path:
    """Where the probe table of ``backend`` on ``tokenizer`` is cached: keyed on the code
    and libraries that measure it (``cachekeys.probe_fingerprint``) and on the probes
    themselves (schemas and instances), so an edited probe or rule is measured afresh."""
    from schemaops.cachedir import cache_root
    from schemaops.cachekeys import probe_fingerprint

    probes = json.dumps([[p.key, p.schema, p.valid, p.invalid] for p in PROBES], sort_keys=True)
    h = hashlib.sha256(f"{probe_fingerprint(backend)}\0{tokenizer}\0".encode())
    h.update(probes.encode())
    tag = f"{backend}-{_library_version(backend)}-{tokenizer}-{h.hexdigest()[:24]}"
    return cache_root() / "lower" / f"probes-{tag.replace('/', '_')}.json"


_CAPABILITY = {"accepts_invalid": IGNORED, "rejects_valid": NARROWER, "enforced": ENFORCED}


def capability_of(result: dict[str, Any]) -> str:
    """One capability word from a compare result (see module doc)."""
    if result.get("status") != "ok":
        return REFUSED
    verdict = (result.get("enforcement") or {}).get("verdict")
    # failed/unchecked: no evidence that it works, so do not rely on it
    return _CAPABILITY.get(verdict, REFUSED)


def probe_backend(
    backend: str, tokenizer: str = "qwen2.5", *, use_cache: bool = True, timeout_s: float = 60.0
) -> dict[str, str]:
    """``{probe key: capability}`` for ``backend``, measured (or read from the cache)."""
    path = _cache_file(backend, tokenizer)
    if use_cache:
        try:
            # a regular file only, opened without blocking (a FIFO would hang a plain read)
            data = json.loads(read_regular(path, _MAX_CACHE_BYTES))
            if isinstance(data, dict) and set(data) == {p.key for p in PROBES}:
                if all(v in CAPABILITIES for v in data.values()):
                    return data
        except (OSError, ValueError):
            pass
    from schemaops.compare import measure_many

    items = [
        {"name": p.key, "schema": p.schema, "valid": p.valid, "invalid": p.invalid} for p in PROBES
    ]
    results = measure_many(items, [backend], tokenizer, timeout_s=timeout_s)
    caps = {str(r["schema"]): capability_of(r) for r in results}
    if use_cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(caps, indent=1), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass
    return caps
