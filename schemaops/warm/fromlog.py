"""Read a request log (JSONL) and find the grammar keys production traffic really uses.

Each line is one request body: an SGLang ``/generate`` body (``sampling_params`` with
``json_schema`` / ``regex`` / ``ebnf`` / ``structural_tag``, or a list of them for a batch)
or an OpenAI chat body (``response_format``, ``tools`` + ``tool_choice``). A line may also
wrap the body as ``{"body": ...}`` / ``{"request": ...}`` (an object or its JSON text).

Bytes are kept exactly: a ``/generate`` schema string is taken as is (it *is* the key), and
an OpenAI fragment is resent as parsed, key order kept, so that the server's ``json.dumps``
derives the same key from it as from the logged request.
"""

from __future__ import annotations

import gzip
import io
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemaops.errors import InputError
from schemaops.warm.plan import WarmItem, dedupe

_NATIVE_FIELDS = {
    "json_schema": "json",
    "regex": "regex",
    "ebnf": "ebnf",
    "structural_tag": "structural_tag",
}


@dataclass
class Found:
    """One grammar use in the log.

    ``key`` is the cache key string the server derives (for tools: as SGLang derives it
    without ``--tool-call-parser``); ``schema_text`` is the schema's own bytes as the server
    sees them (for a tool, ``json.dumps`` of its parameters); ``fragment`` is what to resend.
    """

    line: int
    api: str
    key_type: str
    key: str
    schema_text: str | None
    fragment: dict[str, Any]
    label: str = ""


@dataclass
class LogScan:
    """Everything found in a log, plus the lines that could not be used and why."""

    found: list[Found] = field(default_factory=list)
    records: int = 0
    unconstrained: int = 0
    input_errors: list[dict[str, Any]] = field(default_factory=list)


def open_text(path: str | Path) -> io.TextIOBase:
    """Open a JSONL file (``-`` for stdin, ``.gz`` accepted)."""
    if str(path) == "-":
        return sys.stdin  # type: ignore[return-value]
    p = Path(path)
    if not p.is_file():
        raise InputError(f"request log not found: {p}")
    if p.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(p, "rb"), encoding="utf-8")
    return open(p, encoding="utf-8")  # noqa: SIM115 - closed by the caller's with


def _unwrap(rec: Any) -> Any:
    for k in ("body", "request", "json", "payload"):
        if (
            isinstance(rec, dict)
            and k in rec
            and not ("sampling_params" in rec or "messages" in rec)
        ):
            inner = rec[k]
            return json.loads(inner) if isinstance(inner, str) else inner
    return rec


def _tool_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """SGLang 0.5.23 ``function_call/utils.py::_get_tool_schema``."""
    fn = tool.get("function") or {}
    params = fn.get("parameters") or {"type": "object", "properties": {}}
    return {
        "properties": {"name": {"type": "string", "enum": [fn.get("name")]}, "parameters": params},
        "required": ["name", "parameters"],
    }


def sglang_tool_key(
    tools: list[dict[str, Any]], tool_choice: Any, parallel_tool_calls: bool = True
) -> str | None:
    """The key SGLang 0.5.23 derives for ``tool_choice`` required/named without a tool parser.

    Mirrors ``get_json_schema_constraint``: an array of ``{name, parameters}`` objects (the
    named tool only, or ``anyOf`` over all tools plus their merged ``$defs``), ``maxItems: 1``
    when parallel tool calls are off, then ``json.dumps``. With ``--tool-call-parser`` the
    server builds a structural tag instead, which this does not predict.
    """
    if isinstance(tool_choice, dict):
        name = (tool_choice.get("function") or {}).get("name")
        for t in tools:
            if (t.get("function") or {}).get("name") == name:
                schema: dict[str, Any] = {"type": "array", "minItems": 1, "items": _tool_schema(t)}
                if not parallel_tool_calls:
                    schema["maxItems"] = 1
                return json.dumps(schema)
        return None
    if tool_choice == "required":
        schema = {
            "type": "array",
            "minItems": 1,
            "items": {"type": "object", "anyOf": [_tool_schema(t) for t in tools]},
        }
        if not parallel_tool_calls:
            schema["maxItems"] = 1
        defs: dict[str, Any] = {}
        for t in tools:
            defs.update(((t.get("function") or {}).get("parameters") or {}).get("$defs", {}))
        if defs:
            schema["$defs"] = defs
        return json.dumps(schema)
    return None


