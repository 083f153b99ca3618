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

Python ``jsonschema`` (and the closure tree, ``explain.py`` and ``subset.py``, built on it) is
imported and set up on a checker's first failure, not before: its import costs more than the
rest of a one-line audit's start (its format checkers import their optional packages), and an
output jsonschema-rs accepts never reads it (issue 36; ``tests/test_audit_startup.py``).

A ``pattern`` that backtracks catastrophically cannot be interrupted from inside ``re``
except by a signal, so validation of schemas that use regexes runs under the watchdog
(``schemaops.watchdog``). A record whose validation times out is a ``schema_violation:pattern``
(it could not be verified), and the pipeline lists it.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import Any

from schemaops.audit.verdict.classify import (
    MAX_DEPTH,
    OUTCOME_OK,
    PARSE,
    TIMEOUT_PREFIX,
    VIOLATION,
    Classification,
    WordedLater,
)
from schemaops.audit.verdict.rscheck import ascii_text, compile_rs
from schemaops.audit.verdict.rsexplain import Wording, explainable, root_id_only, rs_best_match
from schemaops.audit.verdict.schemakeys import schema_hints, well_formed
from schemaops.errors import InputError
from schemaops.formats import format_checker
from schemaops.registry.drafts import LEGACY_LABELS, dialect_label, meta_valid, validator_class
from schemaops.registry.refs import no_fetch
from schemaops.strings import pointer, truncate
from schemaops.watchdog import WatchdogTimeout, paused, watched
from schemaops.watchdog import timeout as watchdog_timeout

