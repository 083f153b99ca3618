"""Schema name -> compiled ``SchemaChecker``: the registry is loaded only when a record names
a schema, each schema is compiled once, and a schema with registry problems is refused per
line (an input error naming them) instead of stopping the audit."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from schemaops.audit.verdict.validate import SchemaChecker
from schemaops.errors import InputError

#: a registry up to this size is compiled before ``--jobs`` workers fork (they inherit it)
PRECOMPILE_MAX = 256
#: characters of output text the verdict memo may hold before it starts over (bounded memory)
MEMO_CHARS = 32 << 20
#: from this many compiled checkers on, each new one is moved out of the garbage
#: collector's reach (``_freeze``); a small registry never needs it
FREEZE_AFTER = 64


def _freeze() -> None:
    """``gc.freeze()``: what is alive now is never scanned by the cyclic collector again.

    Why: each compiled checker holds hundreds of container objects (validators, closures)
    that live as long as the audit, and every full collection walked all of them again; on a
    9,500-schema registry that was half of the audit's CPU (issue 15: a quarter of the
    workload, 9.6 s CPU before, 5.4 s after, 4.7 s with the collector off). The price:
    cyclic garbage still pending at a freeze is kept (young garbage is collected between
    compiles, every few hundred allocations). Freezing also keeps forked ``--jobs``
    workers from copying those pages. ``run_audit`` undoes it when it returns
    (``collector_restored``), so a Python caller gets its collector back; a process that had
    frozen objects itself before the audit is left alone (no freeze: unfreezing would undo
    the caller's own)."""
    if _CALLER_FROZE:
        return
    gc.freeze()


#: the young generation's collection threshold during an audit (CPython's is 700
#: allocations): the loop allocates a few containers per line that reference counting frees,
#: so a young collection every ~100 lines found little to free (the collector's cost on the
#: 200,000-line bench file: 6 % of the loop, 2026-12-01). Cyclic garbage (jsonschema's errors
#: on the failure path) still goes at each collection; workers forked inside inherit it.
YOUNG_THRESHOLD = 100_000

#: set by ``collector_restored`` when the process already had a frozen generation
_CALLER_FROZE = False


@contextmanager
def collector_restored() -> Iterator[None]:
    """Run an audit and hand the cyclic collector back as it was: objects the audit froze
    (``_freeze``) go back to the collector when it ends, error or not, and the threshold
    raised to ``YOUNG_THRESHOLD`` for its loop is set back."""
    global _CALLER_FROZE
    outer = _CALLER_FROZE
    _CALLER_FROZE = outer or gc.get_freeze_count() > 0
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], YOUNG_THRESHOLD), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        if not _CALLER_FROZE and gc.get_freeze_count() > 0:
            gc.unfreeze()
        _CALLER_FROZE = outer


