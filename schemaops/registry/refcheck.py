"""Checking one document's ``$ref``s: each resolves (offline), points to a schema, and no
cycle of in-place applicators through them can run forever.

Resolution itself (the ref registry, the lookups, the subschema walk) is ``refs.py``; this is
what the registry loader asks of each document with refs (``check_refs``), and what it
reports (``RefReport``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from schemaops.registry.refs import (
    REF_KEYWORDS,
    Entry,
    Lookup,
    Refused,
    iter_subschemas,
    split_target,
)
from schemaops.strings import pointer

_OLD = {"draft-03", "draft-04", "draft-06", "draft-07"}  # drafts where $ref hides siblings
# Drafts whose metaschema does not type ``$ref`` (draft-06 on declare it a ``uri-reference``
# string): a JSON Reference's value is a string (draft-pbryan-zyp-json-ref-03, section 3),
# and jsonschema fails with a traceback on another one, so the ref check says so for them.
_UNTYPED_REF = {"draft-03", "draft-04"}
_INPLACE_ONE = ("not", "if", "then", "else")
_INPLACE_MANY = ("allOf", "anyOf", "oneOf")


@dataclass
class RefReport:
    """Result of checking one document's refs."""

    problems: list[tuple[str, str, str]]  # (pointer, kind, reason)
    external: bool  # refers to another registry document (needs bundling to be sent)


def _unresolvable(exc: Exception) -> bool:
    """``referencing``'s own "cannot resolve" (imported here, on a failed lookup only: a
    lookup that raised has imported it already)."""
    import referencing.exceptions

    return isinstance(exc, referencing.exceptions.Unresolvable)


def _classify(exc: Exception, ref: str, target: str) -> tuple[str, str]:
    """Turn a referencing failure into (kind, reason)."""
    import referencing.exceptions

    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, Refused):
        cause = cause.__cause__
    if isinstance(cause, Refused):
        if cause.remote:
            return "ref_remote", (
                f"$ref {ref!r} is remote ({cause.uri}); remote refs are never fetched: "
                "add the schema to the registry or inline it"
            )
        return "ref_outside", f"$ref {ref!r} points outside the registry ({cause.uri})"
    if isinstance(exc, referencing.exceptions.PointerToNowhere):
        return "ref_unresolvable", f"$ref {ref!r}: {exc.ref!r} does not exist in {target}"
    if isinstance(exc, referencing.exceptions.NoSuchAnchor):
        return "ref_unresolvable", f"$ref {ref!r}: no anchor {exc.anchor!r} in {target}"
    return "ref_unresolvable", f"$ref {ref!r} cannot be resolved ({type(exc).__name__})"


def check_refs(
    entry: Entry,
    lookup: Lookup,
    nodes: list[tuple[dict, list, str]] | None = None,
    targets: bool = False,
) -> RefReport:
    """Resolve every ``$ref`` of one document and find ref cycles that cannot terminate.
    ``lookup``: ``registry_lookup(build(...))``, or ``own_pointer_lookup`` for a document
    whose refs are ``pointer_refs_only``. ``nodes``: the document's ``iter_subschemas``, when
    the caller has them already.

    ``targets``: also check each ``$ref`` target inside the document against the draft's
    metaschema (``ref_target_invalid``). The metaschema check of the document reaches only
    keyword positions; a ref may point anywhere (``#/x-defs/a``, a draft-07 ``$defs``), and
    jsonschema fails with a traceback on some invalid schemas there (``"minItems": ["a"]``).
    The caller asks it of a document the metaschema found clean (else it is refused already
    and a target inside a checked position would be reported twice)."""
    problems: list[tuple[str, str, str]] = []
    external = False
    seen_targets: set[int] = {id(entry.contents)}  # the root is the document itself
    # (base, $ref) -> (target contents, target URI): the cycle search below follows the same
    # refs again, often many times (one walk per starting $ref); each is looked up once
    resolved: dict[tuple[str, str], tuple[Any, str]] = {}
    own = {entry.base}
    if nodes is None:
        nodes = list(iter_subschemas(entry.contents, entry.base, entry.label))
    for _, _, b in nodes:
        own.add(b)
    for node, parts, base in nodes:
        for kw in REF_KEYWORDS:
            ref = node.get(kw)
            if not isinstance(ref, str):
                if ref is not None and kw == "$ref" and entry.label in _UNTYPED_REF:
                    reason = f"$ref must be a string (a URI reference), not {type(ref).__name__}"
                    problems.append((pointer([*parts, kw]), "ref_unresolvable", reason))
                continue
            if kw == "$ref" and (base, ref) in resolved:  # the same ref again: same target
                continue  # (its url was weighed for ``external`` the first time)
            url = split_target(base, ref)[0]
            try:
                found = lookup(base, ref)
                if kw == "$ref":
                    resolved[(base, ref)] = (found, url)
            except Exception as exc:
                if _unresolvable(exc):
                    kind, reason = _classify(exc, ref, url)
                    problems.append((pointer([*parts, kw]), kind, reason))
                    continue
                # referencing itself failed (see build())
                reason = f"$ref {ref!r} cannot be resolved: {type(exc).__name__}: {exc}"
                problems.append((pointer([*parts, kw]), "ref_unresolvable", reason))
                continue
            if kw == "$ref" and url not in own:
                external = True
            elif targets and id(found) not in seen_targets:
                seen_targets.add(id(found))
                checked = base == entry.base and checked_position(entry, ref)
                bad = "" if checked else _target_problem(found, entry.label)
                if bad:
                    reason = f"$ref {ref!r} points to a value that is not a valid schema: {bad}"
                    problems.append((pointer([*parts, kw]), "ref_target_invalid", reason))
    problems.extend(_cycles(nodes, lookup, entry.label, resolved))
    return RefReport(problems, external)


