"""A registry folder read one schema at a time, on first use (what ``audit`` needs).

Why: ``inspect_registry`` checks every file (metaschema, refs, cycles, sidecar examples), a
minute for 10,000 schemas, and an audit of one line would wait for all of it. Here the
index is a cheap scan (each file's name, and from a fast parse its ``x-schemaops-name``,
library flag and root ``$id``); a schema named by a record gets the same checks
``inspect_registry`` gives it, with the files it refers to (found through the index, or all
files when a ref names something the index does not know) as ref targets. Checking the whole
registry stays ``registry validate``.

Kept equal to the eager load: names (first file in path order wins), the problem records of
the schema's own file (``duplicate_id`` from the index), the bundled form. Different on
purpose: a file the eager load cannot use at all (not JSON, unknown draft, a symlink out of
the folder) is reported by its problem when a record names it, instead of "unknown schema".
"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote_from_bytes, urldefrag, urljoin

import orjson

from schemaops.errors import InputError
from schemaops.registry import jsontext, refs
from schemaops.registry.documents import (
    SIDECAR_SUFFIX,
    STOP_KINDS,
    Doc,
    alias_target,
    is_library,
    outside_reason,
    parse_document,
    printable,
    problem,
    schema_version,
)
from schemaops.registry.drafts import UnknownDraft, draft_label, draft_uri
from schemaops.registry.facts import FactsStore
from schemaops.registry.listing import json_files
from schemaops.registry.loader import (
    EXAMPLE_TIMEOUT,
    TOOLS_SUFFIX,
    SortedNames,
    check_documents,
    known_names,
    unknown_schema_message,
)
from schemaops.registry.model import Schema

#: a ``$ref``/``$dynamicRef``/``$recursiveRef`` value that leaves the document
_OUTWARD = re.compile(rb'"\$(?:ref|dynamicRef|recursiveRef)"\s*:\s*"(?!#)')


#: a run of 19 digits: an integer orjson would read as a float (``_from_facts``); found as
#: 19 zeros once every digit is a zero (``bytes.translate`` and ``in`` run at memory speed:
#: 12x faster than ``re`` with ``[0-9]{19}`` over 9,525 corpus schemas, 0.37 s -> 0.03 s)
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 19


#: unknown names whose message is kept (bounds ``LazyRegistry._unknown``)
UNKNOWN_KEPT = 1024


def _long_digits(raw: bytes) -> bool:
    return _LONG_DIGITS in raw.translate(_DIGITS_AS_ZERO)


@dataclass
class _File:
    """One schema file as the index sees it (nothing checked yet)."""

    path: Path
    uri: str
    name: str
    library: bool = False
    id_uri: str | None = None  # root $id joined with the file URI, as refs.build keys it
    refused: dict | None = None  # a problem that keeps the file out of the registry
    alias_of: Path | None = None  # a symlink to another registry file (``alias_target``)
    size: int = 0  # bytes of a plain file (0 for a symlink): a cost estimate for --jobs


class LazyRegistry:
    """Name -> checked ``Schema``, each loaded and checked on first request.

    ``schema(name)`` raises ``InputError`` for an unknown name and for a schema whose own
    file has problems (the message names them), exactly as the audit refuses it per line.
    ``facts`` (optional, a ``facts.FactsStore``: ``audit.cache.SchemaFacts``) remembers files found
    clean, so their checks are skipped on the next run.
    """

    def __init__(
        self,
        root: str | Path,
        timeout: float = EXAMPLE_TIMEOUT,
        examples: bool = True,
        facts: FactsStore | None = None,
    ) -> None:
        self.root = Path(root)
        self.timeout = timeout
        self.examples = examples
        self.facts = facts
        self._by_name: dict[str, _File] | None = None
        self._known: SortedNames | None = None  # the index's names, sorted (messages)
        #: unknown name -> its message: a log naming one on every line asks for its nearest
        #: known name once (``closest_name`` over 9,435 names cost 1.6 ms a line)
        self._unknown: dict[str, str] = {}
        self._by_uri: dict[str, _File] = {}
        self._id_owner: dict[str, _File] = {}
        self._entries: dict[Path, refs.Entry | None] = {}
        self._all: tuple | None = None
        self._loaded: dict[str, tuple[Schema | None, list[dict]]] = {}
        #: sidecar files the index listed (a schema without one needs no failed ``open``)
        self._sidecars: set[str] = set()
        #: name -> (facts cache key, facts) of a file loaded clean (``remember``)
        self._keys: dict[str, tuple[str, dict]] = {}

    # --- the index ------------------------------------------------------------------

    def _index(self) -> dict[str, _File]:
        if self._by_name is not None:
            return self._by_name
        root = self.root
        files = []
        for f in json_files(root):  # sorted by parts, hidden ones left out
            if f.name.endswith(SIDECAR_SUFFIX):
                self._sidecars.add(str(f))
            elif f.name.endswith(TOOLS_SUFFIX):  # a tool set (toolsets.py), not a schema
                continue
            else:
                files.append(f)
        by_name: dict[str, _File] = {}
        claimed: dict[str, _File] = {}
        real_root = root.resolve()
        root_uri = real_root.as_uri() if real_root.parent != real_root else ""  # not "/"
        now_ns = time.time_ns()
        for f in files:
            entry = self._scan(f, real_root, root_uri, now_ns)
            if entry.refused is None and entry.alias_of is None:  # an alias is its target
                self._by_uri.setdefault(entry.uri, entry)
                if entry.id_uri is not None:
                    self._id_owner.setdefault(entry.id_uri, entry)
                    self._by_uri.setdefault(urldefrag(entry.id_uri)[0], entry)
            # names as the eager load gives them: the first file in path order, a library
            # included (never served: its name is unknown to records, and a later schema file
            # of that name is a ``duplicate_name``); a library refused at the index claims none
            if entry.library and entry.refused is not None:
                continue
            first = claimed.setdefault(entry.name, entry)
            if entry.library:
                continue
            if first is entry:
                by_name[entry.name] = entry
        self._by_name = by_name
        return by_name

    def _scan(self, f: Path, real_root: Path, root_uri: str = "", now_ns: int = 0) -> _File:
        try:
            st: os.stat_result | None = os.lstat(f)
        except OSError:
            st = None  # gone since the listing: read (and reported) when a record names it
        link = st is not None and stat.S_ISLNK(st.st_mode)
        if f.parent == self.root and not link:
            # rglob does not enter symlinked folders, so only the file itself could lead
            # out: a plain file at the top resolves to real_root/name (no path walk for
            # each of 10,000 files); its URI is the root's plus the quoted name, as
            # ``Path.as_uri`` writes it
            outside = ""
            if root_uri:
                uri = f"{root_uri}/{quote_from_bytes(os.fsencode(f.name))}"
            else:
                uri = (real_root / f.name).as_uri()
        else:
            outside = outside_reason(f, self.root)
            uri = f.resolve().as_uri() if not outside else ""
        entry = _File(path=f, uri=uri, name=f.stem)
        if st is not None and not link:
            entry.size = st.st_size
        if outside:
            entry.refused = problem(f, "", "symlink_outside", outside)
            return entry
        if printable(f.name) != f.name:
            reason = "file name is not valid UTF-8: it cannot name a schema (rename the file)"
            entry.refused = problem(f, "", "bad_unicode", reason)
            return entry
        if link:
            entry.alias_of = alias_target(f, self.root)
        # a plain file unchanged since a run indexed it: what that run read (``cache.py``)
        key = None
        if self.facts is not None and st is not None and stat.S_ISREG(st.st_mode):
            key = self.facts.scan_key(str(f), st)
            found = self.facts.scan_get(key)
            if found is not None:
                return _marked(entry, found, uri)
        found = _markers(f)
        if found is None:
            return entry  # unreadable or not JSON: read strictly (and reported) when named
        if key is not None:
            self.facts.scan_put(key, st, found, now_ns)
        return _marked(entry, found, uri)

    def sizes(self) -> dict[str, int]:
        """Servable name -> bytes of its file (what ``--jobs`` balances its workers by)."""
        return {name: f.size for name, f in self._index().items()}

    def names(self) -> list[str]:
        """Every servable schema name (libraries excluded), in name order."""
        return sorted(self._index())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._index()

    def __len__(self) -> int:
        return len(self._index())

    # --- one schema -----------------------------------------------------------------

    def schema(self, name: str) -> Schema:
        """The checked schema, or ``InputError`` (unknown name, or its file has problems)."""
        f = self._index().get(name)
        if f is None:
            said = self._unknown.get(name)
            if said is None:
                if self._known is None:  # the index is built once, so its sorted names too
                    self._known = known_names(self._index())
                said = unknown_schema_message(name, self.root, self._known)
                if len(self._unknown) < UNKNOWN_KEPT:
                    self._unknown[name] = said
            raise InputError(said)
        s, own = self.load(name)
        if own or s is None:
            reasons = "; ".join(f"{p.get('pointer') or '/'}: {p.get('reason')}" for p in own[:3])
            raise InputError(f"schema {name!r} has registry problems ({f.path}): {reasons}")
        return s

    def load(self, name: str) -> tuple[Schema | None, list[dict]]:
        """(schema, problems of its own file); a sidecar's problems never refuse a schema."""
        if name not in self._loaded:
            self._loaded[name] = self._load(self._index()[name])
        return self._loaded[name]

    def _load(self, f: _File) -> tuple[Schema | None, list[dict]]:
        if f.refused is not None:
            return None, [f.refused]
        try:
            raw = jsontext.read_bytes(f.path)
            text = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return None, [problem(f.path, "", "unreadable", f"cannot read: {exc}")]
        outward = _OUTWARD.search(raw) is not None
        clash = f.id_uri is not None and self._id_owner.get(f.id_uri) is not f
        key = None
        # the index listed every ``*.json`` beside this file: without a sidecar among them
        # there are no examples to read (no ``stat`` of a missing file per schema)
        side = str(f.path)[: -len(".json")] + SIDECAR_SUFFIX in self._sidecars
        if self.facts is not None and not outward and not clash:
            key = self.facts.key(raw, f.path, self.examples, self.timeout, sidecar=side)
            cached = self.facts.get(key)
            if cached is not None:
                known = self._from_facts(f, raw, text)
                if known is not None:
                    self._keys[f.name] = (key, cached)
                    return known, []
        doc = Doc(
            name=f.path.stem,
            label=str(f.path),
            path=f.path,
            base=f.uri,
            root=self.root,
            alias_of=f.alias_of,
        )
        problems: list[dict] = []
        parse_document(doc, text, problems)
        if not doc.ok:
            return None, problems
        if clash:
            reason = f"$id {f.id_uri!r} is used by another file"
            problems.append(problem(doc.label, "/$id", "duplicate_id", reason))
            doc.clean = False
        extra = self._targets(doc) if outward else ()
        try:
            found = check_documents(
                [doc], problems, extra, [], self.timeout, self.examples and side
            )
        except RecursionError:
            problems.append(problem(doc.label, "", "too_deep", "schema nested too deeply"))
            found = {}
        s = next(iter(found.values()), None)
        label = printable(str(f.path))
        own = [p for p in problems if p["file"] == label]
        if key is not None and s is not None and not problems:
            self.facts.put(key, {"clean": True})
            self._keys[f.name] = (key, {"clean": True})
        return s, own

    def cached_facts(self, name: str) -> dict | None:
        """What the facts cache holds for the file ``name`` was loaded from (None when that
        file is not cached clean): the audit keeps its checker's own answers there too."""
        found = self._keys.get(name)
        return found[1] if found is not None else None

    def remember(self, name: str, extra: dict) -> None:
        """Add ``extra`` to the cached facts of ``name``'s file (written with the next flush);
        only for a file cached clean, whose entry is keyed by its bytes."""
        found = self._keys.get(name)
        if found is None or self.facts is None:
            return
        key, facts = found
        merged = {**facts, **extra}
        self._keys[name] = (key, merged)
        self.facts.put(key, merged)

    def _from_facts(self, f: _File, raw: bytes, text: str) -> Schema | None:
        """A file found clean before (same bytes and sidecar, same versions): parsed, not
        re-checked. Its name, version and draft are read from it as the loader reads them."""
        try:
            # orjson is faster, but reads an integer beyond 64 bits as a float (a different
            # bound): such a file goes to the stdlib, as does anything orjson refuses
            if not _long_digits(raw):
                try:
                    data = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    data = json.loads(text)
            else:
                data = json.loads(text)
            draft = draft_uri(draft_label(data.get("$schema") if isinstance(data, dict) else None))
        except (ValueError, RecursionError, UnknownDraft):
            return None  # the entry cannot be right for this file: check it afresh
        if not isinstance(data, (dict, bool)):
            return None
        return Schema(
            name=f.name,
            schema=data,
            path=f.path,
            version=schema_version(data),
            draft=draft,
        )

    # --- ref targets ----------------------------------------------------------------

    def _entry(self, f: _File) -> refs.Entry | None:
        """A file as a ref target, when the eager load would have one (parsed, a schema of
        a known draft)."""
        if f.path not in self._entries:
            entry = None
            try:
                data, found = jsontext.parse(jsontext.read_text(f.path))
                if isinstance(data, (dict, bool)) and not any(k in STOP_KINDS for _, k, _ in found):
                    label = draft_label(data.get("$schema") if isinstance(data, dict) else None)
                    entry = refs.Entry(f.uri, data, label)
            except (OSError, UnicodeDecodeError, UnknownDraft, RecursionError):
                pass
            self._entries[f.path] = entry
        return self._entries[f.path]

    def _everything(self, skip: _File | None) -> tuple:
        if self._all is None:
            files = sorted(self._by_uri.values(), key=lambda x: x.path)
            unique = {id(x): x for x in files}.values()
            self._all = tuple((x, self._entry(x)) for x in unique)
        return tuple(e for x, e in self._all if e is not None and x is not skip)

    def _targets(self, doc: Doc) -> tuple:
        """The other files ``doc`` reaches through refs (transitively), as ref targets."""
        me = self._by_uri.get(doc.base)
        seen: dict[str, refs.Entry] = {}
        queue = [refs.Entry(doc.base, doc.data, doc.draft)]
        while queue:
            entry = queue.pop()
            try:
                urls = _outward_urls(entry)
            except Exception:  # a malformed $id/$ref: reported by the checks themselves
                return self._everything(me)
            for url in urls:
                target = self._by_uri.get(url)
                if target is None:
                    return self._everything(me)  # maybe an embedded $id in some file
                if target is me or target.uri in seen:
                    continue
                found = self._entry(target)
                if found is not None:
                    seen[target.uri] = found
                    queue.append(found)
        return tuple(seen.values())


