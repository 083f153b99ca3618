"""Load a registry folder (or one schema) and report every problem at once.

Checks, in order, for every file: readable, JSON, a schema object, a known draft, valid
against its draft's metaschema, every ``$ref`` resolvable offline and no ref cycle that
cannot terminate, sidecar examples behave. Across files: duplicate names, duplicate
``$id``s and duplicate canonical text (two files that are byte-for-byte the same wire
string would warm the same cache entry twice under two names).

Exit codes: problems that mean the input could not be read (missing or empty folder,
unreadable file, not JSON) exit 2; problems with readable content exit 1.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from schemaops.errors import InputError, SchemaopsError
from schemaops.registry import jsontext, refcheck, refs
from schemaops.registry.bundle import bundle
from schemaops.registry.defaults import DEFAULT_REGISTRY, EXAMPLE_TIMEOUT
from schemaops.registry.documents import (
    SIDECAR_SUFFIX,
    STOP_KINDS,
    Doc,
    alias_target,
    exit_code_for,
    format_problem,
    is_library,
    outside_reason,
    parse_document,
    printable,
    problem,
    ref_free,
    schema_version,
)
from schemaops.registry.drafts import UnknownDraft, draft_label, draft_uri
from schemaops.registry.examples import check_examples, read_sidecar, sidecar_path
from schemaops.registry.listing import json_files
from schemaops.registry.model import Schema
from schemaops.registry.names import name_problem
from schemaops.registry.refs import file_uri, inline_uri

#: a file ``NAME.tools.json`` is the tool set ``NAME`` (``toolsets.py``), never a schema
TOOLS_SUFFIX = ".tools.json"


class RegistryError(SchemaopsError):
    """The registry has problems; ``problems`` lists each (file, pointer, kind, reason)."""

    exit_code = 1

    def __init__(self, problems: list[dict], exit_code: int | None = None) -> None:
        self.problems = problems
        self.exit_code = exit_code if exit_code is not None else (exit_code_for(problems) or 1)
        lines = "\n  ".join(format_problem(p) for p in problems)
        super().__init__(f"{len(problems)} problem(s) in registry:\n  {lines}")


#: names listed in an "unknown schema" message (a platform registry has thousands)
KNOWN_SHOWN = 20


def unknown_schema_message(name: str, root: Path, names: Any) -> str:
    """``unknown schema 'x' in DIR (did you mean 'y'?); known: a, b, ...`` with at most
    ``KNOWN_SHOWN`` names: the one a typo most likely meant first, since in a platform's
    registry it may not be among those shown. ``names``: the known names, as ``known_names``
    sorted them (a registry keeps that: an audit asks once per line naming an unknown schema,
    and sorting 9,435 names each time cost ~0.4 ms a line) or any iterable, sorted here."""
    known = (names if isinstance(names, SortedNames) else known_names(names)).names
    shown = ", ".join(known[:KNOWN_SHOWN]) or "(none)"
    if len(known) > KNOWN_SHOWN:
        shown += f" and {len(known) - KNOWN_SHOWN} more"
    near = closest_name(name, known) if isinstance(name, str) else None
    hint = f" (did you mean {near!r}?)" if near is not None else ""
    return f"unknown schema {name!r} in {root}{hint}; known: {shown}"


@dataclass(frozen=True)
class SortedNames:
    """Schema names in sorted order (made by ``known_names``), so a message need not sort
    them again; a plain tuple is not taken for sorted."""

    names: tuple[str, ...]


def known_names(names: Any) -> SortedNames:
    """``names`` sorted, as ``unknown_schema_message`` takes them."""
    return SortedNames(tuple(sorted(names)))


#: names longer than this are not indexed or looked up for a suggestion (bounds the index)
SUGGEST_MAX_LEN = 64


def closest_name(name: str, known: tuple[str, ...]) -> str | None:
    """The name in ``known`` (sorted) that ``name`` most likely misspells, or None: one edit
    away (a character missing, added, replaced, or two swapped: ``creat_ticket`` ->
    ``create_ticket``, ``issue-refund`` -> ``issue_refund``) and difflib's ratio at least 0.8.

    Why an index of one-character deletions rather than ``difflib.get_close_matches`` over
    every name: an audit asks once per line that names an unknown schema, and a log whose
    schema field holds something else (a request id) names a different one on every line;
    difflib over a 9,435-name registry cost 31 ms a name, this costs a few dictionary
    lookups (the index is built once per registry)."""
    if len(name) > SUGGEST_MAX_LEN or not known:
        return None
    index = _deletions_index(known)
    found = {k for v in _deletions(name) for k in index.get(v, ())}
    best: tuple[float, str] | None = None
    for cand in sorted(found):
        ratio = difflib.SequenceMatcher(None, name, cand).ratio()
        if ratio >= 0.8 and (best is None or ratio > best[0]):
            best = (ratio, cand)
    return best[1] if best else None


def _deletions(word: str) -> list[str]:
    """``word`` and each way of deleting one of its characters."""
    return [word] + [word[:i] + word[i + 1 :] for i in range(len(word))]


@lru_cache(maxsize=4)
def _deletions_index(known: tuple[str, ...]) -> dict[str, list[str]]:
    """Each name and each of its one-character deletions -> every name that has it (so two
    names sharing a deletion both stay candidates and the ratio picks between them)."""
    index: dict[str, list[str]] = {}
    for k in known:
        if len(k) <= SUGGEST_MAX_LEN:
            for v in set(_deletions(k)):
                index.setdefault(v, []).append(k)
    return index


@dataclass
class Registry:
    """Loaded schemas by name (in file path order, as loaded). ``get`` raises InputError for an
    unknown name."""

    root: Path
    schemas: dict[str, Schema] = field(default_factory=dict)
    #: files marked ``"x-schemaops-library": true``: shared ``$defs`` that other files
    #: ``$ref``; checked like schemas but never served, warmed or gated on their own.
    libraries: dict[str, Schema] = field(default_factory=dict)
    #: findings that do not stop a schema from being used (problem records, same shape),
    #: e.g. ``duplicate_content``: two names for one wire string. Never change exit codes.
    warnings: list[dict] = field(default_factory=list)
    #: ``NAME.tools.json`` files: OpenAI-style tools arrays (``toolsets.py``), by name
    toolsets: dict[str, Any] = field(default_factory=dict)
    _sorted: SortedNames | None = field(default=None, repr=False, compare=False)
    _sorted_of: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def get(self, name: str, toolsets: bool = False) -> Schema:
        """The schema ``name``, else ``InputError`` naming the known ones. ``toolsets``: the
        caller takes a tool set's name too (``registry show/export``, ``lower --target``), so
        the message offers tool sets as well, and the typo's nearest name among both."""
        try:
            return self.schemas[name]
        except KeyError:
            if not toolsets or not self.toolsets:
                raise InputError(unknown_schema_message(name, self.root, self._known())) from None
            sets = sorted(self.toolsets)
            msg = unknown_schema_message(name, self.root, known_names([*self.schemas, *sets]))
            shown = ", ".join(sets[:KNOWN_SHOWN]) + (" ..." if len(sets) > KNOWN_SHOWN else "")
            msg = msg.replace("unknown schema ", "unknown schema or tool set ", 1)
            raise InputError(f"{msg} (tool sets: {shown})") from None

    def _known(self) -> SortedNames:
        """The names sorted, sorted again whenever ``schemas`` no longer holds exactly the
        names they were made of (a caller that adds, drops or renames a schema after load
        is told of what is there now; a length check missed a rename). Asked only for an
        unknown name, whose suggestion reads every name anyway."""
        if self._sorted is None or self.schemas.keys() != self._sorted_of:
            self._sorted = known_names(self.schemas)
            self._sorted_of = frozenset(self._sorted.names)
        return self._sorted

    def toolset(self, name: str) -> Any:
        """The tool set ``name`` (a ``toolsets.ToolSet``); InputError if unknown."""
        try:
            return self.toolsets[name]
        except KeyError:
            known = ", ".join(sorted(self.toolsets)) or "(none)"
            raise InputError(f"unknown tool set {name!r} in {self.root}; known: {known}") from None

    def __iter__(self) -> Iterator[Schema]:
        return iter(self.schemas.values())

    def __len__(self) -> int:
        return len(self.schemas)

    def __contains__(self, name: object) -> bool:
        return name in self.schemas