def _from_native(line: int, body: dict[str, Any]) -> list[Found]:
    sps = body.get("sampling_params")
    out = []
    for sp in sps if isinstance(sps, list) else [sps]:
        if not isinstance(sp, dict):
            continue
        for fname, ktype in _NATIVE_FIELDS.items():
            val = sp.get(fname)
            if val is None:
                continue
            if not isinstance(val, str):
                raise ValueError(
                    f"sampling_params.{fname} is not a string (SGLang expects the text)"
                )
            out.append(
                Found(
                    line,
                    "native",
                    ktype,
                    val,
                    val if ktype == "json" else None,
                    {fname: val},
                    _title(val),
                )
            )
            break  # SGLang uses the first present, in this order
    return out


def _from_openai(line: int, body: dict[str, Any]) -> list[Found]:
    rf = body.get("response_format")
    if isinstance(rf, dict) and rf.get("type") == "json_schema":
        js = rf.get("json_schema") or {}
        schema = js.get("schema", rf.get("schema"))
        if not isinstance(schema, dict):
            raise ValueError("response_format json_schema without a schema object")
        key = json.dumps(schema)
        return [
            Found(
                line,
                "openai",
                "json",
                key,
                key,
                {"response_format": rf},
                str(js.get("name") or _title(key)),
            )
        ]
    if isinstance(rf, dict) and rf.get("type") == "json_object":
        key = '{"type": "object"}'
        return [Found(line, "openai", "json", key, key, {"response_format": rf}, "json_object")]
    tools, choice = body.get("tools"), body.get("tool_choice")
    if isinstance(tools, list) and tools and (choice == "required" or isinstance(choice, dict)):
        frag: dict[str, Any] = {"tools": tools, "tool_choice": choice}
        if "parallel_tool_calls" in body:
            frag["parallel_tool_calls"] = body["parallel_tool_calls"]
        key = sglang_tool_key(tools, choice, body.get("parallel_tool_calls", True) is not False)
        if key is None:
            raise ValueError("tool_choice names a function that is not in tools")
        if isinstance(choice, dict):
            name = (choice.get("function") or {}).get("name", "?")
            chosen = [t for t in tools if (t.get("function") or {}).get("name") == name]
        else:
            name, chosen = "tools:required", tools
        params = [(t.get("function") or {}).get("parameters") for t in chosen]
        text = json.dumps(params[0]) if len(params) == 1 and isinstance(params[0], dict) else None
        return [Found(line, "openai", "json", key, text, frag, name)]
    return []


def _title(text: str) -> str:
    try:
        v = json.loads(text)
    except ValueError:
        return ""
    return str(v.get("title", "")) if isinstance(v, dict) else ""


def scan(path: str | Path) -> LogScan:
    """Read the log once, line by line (memory does not grow with the log's length)."""
    result = LogScan()
    with open_text(path) as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            result.records += 1
            try:
                body = _unwrap(json.loads(raw))
                if not isinstance(body, dict):
                    raise ValueError("not a JSON object")
                found = (
                    _from_native(n, body) if "sampling_params" in body else _from_openai(n, body)
                )
            except ValueError as exc:
                result.input_errors.append({"line": n, "reason": str(exc)[:300]})
                continue
            if not found:
                result.unconstrained += 1
            result.found.extend(found)
    return result


def iter_items(
    found: list[Found], registry_names: dict[str, str] | None = None
) -> Iterator[WarmItem]:
    """One WarmItem per use; ``registry_names`` maps a JSON value key to a registry name."""
    from schemaops.warm.drift import value_key  # drift owns JSON equality

    for f in found:
        match = None
        if registry_names and f.schema_text is not None:
            match = registry_names.get(value_key(f.schema_text))
        api = "native" if f.api == "native" else "openai"
        tools = "tools" in f.fragment  # key derived by us; a tool parser would change it
        yield WarmItem(
            name=match or f.label or f.key_type,
            api=api,  # type: ignore[arg-type]
            key_type=f.key_type,
            fragment=f.fragment,
            key=None if tools else f.key,
            source="log",
            matches=match,
            extra={"derived_key": f.key} if tools else {},
        )


def plan_from_log(
    path: str | Path, registry_names: dict[str, str] | None = None
) -> tuple[list[WarmItem], LogScan]:
    """The distinct items of a request log, each with how many requests used it.

    Variants of one schema (same JSON, other bytes) stay separate items: each is its own
    cache entry, so each must be warmed; their names get the key's hash to tell them apart.
    """
    sc = scan(path)
    items = dedupe(list(iter_items(sc.found, registry_names)))
    by_name: dict[str, int] = {}
    for it in items:
        by_name[it.name] = by_name.get(it.name, 0) + 1
    for it in items:
        if by_name[it.name] > 1:
            it.name = f"{it.name}@{it.short_hash[:8]}"
    return items, sc
