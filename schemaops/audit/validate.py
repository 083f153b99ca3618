"""Validate a parsed output against its schema: one compiled checker per schema.

Why this shape: ``jsonschema.validate`` re-checks the schema and rebuilds a validator on
every call (milliseconds). Here each schema is compiled once (cached by name), valid outputs
take the fast path (``fastcheck``), and only failures run ``iter_errors`` so that
``best_match`` can name the most relevant keyword, pointer and message.

A ``pattern`` that backtracks catastrophically cannot be interrupted from inside ``re``
except by a signal, so validation of schemas that use regexes runs under an interval timer
(``SIGALRM``, main thread only). A record whose validation times out is a
``schema_violation:pattern`` (it could not be verified), and the pipeline lists it.
"""

from __future__ import annotations

import json
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jsonschema import FormatChecker
from jsonschema.exceptions import SchemaError, best_match
from jsonschema.validators import validator_for

from schemaops.audit.classify import MAX_DEPTH, OUTCOME_OK, PARSE, VIOLATION, Outcome
from schemaops.audit.fastcheck import _mentions, compile_fast
from schemaops.errors import InputError

MESSAGE_LIMIT = 300
TIMEOUT_PREFIX = "validation exceeded"


class ValidationTimeout(Exception):
    """Raised by the SIGALRM handler while a record is being validated."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise ValidationTimeout()


class _Alarm:
    """Whether our SIGALRM handler is installed (by ``alarm_handler``) in this process."""

    installed = False


@contextmanager
def alarm_handler() -> Iterator[None]:
    """Install the timeout handler for the duration of an audit (main thread only)."""
    if threading.current_thread() is not threading.main_thread() or _Alarm.installed:
        yield
        return
    old = signal.signal(signal.SIGALRM, _on_alarm)
    _Alarm.installed = True
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        _Alarm.installed = False


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
        fmt = FormatChecker() if assert_format else None
        self.validator = cls(schema, format_checker=fmt)
        self.fast = compile_fast(schema, cls, fmt)
        self.timeout = timeout
        # Only schemas with regexes can hang; only the main thread can take a signal.
        self.guarded = _mentions(schema, ("pattern", "patternProperties")) and timeout > 0
        self.timeouts = 0

    def check(self, value: Any) -> Outcome:
        """Classify a parsed value: ``ok`` or ``schema_violation:<keyword>``."""
        fast = self.fast
        if fast is not None and not self.guarded:
            try:
                if fast(value):
                    return OUTCOME_OK
            except RecursionError:
                return _too_deep()
        if self.guarded and _Alarm.installed:
            return self._guarded(value)
        if fast is not None and self.guarded:
            try:
                if fast(value):
                    return OUTCOME_OK
            except RecursionError:
                return _too_deep()
        return self._slow(value)

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

    def _guarded(self, value: Any) -> Outcome:
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            if self.fast is not None and self.fast(value):
                return OUTCOME_OK
            return self._slow(value)
        except ValidationTimeout:
            self.timeouts += 1
            return Outcome(
                f"{VIOLATION}:pattern",
                None,
                "",
                f"{TIMEOUT_PREFIX} {self.timeout:g}s (a pattern backtracking catastrophically?);"
                " counted as a failure because the output could not be verified",
            )
        except RecursionError:
            return _too_deep()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def all_errors(self, value: Any) -> Counter:
        """Keyword -> count of every top-level violation (for ``--all-errors``)."""
        counts: Counter = Counter()
        armed = self.guarded and _Alarm.installed
        if armed:
            signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            for err in self.validator.iter_errors(value):
                counts[err.validator if err.validator is not None else "false"] += 1
        except (RecursionError, ValidationTimeout):
            pass
        finally:
            if armed:
                signal.setitimer(signal.ITIMER_REAL, 0)
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
        body = entry.self_contained if entry.self_contained is not None else entry.schema
        return SchemaChecker(entry.name, body, self.assert_format, self.timeout)

    def _load_registry(self) -> Any:
        if self._registry is None:
            from schemaops.registry import load_registry

            if not self.registry_path.is_dir():
                raise InputError(
                    f"registry folder not found: {self.registry_path} (records name schemas;"
                    " pass --registry DIR, or --schema FILE|NAME for all records)"
                )
            self._registry = load_registry(self.registry_path)
        return self._registry

    def _compile_from_registry(self, name: str) -> SchemaChecker:
        entry = self._load_registry().get(name)  # raises InputError naming known schemas
        body = getattr(entry, "self_contained", None)
        body = entry.schema if body is None else body
        return SchemaChecker(name, body, self.assert_format, self.timeout)

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