def check_documents(
    docs: list[Doc],
    problems: list[dict],
    extra: tuple = (),
    warnings: list[dict] | None = None,
    timeout: float = EXAMPLE_TIMEOUT,
    examples: bool = True,
) -> dict[str, Schema]:
    """Ref checks, duplicates, bundling and examples over parsed docs.

    Returns every loaded schema by name, libraries included (the caller splits them off).
    ``extra`` entries are only ref targets (a single file's neighbours), not checked.
    Duplicate content goes to ``warnings``: one wire string under two names is wasteful
    (the cache entry is warmed twice) but each name still works, so nothing is refused.
    """
    warnings = [] if warnings is None else warnings
    good = [d for d in docs if d.ok]
    entries = [refs.Entry(d.base, d.data, d.draft) for d in good]
    nodes = None
    registry: Any = None
    lookup: refs.Lookup | None = None
    clashes: list = []
    if not extra and all(ref_free(d.data) for d in good):
        # nothing to resolve and no $id to clash: check_refs would find nothing (issue 15:
        # building the ref registry was the largest part of a schema's first use)
        pass
    else:
        # one document whose refs all point into itself (the lazy registry's usual case): no
        # ref registry needed (``refs.own_pointer_lookup``), its subschemas walked once
        if not extra and len(entries) == 1:
            nodes = refs.pointer_refs_only(entries[0])
        if nodes is not None:
            lookup = refs.own_pointer_lookup(entries[0])
        else:
            registry, clashes = refs.build(_unaliased(entries, good) + list(extra))
            lookup = refs.registry_lookup(registry)
    by_entry = {id(e): d for e, d in zip(entries, good, strict=True)}
    for d in docs:  # each document's own warnings (unknown keywords), in file order
        warnings.extend(d.warnings)
    for entry, uri in clashes:
        d = by_entry.get(id(entry))
        if d is None:  # a clash between two ref targets (``extra``): not this file's problem
            continue
        problems.append(
            problem(d.label, "/$id", "duplicate_id", f"$id {uri!r} is used by another file")
        )
        d.clean = False
    schemas: dict[str, Schema] = {}
    seen_hash: dict[str, str] = {}
    for entry in entries:
        d = by_entry[id(entry)]
        try:
            s = _one(d, entry, lookup, registry, problems, timeout if examples else None, nodes)
        except RecursionError:  # a shape the depth limit did not foresee: this file only
            problems.append(problem(d.label, "", "too_deep", "schema nested too deeply to check"))
            continue
        name = s.name
        if name in schemas:
            other = schemas[name].path or "<text>"
            problems.append(
                problem(
                    d.label, "", "duplicate_name", f"schema name {name!r} is also used by {other}"
                )
            )
            continue
        if d.alias_of is not None:
            reason = (
                f"{Path(d.label).name} is a symlink to {d.alias_of.as_posix()}: an alias, the"
                f" same schema under a second name {name!r} (both work; the server caches one"
                " grammar for both)"
            )
            warnings.append(problem(d.label, "", "symlink_alias", reason))
        elif len(entries) > 1:  # one document (a lazy load) has nothing to be a duplicate of
            digest = s.hash  # a property: serialises and hashes the schema each time
            if digest in seen_hash:
                reason = (
                    f"same wire string as {seen_hash[digest]} (hash {digest[:16]}): one wire "
                    "string, two names (both work; the server caches one grammar for both)"
                )
                warnings.append(problem(d.label, "", "duplicate_content", reason))
            seen_hash.setdefault(digest, d.label)
        schemas[name] = s
    return schemas


