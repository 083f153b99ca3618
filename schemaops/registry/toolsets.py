"""Tool sets: ``NAME.tools.json`` files in a registry, OpenAI-style ``tools`` arrays.

Why a registry object of its own: an agent does not send one schema, it sends a ``tools``
array, and the engine derives the grammar from the whole array (``engines/tool_schema.py``).
So the tool set, not each function's arguments, is what is checked, hashed, exported and
compiled. Each function's ``parameters`` is checked as a registry schema is (metaschema of its
draft, misspelt keywords, ``$ref``s resolvable offline) and may ``$ref`` the registry's
schemas and libraries; those refs are bundled exactly as a schema's are (``bundle.py``), since
neither a provider nor an engine can follow a ref to another file.

A ``parameters`` that is only a ``$ref`` to a whole schema (``{"$ref": "get_order.json"}``) is
sent as that schema's bundled form itself (not as a ``$ref`` into ``$defs``): OpenAI wants the
parameters root to be an object schema, and SGLang's named-tool constraint nests the
parameters without hoisting their ``$defs`` (``engines/tool_schema.py``), so a root ``$ref``
would point at nothing there.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemaops.errors import InputError
from schemaops.registry import jsontext, refs
from schemaops.registry.documents import (
    STOP_KINDS,
    Doc,
    outside_reason,
    parse_document,
    problem,
    ref_free,
)
from schemaops.registry.loader import TOOLS_SUFFIX, check_documents
from schemaops.registry.model import canonical_text, content_hash

#: Function names each provider accepts, from their own reference texts:
#: - OpenAI: "Must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length
#:   of 64." (openai-python 3.60.0, ``openai/types/shared_params/function_definition.py``,
#:   ``FunctionDefinition.name``)
#: - Anthropic: "The name of the tool. Must match the regex ^[a-zA-Z0-9_-]{1,64}$." (Messages
#:   API reference, ``Tool.name``, https://docs.anthropic.com/en/api/messages; the SDK's
#:   ``anthropic/types/tool_param.py`` states no pattern)
#: - Gemini: "Must be a-z, A-Z, 0-9, or contain underscores, colons, dots, and dashes, with a
#:   maximum length of 64." (``FunctionDeclaration.name``,
#:   https://ai.google.dev/api/caching#FunctionDeclaration)
PROVIDER_NAME_RULES: dict[str, re.Pattern[str]] = {
    "openai": re.compile(r"[a-zA-Z0-9_-]{1,64}"),
    "anthropic": re.compile(r"[a-zA-Z0-9_-]{1,64}"),
    "gemini": re.compile(r"[a-zA-Z0-9_.:-]{1,64}"),
}


def refused_by(name: str) -> list[str]:
    """The providers whose name rule ``name`` breaks (``PROVIDER_NAME_RULES``)."""
    return [p for p, rule in PROVIDER_NAME_RULES.items() if not rule.fullmatch(name)]


@dataclass
class Tool:
    """One function of a tool set. ``parameters`` is the file's own (None when absent);
    ``bundled`` the self-contained form sent on the wire."""

    name: str
    description: str = ""
    parameters: Any = None
    bundled: Any = None
    strict: bool | None = None
    index: int = 0  # position in the file's array: problems point at /<index>/function

    def request_function(self, source: dict) -> dict:
        """The ``function`` object as sent: the file's, with ``parameters`` bundled."""
        out = dict(source)
        if self.bundled is not None:
            out["parameters"] = self.bundled
        return out


@dataclass
class ToolSet:
    """One ``NAME.tools.json``: its tools in file order and the exact request fragment."""

    name: str
    path: Path | None
    tools: list[Tool] = field(default_factory=list)
    source: list = field(default_factory=list, repr=False)

    def request_tools(self) -> list[dict]:
        """The ``tools`` array as the request sends it (key order kept, refs bundled)."""
        out = []
        for tool, entry in zip(self.tools, self.source, strict=True):
            item = dict(entry)
            item["function"] = tool.request_function(entry["function"])
            out.append(item)
        return out

    def wire(self) -> str:
        """``{"tools": [...]}`` in the registry's canonical compact text (``model.py``)."""
        return canonical_text({"tools": self.request_tools()})

    @property
    def hash(self) -> str:
        """sha256 of the wire fragment: a change to any tool or a ref target changes it."""
        return content_hash({"tools": self.request_tools()})

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    def get(self, name: str) -> Tool:
        for t in self.tools:
            if t.name == name:
                return t
        raise InputError(f"tool set {self.name!r} has no tool {name!r}; tools: {self.names}")

    def summary(self) -> dict:
        """The JSON row for listings (``registry list/validate``)."""
        return {
            "name": self.name,
            "kind": "toolset",
            "hash": self.hash,
            "path": str(self.path) if self.path else None,
            "tools": self.names,
            "wire_bytes": len(self.wire().encode()),
        }


def _hoist_root_ref(bundled: Any) -> Any:
    """``{"$ref": "#/$defs/K", "$defs": {...}}`` -> the definition K itself (other defs kept).

    Only when K has no defs container of its own and nothing else refers to K (a recursive
    schema keeps its ``$ref`` form).
    """
    if not isinstance(bundled, dict) or set(bundled) - {"$ref", "$defs", "definitions"}:
        return bundled
    ref = bundled.get("$ref")
    kw = "$defs" if "$defs" in bundled else "definitions"
    defs = bundled.get(kw)
    if not isinstance(ref, str) or not isinstance(defs, dict) or not ref.startswith(f"#/{kw}/"):
        return bundled
    key = ref[len(f"#/{kw}/") :]
    target = defs.get(key)
    if not isinstance(target, dict) or "$defs" in target or "definitions" in target:
        return bundled
    rest = {k: v for k, v in defs.items() if k != key}
    if f'"{ref}"' in canonical_text(rest) or f'"{ref}"' in canonical_text(target):
        return bundled
    out = copy.deepcopy(target)
    if rest:
        out[kw] = rest
    return out