MESSAGE_LIMIT = 300
#: the ways a violation is explained (``SchemaChecker.explained``): the root's type without a
#: walk (``root_type_error``), located by jsonschema-rs and worded by jsonschema
#: (``rsexplain``), or jsonschema's own ``best_match`` (over the closure tree's failing part)
ROOT_TYPE, RS_LOCATED, JSONSCHEMA = "root_type", "jsonschema_rs", "jsonschema"
EXPLAINED_BY = (ROOT_TYPE, RS_LOCATED, JSONSCHEMA)
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
        scanned: Any = None,
    ):
        """``hints`` and ``scanned``: ``self.hints`` and ``self.scanned`` of an earlier
        checker of the very same schema bytes (the audit's facts cache keeps them,
        ``schemakeys.py``, ``rsscan.scan_facts``), used as they are when well formed."""
        self.name = name
        self.schema = schema
        #: the draft ``jsonschema.validators.validator_for`` picks (2020-12 by default)
        self.label = dialect_label(schema)
        #: jsonschema's validator class, looked up on first use (``_cls``)
        self._cls_found: Any = None
        # the registry ran the metaschema check already; else the jsonschema-rs metaschema
        # check answers (jsonschema only explains a schema it refuses)
        if not checked and not meta_valid(schema, self.label):
            from jsonschema.exceptions import SchemaError

            try:
                self._cls.check_schema(schema, format_checker=format_checker())
            except SchemaError as exc:
                msg = f"schema {name!r} is not a valid JSON Schema: {exc.message}"
                raise InputError(msg) from None
        if not well_formed(hints):
            hints = schema_hints(schema, self.label)
        #: what the schema's keys decide about this checker (a pure function of its bytes)
        self.hints = hints
        #: the closure check (``treecheck.py``), built on first use (``tree``); None where it
        #: cannot answer, or once a lazy subtree of it could not
        self._tree: Any = _PENDING if hints["treeable"] else None
        self._explainer = None
        # Without a tree every failure walks the whole output: $refs inlined make that ~2x
        # faster (``inline_refs``). Decided when the tree is (``_inlines``); the validator is
        # built on first use (``validator``): with a tree, only ``--all-errors`` needs it,
        # and a platform registry sets up thousands of schemas.
        self._inline = self._tree is None and self._inlines()
        self._validator: Any = None
        self._assert_format = assert_format
        #: ``prepare`` ran: jsonschema imported, the tree and explaining validators built
        self._prepared = False
        #: jsonschema-rs's yes/no check, compiled on first use; None when it cannot answer
        self._fast: Any = _PENDING
        self.fast_reason = ""
        #: ``rsscan.scan_facts`` of the schema, set by ``fast`` (None: no jsonschema-rs draft)
        self.scanned: Any = scanned
        #: jsonschema-rs's compiled validator, whose errors locate a failure's
        #: ``best_match`` (``rsexplain.py``) where the schema has no ``$id``-family key;
        #: None where jsonschema explains alone
        self._rs: Any = None
        self._worder: Any = None  # jsonschema's validator that words those errors
        #: jsonschema-rs reads this schema's patterns as Python does only on printable ASCII
        #: (``rsscan.ascii_fit``): its errors are used only for outputs ``ascii_text`` admits
        self._rs_ascii = False
        #: ``fast`` when it may run outside the watchdog (the audit's lean loop calls it
        #: directly: True is the verdict ``ok``, anything else goes through ``check``); set by
        #: ``fast``
        self.quick: Any = None
        #: no keyword of the schema can tell an integer from the double orjson reads for it
        #: (``rsscan.numbers_matter``): ``quick``'s yes holds for a value orjson read with a
        #: long integer as a float, so the lean loop need not look for floats; set by ``fast``
        self.numbers_plain = False
        # Only schemas with regexes can hang (the watchdog's timeout is set by ``armed``).
        self.guarded = hints["regex"] and timeout > 0
        self._watch = watched(self.guarded)  # reused: no allocation per record
        self.timeouts = 0
        #: how this checker's violations were explained, by way (``EXPLAINED_BY``): a count
        #: each, so that ``bench/audit_costs.py`` can say what each way costs on a workload
        self.explained: dict[str, int] = {}
        #: what ``root_type_error`` reads of the schema (``_plan_root``), on first use
        self._root_plan: Any = _PENDING

    @property
    def _cls(self) -> Any:
        """``jsonschema``'s validator class for the schema's draft (imported on first use)."""
        if self._cls_found is None:
            self._cls_found = validator_class(self.label)
        return self._cls_found

    @property
    def _fast_args(self) -> tuple[Any, Any, Any]:
        """(schema, jsonschema validator class, format checker or None): what jsonschema's
        validators of this schema are built from."""
        return self.schema, self._cls, format_checker() if self._assert_format else None

    @property
    def tree(self) -> Any:
        """The closure check (``treecheck.py``), compiled on first access, or None; with it
        the validator that explains a failure skipping the subtrees it accepts."""
        if self._tree is _PENDING:
            from schemaops.audit.verdict.explain import skipping_class
            from schemaops.audit.verdict.treecheck import compile_tree

            schema, cls, fmt = self._fast_args
            self._tree = compile_tree(schema, cls, fmt, screened=True, lazy=True)
            if self._tree is not None:
                explainer = skipping_class(cls)
                self._explainer = explainer(schema, format_checker=fmt, registry=no_fetch())
            else:
                self._inline = self._inlines()
        return self._tree

    @tree.setter
    def tree(self, value: Any) -> None:
        self._tree = value

    def _inlines(self) -> bool:
        """Whether a checker without a tree explains with its ``$ref``s inlined (exact for a
        2020-12 schema without ``$id``-family keys)."""
        return self.label == "2020-12" and self.hints["no_ids"]

    @property
    def validator(self) -> Any:
        """jsonschema's validator for this schema (``$ref``s inlined where exact): what
        explains a failure when there is no closure tree, and what ``all_errors`` walks."""
        if self._validator is None:
            from schemaops.audit.verdict.subset import inline_refs

            _ = self.tree  # decides ``_inline`` on its first access
            schema, cls, fmt = self._fast_args
            explain = inline_refs(schema) if self._inline else schema
            self._validator = cls(explain, format_checker=fmt, registry=no_fetch())
        return self._validator

    @property
    def fast(self) -> Any:
        """jsonschema-rs's ``is_valid`` (compiled on first access), None when it cannot answer
        exactly (``fast_reason`` says why)."""
        if self._fast is _PENDING:
            rs = compile_rs(self.schema, self.label, self._assert_format, self.scanned)
            self._fast, self.fast_reason, self.scanned = rs.is_valid, rs.reason, rs.facts
            if (
                rs.validator is not None
                and (self.hints["no_ids"] or root_id_only(self.schema))
                and explainable(self.schema)
            ):
                self._rs = rs.validator
            self._rs_ascii = rs.ascii_only
            self.quick = rs.is_valid if not rs.watched else None
            self.numbers_plain = rs.facts is not None and not rs.facts["numbers_matter"]
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
            asked = False
            if not self._prepared:
                # Once per checker: jsonschema's import and this schema's validators are set
                # up outside the watchdog (an import can outlast a pattern's budget on a busy
                # machine), after jsonschema-rs's yes/no under it.
                with self._watch:
                    if fast is not None and _accepts(fast, value):
                        return OUTCOME_OK
                asked = True
                self.prepare()
            with self._watch:
                if fast is not None:
                    if not asked:
                        try:
                            if fast(value):
                                return OUTCOME_OK
                        except WatchdogTimeout:
                            raise
                        except Exception:  # noqa: S110 (jsonschema below is the authority)
                            pass
                elif self.tree is not None and self._tree_accepts(value):
                    return OUTCOME_OK
                return self._slow(value)
        except WatchdogTimeout:
            return self._timed_out()
        except RecursionError:
            return _too_deep()

    def refused(self, value: Any) -> Classification:
        """``check(value)`` for a value ``quick`` (jsonschema-rs) already said no to: the
        audit's lean loop hands its refused outputs here rather than asking jsonschema-rs
        twice. Only for a checker with ``quick`` (its yes/no is not watched, and it answers
        the same each time); the same answer as ``check`` (``tests/test_audit_lean_handoff.py``)."""
        plan = self._root_plan
        if (
            plan is not _PENDING
            and plan is not None
            and not plan[1]
            and plan[2].get(value.__class__) is False
            and self._prepared
        ):
            # the root's type, and no keyword before it: ``_slow``'s first answer, found
            # without the watchdog (no regex runs) from the per-class memo (a third of a
            # platform's refused outputs: issue 36's (b))
            explained = self.explained
            explained[ROOT_TYPE] = explained.get(ROOT_TYPE, 0) + 1
            return self._not_of_root_type(value)
        try:
            if not self._prepared:
                self.prepare()
            with self._watch:
                return self._slow(value)
        except WatchdogTimeout:
            return self._timed_out()
        except RecursionError:
            return _too_deep()

    def _timed_out(self) -> Classification:
        self.timeouts += 1
        return Classification(
            f"{VIOLATION}:pattern",
            None,
            "",
            f"{TIMEOUT_PREFIX} {watchdog_timeout():g}s (a pattern backtracking"
            " catastrophically?); counted as a failure because the output could not be"
            " verified",
        )

    def prepare(self) -> None:
        """Import ``jsonschema`` and build what explains this schema's failures (its closure
        tree and the validators over it): what a checker needs from its first failure on,
        done then outside the watchdog. Public so that it can be done ahead of time, or timed
        apart from the failures (``bench/audit_costs.py``).

        Where jsonschema-rs locates the failures (``_rs``) only the validator that words them
        is built here: the closure tree and its explaining validator (~130 µs a schema on
        JSONSchemaBench, a platform sets up thousands) wait for a failure jsonschema-rs
        cannot locate (``_walkable``), which most such schemas never have."""
        _ = self._fast_args
        if self._rs is None:
            _ = self.tree
        elif self._worder is None:
            schema, cls, fmt = self._fast_args
            self._worder = cls(schema, format_checker=fmt, registry=no_fetch())
        self._prepared = True

    def _walkable(self) -> None:
        """Build what ``jsonschema``'s walk explains with (the closure tree, the validators,
        the modules), if ``prepare`` left it: with the unit of work's watchdog paused, since
        this builds what explains the output rather than judging it, and restarted after."""
        if self._tree is _PENDING:
            with paused():
                _ = self.tree, _late()

    def _tree_accepts(self, value: Any) -> bool:
        """The closure tree's yes (a schema jsonschema-rs cannot answer for); a lazy subtree
        it cannot answer exactly drops the tree (jsonschema alone from then on)."""
        try:
            return bool(self.tree(value))
        except _late()[2]:  # subset.Unsupported
            self.tree = None
            return False

    def _slow(self, value: Any) -> Classification:
        tree = self._tree
        if tree is not _PENDING and tree is not None and tree.broken:
            self.tree = None  # a lazy subtree could not answer: jsonschema alone from now on
        explained = self.explained
        found, missed = self._root_type(value)
        if found is not None:
            explained[ROOT_TYPE] = explained.get(ROOT_TYPE, 0) + 1
            return found
        if self._rs is not None and (not self._rs_ascii or ascii_text(value)) and not missed:
            found = self._rs_explained(value)
            if found is not None:
                explained[RS_LOCATED] = explained.get(RS_LOCATED, 0) + 1
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
        explained[JSONSCHEMA] = explained.get(JSONSCHEMA, 0) + 1
        self._walkable()
        best_match, explain, _ = _late()
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

    def _root_type(self, value: Any) -> tuple[Classification | None, bool]:
        """(``root_type_error(value)``, ``_root_type_missed(value)``), the root's type looked
        up once: a value of the root's one plain type (an object where the root says
        ``object``, most refused outputs) answers both at once."""
        schema = self.schema
        expected = schema.get("type") if type(schema) is dict else None
        if expected.__class__ is str and _PLAIN_TYPES.get(expected) is value.__class__:
            return None, False  # of its type in every draft: no root type error, none missed
        found = self.root_type_error(value)
        return found, found is None and self._root_type_missed(value)

    def root_type_error(self, value: Any) -> Classification | None:
        """``schema_violation:type`` at the root when that is ``best_match``'s answer for a
        value not of the root's ``type``, without walking the value; None when it may not be
        (``jsonschema`` or jsonschema-rs then explain as before).

        Why it is exact: ``best_match`` takes the first error of greatest ``relevance``, and
        the root's type error has the greatest there is (no path, not a weak keyword, the
        instance not of its schema's type: ``jsonschema.exceptions.relevance``, 4.26.0), so it
        is the answer unless a keyword before ``type`` in the root's own order yields an error
        first: ``iter_errors`` runs the root's keywords in that order
        (``applicable_validators``), and each is run here as it would run them, on the root's
        validator, stopping at the first error. A legacy draft with a root ``$ref`` applies only
        the ``$ref``; draft 3 reads ``type`` otherwise: both are left to ``jsonschema``.
        Held to ``best_match`` by ``tests/test_audit_root_type.py``. The message is written
        when read (``WordedLater``): a value that is not of the expected type is mostly only
        counted, and ``type``'s message is its ``repr``."""
        plan = self._root_plan
        if plan is _PENDING:
            plan = self._root_plan = self._plan_root()
        if plan is None:
            return None
        expected, before, of_type = plan
        try:
            shape = value.__class__
            fits = of_type.get(shape)
            if fits is None:
                is_type = self._cls.TYPE_CHECKER.is_type
                if type(expected) is str:
                    fits = is_type(value, expected)
                else:
                    fits = any(is_type(value, t) for t in expected)
                if shape in _CLASS_DECIDES_TYPE:  # the same answer for every such value
                    of_type[shape] = fits
            if fits:
                return None
            worder = self.worder
            for fn, v in before:
                for _ in fn(worder, v, value, self.schema) or ():
                    return None  # an earlier keyword's error comes first: jsonschema's
        except (WatchdogTimeout, RecursionError):
            raise
        except Exception:  # noqa: BLE001 (an unknown type name, a $ref: jsonschema decides)
            return None
        return self._not_of_root_type(value)

    def _not_of_root_type(self, value: Any) -> Classification:
        """``schema_violation:type`` at the root, its message written when read."""
        message = Wording(self.worder, self.schema, "type", value)
        return WordedLater(_ROOT_TYPE_CATEGORY, "", lambda: truncate(message(), MESSAGE_LIMIT))

    def _plan_root(self) -> Any:
        """What ``root_type_error`` reads of the schema, once per checker: (the root's
        ``type``, the keyword functions ``iter_errors`` runs before it with their values, a
        per-class memo of whether a value is of that type), or None where the shortcut does
        not apply (not an object, draft 3, no ``type``, a legacy draft's root ``$ref``)."""
        schema = self.schema
        if type(schema) is not dict or self.label == "draft-03":
            return None
        expected = schema.get("type")
        if expected is None or (self.label in LEGACY_LABELS and "$ref" in schema):
            return None
        if type(expected) is not str and type(expected) is not list:
            return None  # jsonschema's ``type`` reads such a value otherwise: it explains
        keywords = self._cls.VALIDATORS
        before = []
        for keyword, v in schema.items():
            if keyword == "type":
                break
            fn = keywords.get(keyword)
            if fn is not None:
                before.append((fn, v))
        return expected, tuple(before), {}

    @property
    def worder(self) -> Any:
        """``jsonschema``'s validator of the schema as written (no ``$ref`` inlined): what
        words an error found without walking the value with ``jsonschema``."""
        if self._worder is None:
            schema, cls, fmt = self._fast_args
            self._worder = cls(schema, format_checker=fmt, registry=no_fetch())
        return self._worder

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
        try:
            return rs_best_match(self._rs, self.worder, self.schema, value, lazy=True)
        except (WatchdogTimeout, RecursionError):
            raise
        except Exception:  # noqa: BLE001 (anything unexpected: jsonschema answers alone)
            return None

    def all_errors(self, value: Any) -> tuple[Counter, bool]:
        """Keyword -> count of every top-level violation (for ``--all-errors``), and whether
        the count is complete: the watchdog or the recursion limit can stop it part way, and
        the report then says how many outputs were counted only in part."""
        counts: Counter = Counter()
        self.prepare()
        self._walkable()
        try:
            with self._watch:
                for err in self.validator.iter_errors(value):
                    counts[err.validator if err.validator is not None else "false"] += 1
        except (RecursionError, WatchdogTimeout):
            return counts, False
        return counts, True