class SchemaResolver:
    """Name -> compiled checker, loading the registry only when a record names a schema."""

    def __init__(
        self,
        schema: str | None,
        registry: str | Path,
        assert_format: bool = True,
        timeout: float = 1.0,
        lazy: bool = True,
        cache_dir: str | Path | None = None,
        cache: bool = True,
        tools: str | None = None,
        tools_field: str | None = None,
        tool_choice: Any = None,
    ) -> None:
        # settings kept one by one (the shape of registry/lazy.py's LazyRegistry.__init__)
        self.registry_path = Path(registry)
        self.assert_format = assert_format
        self.timeout = timeout
        # lazy: only the schemas records name are read and checked (issue 15); eager reads
        # the whole registry first (kept as the reference for the differential test).
        self.lazy = lazy
        self.cache_dir = cache_dir
        self.cache = cache
        self._registry: Any = None
        self._problems: dict[str, list[dict]] = {}
        self._cache: dict[str, SchemaChecker | None] = {}
        # (checker, output text) -> [classification, duplicate keys, diagnoses]: repeated outputs (a
        # tool's usual answer, retries) are classified once per process. Deterministic, so
        # exact; a verdict that timed out is never kept. ``SCHEMAOPS_AUDIT_MEMO=0`` turns it
        # off (the benchmark's no-repeat figure and the differential test use that).
        off = os.environ.get("SCHEMAOPS_AUDIT_MEMO", "").strip() == "0"
        self.verdicts: dict[tuple, list] | None = None if off else {}
        self._memo_chars = 0
        #: where the audit loop's asking of the memo stands (``lines.memo_plan``), kept here
        #: so that a worker's slices continue one schedule rather than each probing afresh
        self.memo_schedule: list | None = None
        self.fixed: SchemaChecker | None = None
        # tool calls are judged against a tool set: ``--tools NAME``, a record's tool set
        # field, or the request's own tools (``toolcalls.py``; nothing is read until a
        # record has one)
        from schemaops.audit.verdict.toolcalls import ToolJudges

        self.toolcalls: Any = ToolJudges(
            registry, tools, tools_field, tool_choice, assert_format, timeout
        )
        if schema is not None:
            path = Path(schema)
            if path.is_file() or schema.endswith(".json"):
                self.fixed = self._compile_file(path)
            else:
                self.fixed = self._compile_from_registry(schema)

    @classmethod
    def for_options(cls, opts: Any) -> SchemaResolver:
        """The resolver ``AuditOptions`` ask for (one process, or one ``--jobs`` worker)."""
        return cls(
            opts.schema,
            opts.registry,
            opts.assert_format,
            opts.timeout,
            cache_dir=opts.cache_dir,
            cache=opts.cache,
            tools=getattr(opts, "tools", None),
            tools_field=getattr(opts, "tools_field", None),
            tool_choice=getattr(opts, "tool_choice_mode", None),
        )

    def _compile_file(self, path: Path) -> SchemaChecker:
        """A schema file, with its relative ``$ref``s bundled by the registry loader.

        A file the loader refuses is an input error (exit 2) for the audit, whatever exit
        code ``registry validate`` would give it: 1 is reserved for a failed gate."""
        from schemaops.registry.loader import RegistryError, load_schema_file

        try:
            entry = load_schema_file(path)
        except RegistryError as exc:
            raise InputError(f"--schema {path}: {exc}") from None
        return SchemaChecker(entry.name, entry.bundled(), self.assert_format, self.timeout)

    def _load_registry(self) -> Any:
        if self._registry is None:
            from schemaops.registry import inspect_registry
            from schemaops.registry.lazy import LazyRegistry

            if not self.registry_path.is_dir():
                raise InputError(
                    f"registry folder not found: {self.registry_path} (records name schemas;"
                    " pass --registry DIR, or --schema FILE|NAME for all records)"
                )
            # Not load_registry: one broken file (or a failing sidecar example) must not stop
            # the audit of outputs of the other schemas. A schema whose own file has problems
            # is refused per line instead (see _compile_from_registry).
            if self.lazy:
                from schemaops.audit.verdict.cache import open_facts

                facts = open_facts(self.cache_dir, self.cache)
                self._registry = LazyRegistry(self.registry_path, facts=facts)
                return self._registry
            self._registry, problems = inspect_registry(self.registry_path)
            for p in problems:
                self._problems.setdefault(str(p.get("file")), []).append(p)
        return self._registry

    def _compile_from_registry(self, name: str) -> SchemaChecker:
        if self.lazy:  # checked by the registry on first use; InputError names its problems
            registry = self._load_registry()
            entry = registry.schema(name)
            # a file cached clean also keeps what its keys decide about the checker
            cached = registry.cached_facts(name) or {}
            checker = SchemaChecker(
                name,
                entry.bundled(),
                self.assert_format,
                self.timeout,
                checked=True,
                hints=cached.get("checker"),
                scanned=cached.get("rs"),
            )
            checker.fast  # noqa: B018 (compiles jsonschema-rs's check, from the cached scan)
            fresh = {"checker": checker.hints, "rs": checker.scanned}
            if cached and any(cached.get(k) != v for k, v in fresh.items()):
                registry.remember(name, fresh)
            return checker
        entry = self._load_registry().get(name)  # raises InputError naming known schemas
        own = self._problems.get(str(entry.path)) if entry.path is not None else None
        if own:
            reasons = "; ".join(f"{p.get('pointer') or '/'}: {p.get('reason')}" for p in own[:3])
            raise InputError(f"schema {name!r} has registry problems ({entry.path}): {reasons}")
        return SchemaChecker(name, entry.bundled(), self.assert_format, self.timeout)

    def flush_cache(self) -> None:
        """Write what this process learnt to the on-disk facts cache (``cache.py``): once,
        when a run (or a worker's share of it) ends, as one pack."""
        facts = getattr(self._registry, "facts", None) if self.lazy else None
        if facts is not None:
            facts.flush()

    def registry_names(self) -> list[str]:
        """Every schema name in the registry, or [] when there is none (or ``--schema``)."""
        if self.fixed is not None or not self.registry_path.is_dir():
            return []
        reg = self._load_registry()
        return reg.names() if self.lazy else list(reg.schemas)

    def schema_sizes(self) -> dict[str, int]:
        """Registry name -> bytes of its file ({} when unknown: eager or ``--schema``)."""
        if self.fixed is not None or not self.lazy or not self.registry_path.is_dir():
            return {}
        return self._load_registry().sizes()

    def precompile_names(self) -> list[str]:
        """Names worth compiling before ``--jobs`` workers fork: all of a small registry;
        none of a large one (workers compile what their lines name, on first use)."""
        names = self.registry_names()
        return names if len(names) <= PRECOMPILE_MAX else []

    def remember(self, key: tuple, entry: list) -> None:
        """Keep a verdict entry ``[classification, duplicate keys, diagnoses or None]`` (the
        diagnoses of a record without finish reason or message, filled on first failure);
        start over when the texts held pass ``MEMO_CHARS`` (flat memory)."""
        memo = self.verdicts
        if memo is None:
            return
        self._memo_chars += len(key[1])
        if self._memo_chars > MEMO_CHARS:
            memo.clear()
            self._memo_chars = len(key[1])
        memo[key] = entry

    def routes_by_schema(self) -> bool:
        """Whether ``--jobs`` workers should each own a share of the schemas (``routing.py``)
        rather than a byte range of the file: a registry too large to compile before forking.

        ``SCHEMAOPS_AUDIT_ROUTE=schema|range`` forces one way (benchmarks, differential tests).
        """
        forced = os.environ.get("SCHEMAOPS_AUDIT_ROUTE", "").strip().lower()
        if forced in ("schema", "range"):
            return forced == "schema" and self.fixed is None
        return self.fixed is None and len(self.registry_names()) > PRECOMPILE_MAX

    def has(self, name: str) -> bool:
        """True when the registry has ``name`` (used for tool-call names)."""
        try:
            reg = self._load_registry()
            return name in (reg if self.lazy else reg.schemas)
        except InputError:
            return False

    def get(self, name: str) -> SchemaChecker:
        """The checker for a registry name; ``InputError`` if unknown (a per-line error)."""
        checker = self._cache.get(name)
        if checker is None:
            judge = self.toolcalls
            if judge is not None and judge.owns(name):
                return judge.checker(name)
            checker = self._compile_from_registry(name)
            self._cache[name] = checker
            if len(self._cache) >= FREEZE_AFTER:
                _freeze()
        return checker