def _is_object_schema(schema: Any) -> bool:
    """The parameters root is an object schema (``type`` ``object``), as every provider and
    engine expects arguments to be a JSON object."""
    if not isinstance(schema, dict):
        return False
    t = schema.get("type")
    return t == "object" or (isinstance(t, list) and t == ["object"])


def _check_parameters(
    f: Path, set_name: str, tool: Tool, params: Any, entries: tuple, problems: list, warnings: list
) -> None:
    """Check one function's parameters as a registry schema; set ``tool.bundled``."""
    prefix = f"/{tool.index}/function/parameters"
    doc = Doc(
        name=f"{set_name}.{tool.name}",
        label=str(f),
        path=None,
        base=refs.file_uri(f),
        data=params,
    )
    found: list[dict] = []
    warned: list[dict] = []
    parse_document(doc, None, found)
    schemas = {}
    if doc.ok:
        extra = () if ref_free(params) else entries
        schemas = check_documents([doc], found, extra, warned, examples=False)
    for p in found:
        problems.append({**p, "pointer": prefix + p["pointer"]})
    for p in warned:
        warnings.append({**p, "pointer": prefix + p["pointer"]})
    s = next(iter(schemas.values()), None)
    tool.bundled = _hoist_root_ref(s.bundled()) if s is not None else params
    if not _is_object_schema(tool.bundled):
        reason = (
            'parameters must be an object schema ("type": "object"): arguments are a JSON '
            "object for every provider and engine"
        )
        problems.append(problem(f, prefix, "not_object_schema", reason))


def _tool(f: Path, i: int, entry: Any, problems: list) -> Tool | None:
    """The function tool at index ``i``, or None (and a problem) when it is not one."""
    where = f"/{i}"
    if not isinstance(entry, dict) or entry.get("type") != "function":
        reason = 'each tool must be {"type": "function", "function": {...}}'
        problems.append(problem(f, where, "not_function_tool", reason))
        return None
    fn = entry.get("function")
    if not isinstance(fn, dict):
        problems.append(problem(f, f"{where}/function", "not_function_tool", "not an object"))
        return None
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        problems.append(problem(f, f"{where}/function/name", "bad_tool_name", "missing name"))
        return None
    refused = refused_by(name)
    if refused:
        reason = f"tool name {name!r} is refused by {', '.join(refused)} (see PROVIDER_NAME_RULES)"
        problems.append(problem(f, f"{where}/function/name", "bad_tool_name", reason))
    strict = fn.get("strict")
    if strict is not None and not isinstance(strict, bool):
        problems.append(problem(f, f"{where}/function/strict", "metaschema", "not a boolean"))
    desc = fn.get("description", "")
    if not isinstance(desc, str):
        problems.append(problem(f, f"{where}/function/description", "metaschema", "not a string"))
        desc = ""
    return Tool(
        name=name, description=desc, parameters=fn.get("parameters"), strict=strict, index=i
    )


def load_toolset(
    f: Path, root: Path, entries: tuple, problems: list[dict], warnings: list[dict]
) -> ToolSet | None:
    """Read and check one ``NAME.tools.json``; None when it cannot be read as an array."""
    name = f.name[: -len(TOOLS_SUFFIX)]
    outside = outside_reason(f, root)
    if outside:
        problems.append(problem(f, "", "symlink_outside", outside))
        return None
    try:
        data, found = jsontext.parse(jsontext.read_text(f))
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(problem(f, "", "unreadable", f"cannot read: {exc}"))
        return None
    for ptr, kind, reason in found:
        problems.append(problem(f, ptr, kind, reason))
    if any(kind in STOP_KINDS for _, kind, _ in found):
        return None
    if not isinstance(data, list) or not data:
        reason = "a tool set is a non-empty JSON array of function tools (an OpenAI tools array)"
        problems.append(problem(f, "", "not_tools", reason))
        return None
    ts = ToolSet(name=name, path=f)
    seen: dict[str, int] = {}
    for i, entry in enumerate(data):
        tool = _tool(f, i, entry, problems)
        if tool is None:
            continue
        if tool.name in seen:
            reason = f"tool name {tool.name!r} is also tool {seen[tool.name]}: names must be unique"
            problems.append(problem(f, f"/{i}/function/name", "duplicate_tool", reason))
            continue
        seen[tool.name] = i
        if tool.parameters is not None:
            _check_parameters(f, name, tool, tool.parameters, entries, problems, warnings)
        ts.tools.append(tool)
        ts.source.append(entry)
    return ts


def load_toolsets(
    files: list[Path], root: Path, docs: list[Doc], problems: list[dict], warnings: list[dict]
) -> dict[str, ToolSet]:
    """Every tool set file of a registry, checked; refs resolve against the registry's docs."""
    entries = tuple(
        refs.Entry(d.base, d.data, d.draft) for d in docs if d.ok and d.alias_of is None
    )
    out: dict[str, ToolSet] = {}
    for f in files:
        ts = load_toolset(f, root, entries, problems, warnings)
        if ts is not None:
            out[ts.name] = ts
    return out
