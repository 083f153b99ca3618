"""One registry document on its way through the checks: parsed, shaped like a schema of a
known draft, valid against its metaschema, inside the registry; and the problem records every
check reports.

Why apart from ``loader``: the eager loader and the lazy registry (``lazy.py``) take each
document through the same steps; ``loader`` assembles a registry from documents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemaops.registry import jsontext, refs
from schemaops.registry.drafts import UnknownDraft, draft_label, metaschema_problems
from schemaops.registry.keywords import TYPO_KIND, keyword_findings

SIDECAR_SUFFIX = ".examples.json"
UNREADABLE_KINDS = frozenset({"missing_folder", "empty_folder", "unreadable", "not_json"})
#: problems after which a file's content cannot be checked further (nor hashed or served)
STOP_KINDS = frozenset({"not_json", "too_deep", "bad_unicode", "number_too_long"})


def problem(file: Any, pointer: str, kind: str, reason: str) -> dict[str, str]:
    """A problem record: ``file``, ``pointer`` ("" = whole file), ``kind``, ``reason``.

    A file name that is not valid UTF-8 (``\\xff`` bytes arrive as lone surrogates) is
    shown escaped (in the pointer and reason too), so every report and ``--json`` document
    stays valid UTF-8.
    """
    return {
        "file": printable(str(file)),
        "pointer": printable(pointer),
        "kind": kind,
        "reason": printable(reason),
    }


def printable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def exit_code_for(problems: list[dict]) -> int:
    """2 if any input could not be read, else 1 (invalid content), 0 for no problems."""
    if not problems:
        return 0
    return 2 if any(p.get("kind") in UNREADABLE_KINDS for p in problems) else 1


def format_problem(p: dict) -> str:
    """``file#/pointer: reason [kind]`` — one line per problem, as people grep for it."""
    where = f"{p['file']}#{p['pointer']}" if p.get("pointer") else p["file"]
    return f"{where}: {p['reason']} [{p.get('kind', 'invalid')}]"


@dataclass
class Doc:
    """A file (or text) on its way through the checks."""

    name: str
    label: str  # where problems are reported: the file path or "<text>"
    path: Path | None
    base: str
    data: Any = None
    draft: str = ""
    ok: bool = True  # parsed, is a schema, known draft: later checks can run
    clean: bool = True  # no problems at all so far: examples can be checked
    root: Path | None = None  # the registry folder a file (and its sidecar) must stay in
    #: a symlink to another schema file of the registry: the target, relative to the root
    alias_of: Path | None = None
    #: findings that never refuse the document (``keyword_other_draft``, ``unknown_keyword``)
    warnings: list[dict] = field(default_factory=list)


def outside_reason(path: Path, root: Path) -> str:
    """Why ``path`` is refused as outside ``root`` (a symlink leading out), or ``""``.

    A ``$ref`` to a file outside the registry is refused (``ref_outside``); a symlink to the
    same file must be refused too, or the boundary means nothing.
    """
    try:
        target = path.resolve()
        inside = target.is_relative_to(root.resolve())
    except (OSError, RuntimeError) as exc:  # a symlink loop
        return f"cannot resolve {path.name}: {exc}"
    if inside:
        return ""
    return (
        f"{path.name} is a symlink to {target}, outside the registry {root}: refused, as a "
        "$ref outside the registry is (copy the file into the registry instead)"
    )


def alias_target(path: Path, root: Path) -> Path | None:
    """The schema file of the registry ``root`` that ``path`` is a symlink to (relative to
    the root), or None.

    Why: a symlink inside the registry is a deliberate second name for one schema (a rename
    that keeps the old name working). Read as a file of its own it would clash with its
    target on every URI (the same resolved file, the same ``$id``) and be refused as
    ``duplicate_id``; as an alias it is registered under its own file name with a
    ``symlink_alias`` warning naming the target. A link out of the registry, to a sidecar,
    a hidden file or anything but a ``.json`` file is no alias (``outside_reason`` and the other
    checks treat it as before).
    """
    if not path.is_symlink():
        return None
    try:
        target = path.resolve(strict=True)
        rel = target.relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):
        return None
    if (
        target.suffix != ".json"
        or target.name.endswith(SIDECAR_SUFFIX)
        or any(part.startswith(".") for part in rel.parts)
        or not target.is_file()
    ):
        return None
    return rel


def schema_version(data: Any) -> str:
    if isinstance(data, dict):
        for key in ("x-schemaops-version", "version"):
            if isinstance(data.get(key), (str, int, float)) and not isinstance(data[key], bool):
                return str(data[key])
    return "1"


def parse_document(doc: Doc, text: str | None, problems: list[dict]) -> None:
    """Parse text (unless data is already there), check it is a schema of a known draft."""
    parsed = text is not None  # exact JSON types, within jsontext's depth bound once ok
    if parsed:
        doc.data, found = jsontext.parse(text)
    else:
        found = jsontext.shape_problems(doc.data)
    for ptr, kind, reason in found:
        problems.append(problem(doc.label, ptr, kind, reason))
        doc.clean = False
        if kind in STOP_KINDS:
            doc.ok = False
    if not doc.ok:
        return
    if not isinstance(doc.data, (dict, bool)):
        kind = type(doc.data).__name__
        problems.append(
            problem(
                doc.label, "", "not_schema", f"a schema must be an object or boolean, got {kind}"
            )
        )
        doc.ok = doc.clean = False
        return
    try:
        doc.draft = draft_label(doc.data.get("$schema") if isinstance(doc.data, dict) else None)
    except UnknownDraft as exc:
        problems.append(problem(doc.label, "/$schema", "unknown_draft", str(exc)))
        doc.ok = doc.clean = False
        return
    meta = metaschema_problems(doc.data, doc.draft, parsed)
    for ptr, reason in meta:
        problems.append(problem(doc.label, ptr, "metaschema", f"{reason} (draft {doc.draft})"))
    if meta:
        doc.clean = False
    # a misspelt keyword is silently ignored by every validator and grammar compiler (issue
    # 34): a likely typo is a problem, any other unknown keyword a warning (``keywords.py``)
    for ptr, kind, reason in keyword_findings(doc.data, doc.draft):
        if kind == TYPO_KIND:
            problems.append(problem(doc.label, ptr, kind, reason))
            doc.clean = False
        else:
            doc.warnings.append(problem(doc.label, ptr, kind, reason))


def is_library(data: Any) -> bool:
    """A definitions library (``"x-schemaops-library": true``), not a servable schema."""
    return isinstance(data, dict) and data.get("x-schemaops-library") is True


REF_OR_ID = frozenset((*refs.REF_KEYWORDS, "$id", "id"))


def ref_free(data: Any) -> bool:
    """No ``$ref``-family and no ``$id``/``id`` key anywhere in ``data`` (data keywords
    included, so a key inside an ``enum`` value counts too: conservative)."""
    stack = [data]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            if not REF_OR_ID.isdisjoint(cur):
                return False
            stack.extend(cur.values())
        elif isinstance(cur, list):
            stack.extend(cur)
    return True
