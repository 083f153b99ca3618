"""Validate a parsed output against its schema: one compiled checker per schema.

Why this shape: ``jsonschema.validate`` re-checks the schema and rebuilds a validator on
every call (milliseconds). Here each schema is compiled once (cached by name), valid outputs
take the fast path (``fastcheck``), and only failures run ``iter_errors`` so that
``best_match`` can name the most relevant keyword, pointer and message.

A ``pattern`` that backtracks catastrophically cannot be interrupted from inside ``re``
except by a signal, so validation of schemas that use regexes runs under the watchdog
(``watchdog.py``). A record whose validation times out is a ``schema_violation:pattern``
(it could not be verified), and the pipeline lists it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match
from jsonschema.validators import validator_for

from schemaops.audit.classify import MAX_DEPTH, OUTCOME_OK, PARSE, VIOLATION, Outcome
from schemaops.audit.fastcheck import _ID_KEYWORDS, _mentions, compile_fast, inline_refs
from schemaops.audit.watchdog import (  # alarm_handler: re-exported for the registry
    TIMEOUT_PREFIX,
    ValidationTimeout,
    _Watch,
    alarm_handler,  # noqa: F401
)
from schemaops.errors import InputError
from schemaops.formats import format_checker

MESSAGE_LIMIT = 300


def pointer(path: Any) -> str:
    """RFC 6901 JSON pointer for a jsonschema ``absolute_path`` deque ("" is the root)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _short(text: str) -> str:
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 3] + "..."


class SchemaChecker:
    """A schema compiled once: ``check(value) -> Outcome`` and ``all_errors(value)``."""

    def __init__(self, name: str, schema: Any, assert_format: bool = True, timeout: float = 1.0):
        self.name = name
        self.schema = schema
        cls = validator_for(schema, default=validator_for({}))
        try:
            cls.check_schema(schema)
        except SchemaError as exc:
            raise InputError(f"schema {name!r} is not a valid JSON Schema: {exc.message}") from None
        fmt = format_checker() if assert_format else None
        explain = schema
        if cls is Draft202012Validator and not _mentions(schema, _ID_KEYWORDS):
            explain = inline_refs(schema)
        self.validator = cls(explain, format_checker=fmt)
        self.fast = compile_fast(schema, cls, fmt)
        # Only schemas with regexes can hang (the watchdog's timeout is set by alarm_handler).
        self.guarded = _mentions(schema, ("pattern", "patternProperties")) and timeout > 0
        self.timeouts = 0

    def check(self, value: Any) -> Outcome:
        """Classify a parsed value: ``ok`` or ``schema_violation:<keyword>``.

        Only schemas with regexes are watched: without one, validation is linear in the size
        of the output and a slow record is just a big one.
        """
        w = _Watch
        w.seq += 1
        w.active = self.guarded
        try:
            fast = self.fast
            if fast is not None and fast(value):
                return OUTCOME_OK
            return self._slow(value)
        except ValidationTimeout:
            self.timeouts += 1
            return Outcome(
                f"{VIOLATION}:pattern",
                None,
                "",
                f"{TIMEOUT_PREFIX} {w.timeout:g}s (a pattern backtracking catastrophically?);"
                " counted as a failure because the output could not be verified",
            )
        except RecursionError:
            return _too_deep()
        finally:
            w.active = False

    def _slow(self, value: Any) -> Outcome:
        try:
            err = best_match(self.validator.iter_errors(value))
        except RecursionError:
            return _too_deep()
        if err is None:
            return OUTCOME_OK
        keyword = err.validator if err.validator is not None else "false"
        return Outcome(
            f"{VIOLATION}:{keyword}", None, pointer(err.absolute_path), _short(err.message)
        )

    def all_errors(self, value: Any) -> Counter:
        """Keyword -> count of every top-level violation (for ``--all-errors``)."""
        counts: Counter = Counter()
        _Watch.seq += 1
        _Watch.active = self.guarded
        try:
            for err in self.validator.iter_errors(value):
                counts[err.validator if err.validator is not None else "false"] += 1
        except (RecursionError, ValidationTimeout):
            pass
        finally:
            _Watch.active = False
        return counts