def _markers(f: Path) -> tuple[str | None, bool, str | None] | None:
    """What the index needs from a file: (``x-schemaops-name``, library flag, root id), or None
    when it cannot be read or parsed (``no markers`` is ``(None, False, None)``)."""
    try:
        raw = jsontext.read_bytes(f)
        # Bytes with none of these hold no name override, library flag or ``$id`` (a key
        # written with ``\\u`` escapes is caught by the last). Substring scans (memchr speed),
        # written out: a regex alternation (Python's re tries it position by position) or a
        # generator per file cost as much again, and a 10,000-file index reads every file.
        named = b"x-schemaops-" in raw or b'"$id"' in raw or b"\\u" in raw
        if not named and b'"id"' not in raw:
            return None, False, None  # no name override, library flag or $id in it
        if not named and b"draft-04/schema" not in raw and b"draft-03/schema" not in raw:
            # only "id", which names a resource in drafts 3 and 4 alone (a property called
            # "id" is common: a third of JSONSchemaBench's files would be parsed for nothing)
            return None, False, None
        data = orjson.loads(raw)
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict):
        return None, False, None
    override = data.get("x-schemaops-name")
    rid = None
    if "$id" in data or "id" in data:
        try:
            label = draft_label(data.get("$schema"))
            rid = refs.specs()[label].create_resource(data).id()
        except (UnknownDraft, AttributeError, TypeError):
            rid = None
    return (
        override if isinstance(override, str) and override else None,
        is_library(data),
        rid if isinstance(rid, str) else None,
    )


def _marked(entry: _File, found: tuple[str | None, bool, str | None], uri: str) -> _File:
    """``entry`` with what ``_markers`` found (an alias keeps its own file name, and its
    target owns the ``$id``)."""
    override, library, rid = found
    if override is not None and entry.alias_of is None:
        entry.name = override
    entry.library = library
    if entry.alias_of is None and rid is not None:
        entry.id_uri = urljoin(uri, rid)
    return entry


def _outward_urls(entry: refs.Entry) -> set[str]:
    """URLs (no fragment) of refs that leave ``entry``'s own resources, metaschemas aside."""
    nodes = list(refs.iter_subschemas(entry.contents, entry.base, entry.label))
    own = {b for _, _, b in nodes} | {entry.base}
    out = set()
    for node, _, base in nodes:
        for kw in refs.REF_KEYWORDS:
            ref = node.get(kw)
            if isinstance(ref, str):
                url = refs.split_target(base, ref)[0]
                if url not in own and url not in refs.metaschemas():
                    out.add(url)
    return out