def _unaliased(entries: list, docs: list[Doc]) -> list:
    """The ref entries to build the ref registry from: an alias is its target's file (the same
    base URI, the same ``$id``), so it is left out when its target is in, never a clash."""
    bases = {e.base for e, d in zip(entries, docs, strict=True) if d.alias_of is None}
    out = []
    for e, d in zip(entries, docs, strict=True):
        if d.alias_of is None or e.base not in bases:
            out.append(e)
            bases.add(e.base)
    return out


def _one(
    d: Doc,
    entry: Any,
    lookup: refs.Lookup | None,
    registry: Any,
    problems: list[dict],
    timeout: float | None = EXAMPLE_TIMEOUT,
    nodes: list | None = None,
) -> Schema:
    """Check one document's refs, build its Schema (bundled when needed), attach examples.

    ``lookup`` None: nothing to resolve. ``registry``: the ref registry, for bundling (None
    when every ref points into the document itself: then nothing is bundled). ``timeout``
    None: sidecar examples are not read at all (``registry diff``). ``nodes``: the
    document's subschemas, when the caller walked them already.
    """
    try:
        if lookup is None:
            report = refcheck.RefReport([], False)
        else:
            report = refcheck.check_refs(entry, lookup, nodes, targets=d.clean)
    except Exception as exc:  # a malformed $id/$ref: explained by metaschema problems
        found = [] if not d.clean else [("", "ref_unresolvable", f"cannot check $refs: {exc}")]
        report = refcheck.RefReport(found, False)
    for ptr, kind, reason in report.problems:
        problems.append(problem(d.label, ptr, kind, reason))
        d.clean = False
    name = d.data.get("x-schemaops-name", d.name) if isinstance(d.data, dict) else d.name
    name = name if isinstance(name, str) and name and d.alias_of is None else d.name
    bad = name_problem(name) if name != d.name else None
    if bad:  # lower --out and check --fix write OUT/<name>.json (registry/names.py)
        problems.append(problem(d.label, "/x-schemaops-name", "bad_name", f"{name!r}: {bad}"))
        d.clean, name = False, d.name
    s = Schema(
        name=name,
        schema=d.data,
        path=d.path,
        version=schema_version(d.data),
        draft=draft_uri(d.draft),
    )
    if report.external:
        # Bundled even when the file has problems: what it would send is still what a diff
        # or a hash must compare (a ref that does not resolve is left as it is).
        try:
            s.self_contained = bundle(d.data, d.base, d.draft, registry)
        except Exception as exc:  # a malformed $ref/$id, already reported when not clean
            if d.clean:
                problems.append(problem(d.label, "", "ref_unresolvable", f"cannot bundle: {exc}"))
                d.clean = False
    if d.path is not None and timeout is not None:
        _attach_examples(s, d, problems, timeout)
    return s