#: a JSON type name -> the one Python type each draft's type checker takes for it exactly
#: (``jsonschema._types``, 4.26.0: ``is_object``, ``is_array``, ``is_string`` are
#: ``isinstance`` of these; orjson makes no subclass of them)
_PLAIN_TYPES = {"object": dict, "array": list, "string": str}
_ROOT_TYPE_CATEGORY = f"{VIOLATION}:type"
#: the classes of a parsed value for which every draft's type checker answers by the class
#: alone (``jsonschema._types``, 4.26.0: ``isinstance`` tests, ``bool`` kept out of the
#: numbers, ``None`` for null); an ``int`` or a ``float`` is asked each time (``1.0`` is an
#: ``integer`` from draft 4 on)
_CLASS_DECIDES_TYPE = frozenset((dict, list, str, bool, type(None)))


@cache
def _late() -> tuple[Any, Any, type]:
    """``jsonschema``'s ``best_match``, ``explain.explain`` and ``subset.Unsupported``,
    imported at a checker's first failure, not with this module (start-up), and looked up
    once (an import statement on every failure cost microseconds)."""
    from jsonschema.exceptions import best_match

    from schemaops.audit.verdict.explain import explain
    from schemaops.audit.verdict.subset import Unsupported

    return best_match, explain, Unsupported


def _accepts(fast: Any, value: Any) -> bool:
    """jsonschema-rs's yes; anything it raises but the watchdog is "not known valid"
    (jsonschema, the authority, answers then)."""
    try:
        return bool(fast(value))
    except WatchdogTimeout:
        raise
    except Exception:  # noqa: BLE001
        return False


def _too_deep() -> Classification:
    return Classification(
        PARSE, "limit_exceeded", None, f"nesting deeper than {MAX_DEPTH} (validation)"
    )
