"""Make a schema self-contained: inline refs to other registry files into local defs.

Grammar backends (xgrammar, llguidance, outlines-core) and SGLang resolve only local
``#/...`` refs, so a schema that says ``"$ref": "common.json#/$defs/money"`` cannot be sent
as is. ``bundle`` copies each referenced target into the root's ``$defs`` (``definitions``
before 2019-09) under a readable key and rewrites the ref to point there. Refs inside the
copied targets are rewritten the same way, so the result needs nothing but itself.
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from schemaops.registry.refs import document_base, iter_subschemas, split_target

if TYPE_CHECKING:
    import referencing


def _key(url: str, fragment: str) -> str:
    """A readable defs key for an inlined target, e.g. ``common__money``.

    Only ``[A-Za-z0-9_]``: some grammar compilers turn def names into rule names.
    """
    last = re.split(r"[/:]", unquote(urlsplit(url).path))[-1]  # file name or urn tail
    stem = last.removesuffix(".json") or "ref"
    tail = fragment.rsplit("/", 1)[-1] if fragment else ""
    return re.sub(r"[^A-Za-z0-9_]", "_", f"{stem}__{tail}" if tail else stem)


def bundle(contents: Any, base: str, label: str, registry: referencing.Registry) -> Any:
    """A deep copy of ``contents`` whose cross-document refs all point into itself.

    Refs that cannot be resolved are left unchanged (the loader reports them separately).
    Returns ``contents`` itself when it has no cross-document refs.
    """
    if not isinstance(contents, dict):
        return contents
    root = copy.deepcopy(contents)
    own = {b for _, _, b in iter_subschemas(root, base, label)} | {base}
    defs_kw = "$defs" if label in ("2019-09", "2020-12") else "definitions"
    existing = root.get(defs_kw) if isinstance(root.get(defs_kw), dict) else {}
    added: dict[str, Any] = {}
    keys: dict[str, str] = {}  # absolute target URI -> defs key
    queue: list[tuple[Any, str, bool]] = [(root, base, True)]
    while queue:
        doc, doc_base, is_root = queue.pop(0)
        for node, _, node_base in iter_subschemas(doc, doc_base, label):
            ref = node.get("$ref")
            if not isinstance(ref, str):
                continue
            url, fragment = split_target(node_base, ref)
            target = f"{url}#{fragment}"
            if url in own:
                if not is_root:  # a ref from inlined content back into the root document
                    node["$ref"] = "#" + fragment
                continue
            if target not in keys:
                try:
                    resolved = registry.resolver(node_base).lookup(ref)
                except Exception:  # reported by the loader's ref checks
                    continue
                key = base_key = _key(url, fragment)
                n = 2
                while key in existing or key in added:
                    key, n = f"{base_key}_{n}", n + 1
                body = copy.deepcopy(resolved.contents)
                if isinstance(body, dict):
                    for drop in ("$id", "id", "$schema"):
                        body.pop(drop, None)
                added[key] = body
                keys[target] = key
                queue.append((body, document_base(registry, url), False))  # an alias: its target
            node["$ref"] = f"#/{defs_kw}/{keys[target].replace('~', '~0').replace('/', '~1')}"
    if not added:
        return contents
    root[defs_kw] = {**existing, **added}
    return root