def _attach_examples(
    s: Schema, d: Doc, problems: list[dict], timeout: float = EXAMPLE_TIMEOUT
) -> None:
    side = sidecar_path(d.path) if d.path else None
    if side is None or not side.exists():
        return
    root = d.root if d.root is not None else d.path.parent
    outside = outside_reason(side, root)
    if outside:
        problems.append(problem(side, "", "symlink_outside", outside))
        return
    valid, invalid, side_problems = read_sidecar(side)
    s.valid, s.invalid = valid, invalid
    if not side_problems and d.clean:
        try:
            side_problems = check_examples(s.validator(), valid, invalid, timeout)
        except RecursionError:
            side_problems = [("", "too_deep", "examples nested too deeply to check")]
        except Exception as exc:  # e.g. a pattern Python's re cannot compile at validation
            side_problems = [("", "example_error", f"cannot check examples: {exc}")]
    for ptr, kind, reason in side_problems:
        problems.append(problem(side, ptr, kind, reason))


def inspect_registry(
    path: str | Path = DEFAULT_REGISTRY, timeout: float = EXAMPLE_TIMEOUT, examples: bool = True
) -> tuple[Registry, list[dict]]:
    """Load what can be loaded and return it with every problem found (never raises).

    For commands that report problems (``validate``) rather than stop at them. Warnings
    (which never make a schema unusable) are on ``Registry.warnings``. ``timeout`` bounds
    each schema's sidecar example check (seconds; 0 = no bound; see ``check_examples``);
    ``examples=False`` skips sidecars altogether (a diff compares schemas, not examples).
    """
    root = Path(path)
    reg = Registry(root=root)
    if not root.exists():
        return reg, [problem(root, "", "missing_folder", f"registry folder not found: {root}")]
    if not root.is_dir():
        return reg, [
            problem(
                root,
                "",
                "missing_folder",
                f"not a folder: {root} (a registry is a folder of NAME.json files)",
            )
        ]
    files = json_files(root)
    schema_files = [f for f in files if not f.name.endswith(SIDECAR_SUFFIX)]
    # NAME.tools.json is a tool set (``toolsets.py``), never a schema named NAME.tools
    tool_files = [f for f in schema_files if f.name.endswith(TOOLS_SUFFIX)]
    schema_files = [f for f in schema_files if not f.name.endswith(TOOLS_SUFFIX)]
    problems: list[dict] = []
    if not schema_files and not tool_files:
        msg = f"registry folder {root} has no schema files (expected NAME.json)"
        return reg, [problem(root, "", "empty_folder", msg)]
    stems = {f.with_suffix("") for f in schema_files}
    for f in files if examples else ():
        if (
            f.name.endswith(SIDECAR_SUFFIX)
            and f.with_name(f.name[: -len(SIDECAR_SUFFIX)]) not in stems
        ):
            problems.append(
                problem(
                    f,
                    "",
                    "orphan_sidecar",
                    f"examples file without a schema {f.name[: -len(SIDECAR_SUFFIX)]}.json",
                )
            )
    docs = []
    for f in schema_files:
        doc = Doc(name=f.stem, label=str(f), path=f, base=file_uri(f), root=root)
        outside = outside_reason(f, root)
        if outside:
            problems.append(problem(f, "", "symlink_outside", outside))
            continue
        doc.alias_of = alias_target(f, root)
        if printable(f.name) != f.name:
            reason = "file name is not valid UTF-8: it cannot name a schema (rename the file)"
            problems.append(problem(f, "", "bad_unicode", reason))
            continue
        try:
            text = jsontext.read_text(f)
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(problem(f, "", "unreadable", f"cannot read: {exc}"))
            continue
        parse_document(doc, text, problems)
        docs.append(doc)
    for name, s in check_documents(docs, problems, (), reg.warnings, timeout, examples).items():
        (reg.libraries if is_library(s.schema) else reg.schemas)[name] = s
    if tool_files:
        from schemaops.registry.toolsets import load_toolsets  # toolsets imports this module

        reg.toolsets = load_toolsets(tool_files, root, docs, problems, reg.warnings)
    return reg, problems