def _too_deep() -> Outcome:
    return Outcome(PARSE, "limit_exceeded", None, f"nesting deeper than {MAX_DEPTH} (validation)")


def read_schema_file(path: Path) -> Any:
    """Read a schema from a file path, with a clear error (exit 2) when it cannot be read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read schema file {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InputError(f"schema file {path} is not JSON: {exc}") from None


def _bundled(entry: Any) -> Any:
    """The registry's self-contained form (refs to other files inlined into ``$defs``)."""
    if hasattr(entry, "bundled"):
        return entry.bundled()
    body = getattr(entry, "self_contained", None)
    return entry.schema if body is None else body


class SchemaResolver:
    """Name -> compiled checker, loading the registry only when a record names a schema."""

    def __init__(
        self,
        schema: str | None,
        registry: str | Path,
        assert_format: bool = True,
        timeout: float = 1.0,
    ) -> None:
        self.registry_path = Path(registry)
        self.assert_format = assert_format
        self.timeout = timeout
        self._registry: Any = None
        self._problems: dict[str, list[dict]] = {}
        self._cache: dict[str, SchemaChecker | None] = {}
        self.fixed: SchemaChecker | None = None
        if schema is not None:
            path = Path(schema)
            if path.is_file() or schema.endswith(".json"):
                self.fixed = self._compile_file(path)
            else:
                self.fixed = self._compile_from_registry(schema)

    def _compile_file(self, path: Path) -> SchemaChecker:
        """A schema file, with its relative ``$ref``s bundled by the registry loader."""
        try:
            from schemaops.registry.loader import load_schema_file
        except ImportError:  # older registry API: read the file as is
            return SchemaChecker(
                path.stem, read_schema_file(path), self.assert_format, self.timeout
            )
        entry = load_schema_file(path)
        return SchemaChecker(entry.name, _bundled(entry), self.assert_format, self.timeout)

    def _load_registry(self) -> Any:
        if self._registry is None:
            from schemaops.registry import inspect_registry

            if not self.registry_path.is_dir():
                raise InputError(
                    f"registry folder not found: {self.registry_path} (records name schemas;"
                    " pass --registry DIR, or --schema FILE|NAME for all records)"
                )
            # Not load_registry: one broken file (or a failing sidecar example) must not stop
            # the audit of outputs of the other schemas. A schema whose own file has problems
            # is refused per line instead (see _compile_from_registry).
            self._registry, problems = inspect_registry(self.registry_path)
            for p in problems:
                self._problems.setdefault(str(p.get("file")), []).append(p)
        return self._registry

    def _compile_from_registry(self, name: str) -> SchemaChecker:
        entry = self._load_registry().get(name)  # raises InputError naming known schemas
        own = self._problems.get(str(entry.path)) if entry.path is not None else None
        if own:
            reasons = "; ".join(f"{p.get('pointer') or '/'}: {p.get('reason')}" for p in own[:3])
            raise InputError(f"schema {name!r} has registry problems ({entry.path}): {reasons}")
        return SchemaChecker(name, _bundled(entry), self.assert_format, self.timeout)

    def registry_names(self) -> list[str]:
        """Every schema name in the registry, or [] when there is none (or ``--schema``)."""
        if self.fixed is not None or not self.registry_path.is_dir():
            return []
        return list(self._load_registry().schemas)

    def has(self, name: str) -> bool:
        """True when the registry has ``name`` (used for tool-call names)."""
        try:
            return name in self._load_registry().schemas
        except InputError:
            return False

    def get(self, name: str) -> SchemaChecker:
        """The checker for a registry name; ``InputError`` if unknown (a per-line error)."""
        checker = self._cache.get(name)
        if checker is None:
            checker = self._compile_from_registry(name)
            self._cache[name] = checker
        return checker

    def checkers(self) -> list[SchemaChecker]:
        return [c for c in [self.fixed, *self._cache.values()] if c is not None]
