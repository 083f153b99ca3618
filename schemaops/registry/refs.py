"""``$ref`` resolution: one offline ``referencing.Registry`` per load, the lookups, the walk
over a document's subschemas (checking a document's refs is ``refcheck.py``).

Every registry file is a resource under its ``file://`` URI (and under its ``$id`` when it
has one), next to the official metaschemas that ship with ``jsonschema`` (so a schema that
refers to ``http://json-schema.org/draft-07/schema#`` resolves without a fetch). Anything
else is refused by the retrieve function: **a remote ``$ref`` is never fetched**, and the
refusal becomes a precise problem instead of a slow, non-reproducible network call.

A registry file is registered under its *resolved* path, so a symlink alias (``old.json ->
new.json``, a rename that keeps the old name) shares its target's URI. A ``$ref`` that names
the alias (``old.json#/...``) is therefore looked up on a miss (``_alias_retriever``): a
``.json`` symlink in a registry folder that resolves to a registry file is that file; any
other miss is still refused (``ref_outside``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urldefrag, urljoin, urlsplit

if TYPE_CHECKING:
    import referencing

# ``referencing`` and the metaschemas (``jsonschema_specifications``) are imported on first
# use, not with this module: with ``attrs`` they were a third of a one-line audit's start, and
# a warm audit of schemas without ``$id``s or ``$ref``s never resolves anything (issue 36).
# ``SPECS``, ``OFFLINE`` and ``METASCHEMAS`` stay readable as attributes (``__getattr__``).


@cache
def specs() -> dict[str, referencing.Specification]:
    """Draft label -> ``referencing``'s specification of that draft."""
    import referencing.jsonschema as rj

    return {
        "draft-03": rj.DRAFT3,
        "draft-04": rj.DRAFT4,
        "draft-06": rj.DRAFT6,
        "draft-07": rj.DRAFT7,
        "2019-09": rj.DRAFT201909,
        "2020-12": rj.DRAFT202012,
    }


@cache
def metaschemas() -> referencing.Registry:
    """The official metaschemas, as ``jsonschema`` ships them (``jsonschema_specifications``)."""
    from jsonschema_specifications import REGISTRY

    return REGISTRY


@cache
def offline() -> referencing.Registry:
    """For validating instances: metaschemas only, every other URI refused (jsonschema's own
    default registry would still fetch http(s) refs, with only a DeprecationWarning)."""
    import referencing

    return referencing.Registry(retrieve=_refuse).combine(metaschemas())


@cache
def no_fetch() -> referencing.Registry:
    """What every ``jsonschema`` validator of this project is built with (``registry=``): no
    resource of its own, and a URI it does not hold refused (``Refused``). Without it,
    jsonschema 4.26's default registry fetches an http(s) ``$ref`` with ``urllib``, only
    warning (``validators._warn_for_remote_retrieve``): a tool set offered in a logged request
    made the audit fetch its remote ``$ref`` (a mutation run, 2026-12-05). jsonschema adds the
    metaschemas itself (``SPECIFICATIONS.combine``), so ``offline()``'s copy is not needed here
    (it cost 45 µs a validator more)."""
    import referencing

    return referencing.Registry(retrieve=_refuse)