#: schema-valued keywords whose values every draft's metaschema (draft-04 to 2020-12) checks
#: as schemas: a map of schemas, a list of schemas, one schema (``items``: one, or a list in
#: drafts before 2020-12, whose metaschema refuses the list). ``$defs`` from 2019-09 on.
_CHECKED_MAPS = frozenset(("properties", "patternProperties", "definitions"))
_CHECKED_LISTS = frozenset(("allOf", "anyOf", "oneOf"))
_CHECKED_ONE = frozenset(("additionalProperties", "not", "items"))
_DEFS_DRAFTS = frozenset(("2019-09", "2020-12"))


def checked_position(entry: Entry, ref: str) -> bool:
    """Whether ``#/...`` ``ref`` names a place the document's metaschema check validated as a
    schema: every step from the root is one of the keywords above (then a name or an index).
    False when unsure: the target is checked on its own then (``_target_problem``). The
    pointer is read as ``referencing`` reads it (``Resource.pointer``: percent-decoded, ``~1``
    and ``~0`` unescaped, no step dropped)."""
    if ref == "#" or not ref.startswith("#/") or entry.label == "draft-03":
        return ref == "#"  # draft-03 has none of allOf..not, nor definitions
    node: Any = entry.contents
    maps = _CHECKED_MAPS | ({"$defs"} if entry.label in _DEFS_DRAFTS else set())
    want = "keyword"  # what the next step must be: a keyword, a name or an index
    for token in unquote(ref[2:]).split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if want == "keyword":
            if not isinstance(node, dict) or token not in node:
                return False
            if token in maps:
                want = "name"
            elif token in _CHECKED_LISTS or (token == "items" and isinstance(node[token], list)):
                want = "index"
            elif token not in _CHECKED_ONE:
                return False
            node = node[token]
        elif want == "name":
            if not isinstance(node, dict) or token not in node:
                return False
            node, want = node[token], "keyword"
        else:
            if not isinstance(node, list) or not token.isdigit() or not token.isascii():
                return False
            if int(token) >= len(node):
                return False
            node, want = node[int(token)], "keyword"
    return want == "keyword"


def _target_problem(target: Any, label: str) -> str:
    """The first metaschema problem of a ``$ref`` target ("" when it is a valid schema)."""
    from schemaops.registry.drafts import metaschema_problems

    try:
        found = metaschema_problems(target, label)
    except RecursionError:
        return "nested too deeply to check"
    if not found:
        return ""
    where, reason = found[0]
    return f"{where or '/'}: {reason}" + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")


def _inplace(
    node: dict,
    base: str,
    lookup: Lookup,
    label: str,
    resolved: dict[tuple[str, str], tuple[Any, str]],
):
    """Subschemas applied to the *same* instance location as ``node`` (no input consumed)."""
    out: list[tuple[Any, str, str]] = []  # (contents, base, how)
    ref = node.get("$ref")
    if isinstance(ref, str):
        hit = resolved.get((base, ref))
        if hit is None:
            try:
                found = lookup(base, ref)
                hit = resolved[(base, ref)] = (found, split_target(base, ref)[0])
            except Exception:  # unresolvable refs are reported by check_refs
                pass
        if hit is not None:
            out.append((hit[0], hit[1], f"$ref {ref}"))
        if label in _OLD:
            return out
    for kw in _INPLACE_MANY:
        if isinstance(node.get(kw), list):
            out.extend((s, base, kw) for s in node[kw])
    for kw in _INPLACE_ONE:
        if kw in node:
            out.append((node[kw], base, kw))
    return out


def _cycles(nodes, lookup, label, resolved=None) -> list[tuple[str, str, str]]:
    """Cycles of in-place applicators through ``$ref``: validation would never terminate.

    ``{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}}`` (or one routed
    through ``allOf``/``anyOf``) revisits the same instance forever; recursion that goes
    through ``properties``/``items`` is fine because each step consumes input.
    """
    out: list[tuple[str, str, str]] = []
    done: set[int] = set()
    if resolved is None:
        resolved = {}
    for start, parts, base in nodes:
        if "$ref" not in start or id(start) in done:
            continue
        # iterative DFS; path holds (node id, label) of the current chain
        on_path: dict[int, int] = {}
        path: list[str | None] = []
        # the start's label (None) is written out only if a cycle is reported through it
        stack: list[tuple[Any, str, str | None, bool]] = [(start, base, None, False)]
        while stack:
            node, nbase, how, leaving = stack.pop()
            if leaving:
                on_path.pop(id(node), None)
                path.pop()
                done.add(id(node))
                continue
            if not isinstance(node, dict) or id(node) in done:
                continue
            if id(node) in on_path:
                cyc = [pointer(parts) or "#" if step is None else step for step in path]
                cyc = cyc[on_path[id(node)] :] + [how]
                if any(step.startswith("$ref") for step in cyc[1:]):
                    reason = "$ref cycle that never consumes input: " + " -> ".join(cyc)
                    out.append((pointer(parts), "ref_cycle", reason))
                    done.update(on_path)
                    break
                continue
            on_path[id(node)] = len(path)
            path.append(how)
            stack.append((node, nbase, how, True))
            for child, cbase, chow in _inplace(node, nbase, lookup, label, resolved):
                stack.append((child, cbase, chow, False))
    return out