def load_registry(
    path: str | Path = DEFAULT_REGISTRY, timeout: float = EXAMPLE_TIMEOUT
) -> Registry:
    """Load and check a registry folder; raise RegistryError listing every problem.

    Warnings (``Registry.warnings``) do not raise: the registry is usable as it is.
    """
    reg, problems = inspect_registry(path, timeout)
    if problems:
        raise RegistryError(problems)
    return reg


def _neighbours(path: Path, text: str) -> tuple:
    """Sibling schema files as ref targets, when the file refers to other files at all.

    So ``load_schema_file("schemas/get_order.json")`` resolves ``common.json#/...`` as the
    registry does, and ``bundled()`` is self-contained.
    """
    if not re.search(r'"\$ref"\s*:\s*"(?!#)', text):
        return ()
    out = []
    for f in sorted(path.parent.glob("*.json")):
        if f.name.endswith(SIDECAR_SUFFIX) or f.resolve() == path.resolve():
            continue
        if outside_reason(f, path.parent):  # as in a registry: never a ref target
            continue
        try:
            data, found = jsontext.parse(jsontext.read_text(f))
            label = draft_label(data.get("$schema") if isinstance(data, dict) else None)
        except (OSError, UnicodeDecodeError, UnknownDraft):
            continue
        # a broken neighbour is not this file's problem: a ref to it is reported unresolved
        if isinstance(data, (dict, bool)) and not any(k in STOP_KINDS for _, k, _ in found):
            out.append(refs.Entry(refs.file_uri(f), data, label))
    return tuple(out)


def _single(
    doc: Doc, text: str | None, extra: tuple = (), examples: bool = True
) -> tuple[Schema | None, list[dict]]:
    problems: list[dict] = []
    parse_document(doc, text, problems)
    if not doc.ok:
        return None, problems
    schemas = check_documents([doc], problems, extra, examples=examples)
    return next(iter(schemas.values()), None), problems


def inspect_schema_file(path: str | Path) -> tuple[Schema | None, list[dict]]:
    """One schema file as ``load_schema_file`` reads it (refs to siblings bundled), but
    returning problems instead of raising and without its sidecar: for ``registry diff``.

    A file that cannot be read is a problem of kind ``unreadable`` (``None`` schema).
    """
    f = Path(path)
    try:
        text = jsontext.read_text(f)
    except (OSError, UnicodeDecodeError) as exc:
        return None, [problem(f, "", "unreadable", f"cannot read: {exc}")]
    doc = Doc(name=f.stem, label=str(f), path=f, base=file_uri(f))
    return _single(doc, text, _neighbours(f, text), examples=False)


def load_schema_file(path: str | Path) -> Schema:
    """Load one schema file (with its sidecar examples, if any); raise on any problem.

    ``$ref``s to other files resolve against the ``*.json`` files in the same folder (as in
    a registry). A missing file raises InputError (exit 2); problems raise RegistryError.
    """
    f = Path(path)
    try:
        text = jsontext.read_text(f)
    except FileNotFoundError:
        raise InputError(f"schema file not found: {f}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RegistryError([problem(f, "", "unreadable", f"cannot read: {exc}")]) from None
    doc = Doc(name=f.stem, label=str(f), path=f, base=file_uri(f))
    schema, problems = _single(doc, text, _neighbours(f, text))
    if problems or schema is None:
        raise RegistryError(problems)
    return schema


def load_schema_text(text: str, name: str = "schema") -> Schema:
    """Load one schema from JSON text; raise RegistryError on any problem."""
    schema, problems = _single(
        Doc(name=name, label=f"<{name}>", path=None, base=inline_uri(name)), text
    )
    if problems or schema is None:
        raise RegistryError(problems)
    return schema


def validate_schema_object(schema: Any, name: str = "schema") -> list[dict]:
    """Every problem of one parsed schema object, as problem records; never raises.

    Used over corpora (JSONSchemaBench): each schema either has no problems or clear ones.
    """
    doc = Doc(name=name, label=f"<{name}>", path=None, base=inline_uri(name), data=schema)
    try:
        return _single(doc, None)[1]
    except RecursionError:
        return [problem(doc.label, "", "too_deep", "schema nested too deeply to check")]