def __getattr__(name: str) -> Any:
    """``SPECS``, ``OFFLINE`` and ``METASCHEMAS``, built on first access."""
    lazy = {"SPECS": specs, "OFFLINE": offline, "METASCHEMAS": metaschemas}
    if name in lazy:
        return lazy[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Every subschema-bearing keyword, for finding every $ref. Look-alike lists elsewhere are
# kept apart on purpose, each with its own contract: engines/sglang.py copies SGLang 0.5.23's
# _iter_subschemas (it must follow SGLang, not this list), lower/passes.py leaves out
# not/if/contains (whose insides are never rewritten), compare/generate.py leaves allOf and
# unevaluatedProperties alone when closing objects.
_SINGLE = (
    "additionalItems",
    "additionalProperties",
    "contains",
    "contentSchema",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_MAPS = (
    "$defs",
    "definitions",
    "dependentSchemas",
    "patternProperties",
    "properties",
    "dependencies",
)
REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


class Refused(Exception):
    """Raised by the retrieve function: the URI is not in the registry and is not fetched."""

    def __init__(self, uri: str) -> None:
        super().__init__(uri)
        self.uri = uri
        self.remote = urlsplit(uri).scheme in ("http", "https")


def _refuse(uri: str) -> referencing.Resource:
    raise Refused(uri)


def split_target(base: str, ref: str) -> tuple[str, str]:
    """(resource URI, fragment) a ref points to, exactly as ``referencing`` resolves it.

    A ``#...`` ref stays in the current resource even when its base is a URN (``urljoin``
    cannot join against ``urn:`` and would return the bare fragment).
    """
    if ref.startswith("#"):
        return base, ref[1:]
    return urldefrag(urljoin(base, ref))


def file_uri(path: Path) -> str:
    """Base URI of a registry file: its absolute ``file://`` URI."""
    return path.resolve().as_uri()


def inline_uri(name: str) -> str:
    """Base URI for a schema given as text: relative refs resolve next to a virtual file."""
    return f"file:///schemaops-inline/{name}.json"


@dataclass
class Entry:
    """One document in a ref registry: its base URI, contents and draft label."""

    base: str
    contents: Any
    label: str


def pointer_refs_only(entry: Entry) -> list[tuple[dict, list, str]] | None:
    """Every ref of ``entry`` is a ``$ref`` to a JSON pointer in itself (``#`` or ``#/...``),
    made where the base is the document's own (no ``$id`` changes it on the way).

    Such refs resolve against the document's own resource: ``own_pointer_lookup`` answers
    every lookup as a crawled ref registry does, without building one (the crawl, then the
    registry itself, were most of a platform schema's first-use ref check: issues 15, 24).

    The document's own base is the root's: its file's URI, or the root's ``$id`` joined to it
    (a third of JSONSchemaBench's files with refs have one, and each built and crawled a ref
    registry for refs that never leave the document). No other subschema may change it.

    Returns the document's subschemas (``iter_subschemas``, which ``refcheck.check_refs`` takes
    instead of walking again) when so, else None."""
    nodes = list(iter_subschemas(entry.contents, entry.base, entry.label))
    own = nodes[0][2] if nodes else entry.base  # the root's base (``iter_subschemas``)
    for node, _, base in nodes:
        if base != own:
            return None
        for kw in REF_KEYWORDS:
            ref = node.get(kw)
            if ref is None:
                continue
            if kw != "$ref" or not isinstance(ref, str) or not (ref == "#" or ref[:2] == "#/"):
                return None
    return nodes


def build(entries: list[Entry]) -> tuple[referencing.Registry, list[tuple[Entry, str]]]:
    """An offline ref registry holding ``entries``, crawled for embedded ``$id``s and
    anchors; also returns (entry, clashing $id) pairs."""
    import referencing

    SPECS, METASCHEMAS = specs(), metaschemas()  # noqa: N806 (the module's own names)
    pairs: list[tuple[str, referencing.Resource, Entry]] = []
    owner: dict[str, Entry] = {}
    clashes: list[tuple[Entry, str]] = []
    for e in entries:
        resource = SPECS[e.label].create_resource(e.contents)
        uris = [e.base]
        try:
            rid = resource.id() if isinstance(e.contents, dict) else None
        except (AttributeError, TypeError):  # a non-string $id: the metaschema reports it
            rid = None
        if isinstance(rid, str):
            uris.append(urljoin(e.base, rid))  # as referencing.crawl() does
        for uri in dict.fromkeys(uris):
            if uri in owner and owner[uri] is not e:
                clashes.append((e, uri))
                continue
            owner[uri] = e
            pairs.append((uri, resource, e))
    empty = referencing.Registry(retrieve=_alias_retriever(owner))
    try:
        reg = empty.with_resources((u, r) for u, r, _ in pairs).combine(METASCHEMAS)
        return reg.crawl(), clashes
    except Exception:
        pass
    # referencing's crawler trips on some real schemas (e.g. a draft-07 ``dependencies``
    # value that is a list of names). Crawl what it can; add the rest uncrawled, with their
    # embedded ``$id`` resources found by our own walker, so pointer refs still resolve.
    good = [(u, r) for u, r, _ in pairs if _crawlable(u, r)]
    reg = empty.with_resources(good).combine(METASCHEMAS).crawl()
    for uri, resource, e in pairs:
        if (uri, resource) in good:
            continue
        extra = [(uri, resource)]
        for node, _, base in iter_subschemas(e.contents, e.base, e.label):
            if base not in (e.base, uri) and node is not e.contents:
                extra.append((base, SPECS[e.label].create_resource(node)))
        reg = reg.with_resources(extra)
    return reg, clashes


#: (base URI, ``$ref``) -> the contents the ref points to; raises what ``referencing`` raises
Lookup = Callable[[str, str], Any]


def registry_lookup(registry: referencing.Registry) -> Lookup:
    """Refs resolved by a ref registry (``build``)."""
    return lambda base, ref: registry.resolver(base).lookup(ref).contents


def own_pointer_lookup(entry: Entry) -> Lookup:
    """Refs of a document whose refs are ``pointer_refs_only``, resolved without a registry.

    Why: building the ref registry (``build``, even uncrawled: the resource, the registry and
    the metaschemas combined into it) and a resolver per lookup were most of such a file's
    ref check (the many-schema bench's largest first-use stage, issue 24). Each such ref is
    ``#`` or ``#/pointer`` from the document's own base (``pointer_refs_only``), so
    ``Resolver.lookup`` (referencing 0.37, ``_core.py``) would fetch the document itself from
    its registry and run ``Resource.pointer`` on it; this runs that same ``Resource.pointer``
    (its errors included) on the document directly, with a resolver whose registry is never
    read there (``pointer`` only moves the resolver's base on entering an ``$id``). Held to
    ``registry_lookup`` on a crawled registry in ``tests/test_registry_fastpaths.py``."""
    import referencing

    resource = specs()[entry.label].create_resource(entry.contents)
    resolver = referencing.Registry().resolver(base_uri=entry.base)
    # the root's base: the file's URI, or its ``$id`` joined to it (``pointer_refs_only``),
    # under which a crawled registry holds the same resource
    own = {entry.base, _root_base(entry)}

    def lookup(base: str, ref: str) -> Any:
        if not ref.startswith("#") or base not in own:
            raise ValueError(f"not a pointer into {entry.base}: {ref!r} from {base}")
        fragment = ref[1:]
        if not fragment:
            return entry.contents
        return resource.pointer(pointer=fragment, resolver=resolver).contents

    return lookup


def _root_base(entry: Entry) -> str:
    """The base ``iter_subschemas`` gives the document's root: its ``$id`` joined to the
    file's URI, else that URI."""
    root = next(iter_subschemas(entry.contents, entry.base, entry.label), None)
    return root[2] if root is not None else entry.base


def _alias_retriever(owner: dict[str, Entry]) -> Callable[[str], referencing.Resource]:
    """The retrieve function of a ref registry whose files are ``owner`` (URI -> entry).

    A URI no file is registered under is an alias when it is a ``file:`` URI of a visible
    ``.json`` symlink in a folder that holds registry files (or a visible folder below one)
    and it resolves to a registry file: the target's resource is returned, with the target's
    URI as its id so that the relative refs inside it resolve where the target lives (as they
    do for the alias itself, which the loader reads under its target's URI; ``document_base``
    tells the bundler). Anything else is ``Refused``.
    """
    folders: set[Path] = set()  # the registry's folders, found on the first miss only

    def retrieve(uri: str) -> referencing.Resource:
        if not folders:
            folders.update(_file_path(u).parent for u in owner if u.startswith("file:"))
        target = _symlink_target(uri, folders)
        entry = owner.get(target) if target else None
        if entry is None or target is None:
            raise Refused(uri)
        spec = specs()[entry.label]
        contents = entry.contents
        if isinstance(contents, dict) and spec.id_of(contents) is None:
            contents = {
                **contents,
                ("id" if entry.label in ("draft-03", "draft-04") else "$id"): target,
            }
        return spec.create_resource(contents)

    return retrieve


def document_base(registry: referencing.Registry, url: str) -> str:
    """The base URI the refs inside the document at ``url`` resolve against: ``url`` itself
    for a registered document, the target's URI for an alias (``_alias_retriever``)."""
    try:
        registry[url]
        return url
    except LookupError:  # referencing's NoSuchResource: not registered, maybe an alias
        pass
    try:
        rid = registry.get_or_retrieve(url).value.id()
    except Exception:  # refused or unreadable: the caller reports it as it did
        return url
    return urljoin(url, rid) if isinstance(rid, str) and rid else url


def _file_path(uri: str) -> Path:
    # imported here: urllib.request imports http.client and email (25 ms of every start-up)
    from urllib.request import url2pathname

    return Path(url2pathname(urlsplit(uri).path))


def _symlink_target(uri: str, folders: set[Path]) -> str | None:
    """The resolved ``file:`` URI of the symlink ``uri`` names, when that symlink is a visible
    ``.json`` file in one of ``folders`` or a visible folder below one; else None (also for
    any error: a loop, no file)."""
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.query or parts.netloc not in ("", "localhost"):
        return None
    try:
        path = _file_path(uri)
        if path.name.startswith(".") or path.suffix != ".json" or not path.is_symlink():
            return None
        where = path.parent.resolve()
        if not any(_visible_below(where, f) for f in folders):
            return None
        return path.resolve(strict=True).as_uri()
    except (OSError, RuntimeError, ValueError):
        return None


def _visible_below(folder: Path, top: Path) -> bool:
    """``folder`` is ``top`` or below it through no hidden folder (``.lower/`` is no
    registry folder)."""
    if not folder.is_relative_to(top):
        return False
    return not any(part.startswith(".") for part in folder.relative_to(top).parts)


def _crawlable(uri: str, resource: referencing.Resource) -> bool:
    import referencing

    try:
        referencing.Registry().with_resource(uri, resource).crawl()
    except Exception:
        return False
    return True


def iter_subschemas(root: Any, base: str, label: str) -> Iterator[tuple[dict, list, str]]:
    """Every subschema object (not data such as ``enum`` values) with its path and base URI.

    Iterative, so deeply nested real-world schemas cannot hit Python's recursion limit.
    """
    spec: Any = None  # referencing's, looked up at the first node with an id
    stack: list[tuple[Any, list, str]] = [(root, [], base)]
    while stack:
        node, parts, node_base = stack.pop()
        if not isinstance(node, dict):
            continue
        # every draft's id_of reads "$id" or "id" (referencing.jsonschema): without either
        # key there is nothing to ask it (most nodes; a call per node was a third of the walk)
        sid = None
        if "$id" in node or "id" in node:
            try:
                spec = spec or specs()[label]
                sid = spec.id_of(node)
            except (AttributeError, TypeError):  # a non-string id (drafts 4-7 call .startswith)
                sid = None  # no base change: the metaschema check reports the id itself
        if isinstance(sid, str) and sid:
            node_base = urljoin(node_base, sid.rstrip("#"))  # as Resource.id() + crawl()
        yield node, parts, node_base
        children: list[tuple[Any, list, str]] = []
        for kw, value in node.items():  # document order, so bundles and reports are stable
            if kw in _SINGLE and isinstance(value, dict):
                children.append((value, [*parts, kw], node_base))
            elif kw in _LISTS and isinstance(value, list):
                children.extend((sub, [*parts, kw, i], node_base) for i, sub in enumerate(value))
            elif kw in _MAPS and isinstance(value, dict):
                children.extend((sub, [*parts, kw, k], node_base) for k, sub in value.items())
        stack.extend(reversed(children))
