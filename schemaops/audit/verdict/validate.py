"""Validate a parsed output against its schema: one compiled checker per schema
(``resolver.py`` maps schema names to checkers; ``schemaops.watchdog`` bounds one record's
time).

Why this shape: ``jsonschema.validate`` re-checks the schema and rebuilds a validator on
every call (milliseconds). Here each schema is compiled once (cached by name), valid outputs
are answered by jsonschema-rs (``rscheck.py``: about a microsecond for a tool call), and only
what it does not accept runs Python ``jsonschema``'s ``iter_errors``, so that ``best_match``
names the most relevant keyword, pointer and message exactly as before. A schema
jsonschema-rs cannot answer for exactly (``rscheck.compile_rs`` says why) is answered by the
closure tree (``treecheck.py``), then ``jsonschema``.

A ``pattern`` that backtracks catastrophically cannot be interrupted from inside ``re``
except by a signal, so validation of schemas that use regexes runs under the watchdog
(``schemaops.watchdog``). A record whose validation times out is a ``schema_violation:pattern``
(it could not be verified), and the pipeline lists it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match
from jsonschema.validators import validator_for

from schemaops.audit.verdict.classify import (
    MAX_DEPTH,
    OUTCOME_OK,
    PARSE,
    TIMEOUT_PREFIX,
    VIOLATION,
    Classification,
    WordedLater,
)
from schemaops.audit.verdict.explain import explain, skipping_class
from schemaops.audit.verdict.rscheck import ascii_text, compile_rs
from schemaops.audit.verdict.rsexplain import explainable, rs_best_match
from schemaops.audit.verdict.schemakeys import schema_hints, well_formed
from schemaops.audit.verdict.subset import Unsupported, inline_refs
from schemaops.audit.verdict.treecheck import compile_tree
from schemaops.errors import InputError
from schemaops.formats import format_checker
from schemaops.registry.drafts import meta_valid
from schemaops.strings import pointer, truncate
from schemaops.watchdog import WatchdogTimeout, watched
from schemaops.watchdog import timeout as watchdog_timeout

MESSAGE_LIMIT = 300
_PENDING: Any = object()


class SchemaChecker:
    """A schema compiled once: ``check(value) -> Classification`` and ``all_errors(value)``."""

    def __init__(
        self,
        name: str,
        schema: Any,
        assert_format: bool = True,
        timeout: float = 1.0,
        checked: bool = False,
        hints: Any = None,
    ):
        """``hints``: ``self.hints`` of an earlier checker of the very same schema bytes (the
        audit's facts cache keeps them, ``schemakeys.py``), used as they are when well
        formed."""
        self.name = name
        self.schema = schema
        cls = validator_for(schema, default=validator_for({}))
        try:
            # the registry ran the metaschema check already; else the jsonschema-rs metaschema
            # check answers (jsonschema only explains a schema it refuses)
            if not checked and not meta_valid(schema, cls):
                cls.check_schema(schema, format_checker=format_checker())
        except SchemaError as exc:
            raise InputError(f"schema {name!r} is not a valid JSON Schema: {exc.message}") from None
        fmt = format_checker() if assert_format else None
        modern = cls is Draft202012Validator
        if not well_formed(hints):
            hints = schema_hints(schema, cls)
        #: what the schema's keys decide about this checker (a pure function of its bytes)
        self.hints = hints
        no_ids, treeable = hints["no_ids"], hints["treeable"]
        self.tree = compile_tree(schema, cls, fmt, screened=True, lazy=True) if treeable else None
        self._explainer = None
        if self.tree is not None:
            self._explainer = skipping_class(cls)(schema, format_checker=fmt)
        # Without a tree every failure walks the whole output: $refs inlined make that ~2x
        # faster (``inline_refs``). Built on first use (``validator``): with a tree, only
        # ``--all-errors`` needs it, and a platform registry sets up thousands of schemas.
        self._inline = modern and no_ids and self.tree is None
        self._validator: Any = None
        self._fast_args = (schema, cls, fmt)
        self._cls = cls
        self._assert_format = assert_format
        #: jsonschema-rs's yes/no check, compiled on first use; None when it cannot answer
        self._fast: Any = _PENDING
        self.fast_reason = ""
        #: jsonschema-rs's compiled validator, whose errors locate a failure's
        #: ``best_match`` (``rsexplain.py``) where the schema has no ``$id``-family key;
        #: None where jsonschema explains alone
        self._rs: Any = None
        self._worder: Any = None  # jsonschema's validator that words those errors
        #: jsonschema-rs reads this schema's patterns as Python does only on printable ASCII
        #: (``rscheck.ascii_fit``): its errors are used only for outputs ``ascii_text`` admits
        self._rs_ascii = False
        #: ``fast`` when it may run outside the watchdog (the audit's lean loop calls it
        #: directly: True is the verdict ``ok``, anything else goes through ``check``); set by
        #: ``fast``
        self.quick: Any = None
        # Only schemas with regexes can hang (the watchdog's timeout is set by ``armed``).
        self.guarded = hints["regex"] and timeout > 0
        self._watch = watched(self.guarded)  # reused: no allocation per record
        self.timeouts = 0

    @property
    def validator(self) -> Any:
        """jsonschema's validator for this schema (``$ref``s inlined where exact): what
        explains a failure when there is no closure tree, and what ``all_errors`` walks."""
        if self._validator is None:
            schema, cls, fmt = self._fast_args
            explain = inline_refs(schema) if self._inline else schema
            self._validator = cls(explain, format_checker=fmt)
        return self._validator

    @property
    def fast(self) -> Any:
        """jsonschema-rs's ``is_valid`` (compiled on first access), None when it cannot answer
        exactly (``fast_reason`` says why)."""
        if self._fast is _PENDING:
            rs = compile_rs(self.schema, self._cls, self._assert_format)
            self._fast, self.fast_reason = rs.is_valid, rs.reason
            if rs.validator is not None and self.hints["no_ids"] and explainable(self.schema):
                self._rs = rs.validator
            self._rs_ascii = rs.ascii_only
            self.quick = rs.is_valid if not rs.watched else None
        return self._fast

    @property
    def fast_path(self) -> bool:
        """Whether jsonschema-rs answers for this schema now (never compiles it)."""
        return self._fast is not _PENDING and self._fast is not None

    def check(self, value: Any) -> Classification:
        """Classify a parsed value: ``ok`` or ``schema_violation:<keyword>``.

        Only schemas with regexes are watched: without one, validation is linear in the size
        of the output and a slow record is just a big one.
        """
        fast = self._fast
        if fast is _PENDING:
            fast = self.fast
        try:
            with self._watch:
                if fast is not None:
                    try:
                        if fast(value):
                            return OUTCOME_OK
                    except WatchdogTimeout:
                        raise
                    except Exception:  # noqa: S110 (jsonschema below is the authority)
                        pass
                elif self.tree is not None:
                    try:
                        if self.tree(value):
                            return OUTCOME_OK
                    except Unsupported:  # a lazy subtree the tree cannot answer exactly
                        self.tree = None
                return self._slow(value)
        except WatchdogTimeout:
            self.timeouts += 1
            return Classification(
                f"{VIOLATION}:pattern",
                None,
                "",
                f"{TIMEOUT_PREFIX} {watchdog_timeout():g}s (a pattern backtracking"
                " catastrophically?); counted as a failure because the output could not be"
                " verified",
            )
        except RecursionError:
            return _too_deep()

    def _slow(self, value: Any) -> Classification:
        if self.tree is not None and self.tree.broken:
            self.tree = None  # a lazy subtree could not answer: jsonschema alone from now on
        if (
            self._rs is not None
            and (not self._rs_ascii or ascii_text(value))
            and not self._root_type_missed(value)
        ):
            found = self._rs_explained(value)
            if found is not None:
                keyword, path, message = found
                if callable(message):  # written when read: most failures are only counted
                    return WordedLater(
                        f"{VIOLATION}:{keyword}",
                        pointer(path),
                        lambda: truncate(message(), MESSAGE_LIMIT),
                    )
                return Classification(
                    f"{VIOLATION}:{keyword}", None, pointer(path), truncate(message, MESSAGE_LIMIT)
                )
        try:
            if self._explainer is not None:
                err = explain(self._explainer, self.tree, value)
                if self.tree is not None and self.tree.broken:
                    self.tree = None  # later outputs: jsonschema alone (the same answers)
            else:
                err = best_match(self.validator.iter_errors(value))
        except RecursionError:
            return _too_deep()
        if err is None:
            return OUTCOME_OK
        keyword = err.validator if err.validator is not None else "false"
        return Classification(
            f"{VIOLATION}:{keyword}",
            None,
            pointer(err.absolute_path),
            truncate(err.message, MESSAGE_LIMIT),
        )

    def _root_type_missed(self, value: Any) -> bool:
        """True when the output is not of the root's one ``type``: ``jsonschema`` names that
        at the root without walking anything, sooner than jsonschema-rs's error list is read
        (the platform bench's wrong root types: ``rsexplain`` cost 8 % more there)."""
        schema = self.schema
        expected = schema.get("type") if type(schema) is dict else None
        if type(expected) is not str:
            return False
        try:
            return not self._cls.TYPE_CHECKER.is_type(value, expected)
        except Exception:  # noqa: BLE001 (an unknown type name: jsonschema decides)
            return False

    def _rs_explained(self, value: Any) -> Any:
        """``rsexplain.rs_best_match`` (keyword, path, message), or None: jsonschema explains.
        The watchdog's timeout and the recursion limit pass through, as in ``_slow``."""
        if self._worder is None:
            schema, cls, fmt = self._fast_args
            self._worder = cls(schema, format_checker=fmt)
        try:
            return rs_best_match(self._rs, self._worder, self.schema, value, lazy=True)
        except (WatchdogTimeout, RecursionError):
            raise
        except Exception:  # noqa: BLE001 (anything unexpected: jsonschema answers alone)
            return None

    def all_errors(self, value: Any) -> tuple[Counter, bool]:
        """Keyword -> count of every top-level violation (for ``--all-errors``), and whether
        the count is complete: the watchdog or the recursion limit can stop it part way, and
        the report then says how many outputs were counted only in part."""
        counts: Counter = Counter()
        try:
            with self._watch:
                for err in self.validator.iter_errors(value):
                    counts[err.validator if err.validator is not None else "false"] += 1
        except (RecursionError, WatchdogTimeout):
            return counts, False
        return counts, True


def _too_deep() -> Classification:
    return Classification(
        PARSE, "limit_exceeded", None, f"nesting deeper than {MAX_DEPTH} (validation)"
    )
