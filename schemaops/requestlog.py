"""Read a request log (JSONL) and find the grammar keys production traffic really uses.

Each line is one request body: an SGLang ``/generate`` body (``sampling_params`` with
``json_schema`` / ``regex`` / ``ebnf`` / ``structural_tag``, or a list of them for a batch)
or an OpenAI chat body (``response_format``, ``tools`` + ``tool_choice``, vLLM's
``structured_outputs``). A line may also
wrap the body as ``{"body": ...}`` / ``{"request": ...}`` (an object or its JSON text).

Bytes are kept exactly: a ``/generate`` schema string is taken as is (it *is* the key), and
an OpenAI fragment is resent as parsed, key order kept, so that the server's ``json.dumps``
derives the same key from it as from the logged request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemaops import jsonl
from schemaops.http.body import MAX_DEPTH, TooDeep, deeper_than, load_json

# One request body per line; a longer line is read past in pieces (``schemaops.jsonl``).
MAX_LINE_BYTES = 64 * 1024 * 1024

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


def _loads_or_say(text: str, what: str) -> Any:
    """``load_json``, its parse error prefixed with what was not JSON."""
    try:
        return load_json(text, what)
    except TooDeep:
        raise
    except ValueError as exc:
        raise ValueError(f"{what} is not JSON: {exc}") from None


def _obj(value: Any, what: str) -> dict[str, Any]:
    """``value`` if it is a JSON object; else a ``ValueError`` naming the field."""
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a JSON object (got {type(value).__name__})")
    return value


def _unwrap(rec: Any) -> Any:
    for k in ("body", "request", "json", "payload"):
        if (
            isinstance(rec, dict)
            and k in rec
            and not ("sampling_params" in rec or "messages" in rec)
        ):
            inner = rec[k]
            return _loads_or_say(inner, k) if isinstance(inner, str) else inner
    return rec


def _tool_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """SGLang 0.5.23 ``function_call/utils.py::_get_tool_schema``."""
    fn = _obj(tool.get("function") or {}, "tools[].function")
    params = fn.get("parameters") or {"type": "object", "properties": {}}
    return {
        "properties": {"name": {"type": "string", "enum": [fn.get("name")]}, "parameters": params},
        "required": ["name", "parameters"],
    }


def _check_tool(tool: Any) -> None:
    """A tool definition SGLang could build a schema from, else a ``ValueError`` saying why."""
    fn = _obj(_obj(tool, "tools[]").get("function") or {}, "tools[].function")
    params = fn.get("parameters")
    if params is not None:
        _obj(params, f"tools[{fn.get('name')!r}].function.parameters")
        _obj(params.get("$defs", {}), f"tools[{fn.get('name')!r}].function.parameters.$defs")
        if deeper_than(params, MAX_DEPTH):
            raise ValueError(f"tool parameters are nested deeper than {MAX_DEPTH} levels")


def sglang_tool_key(
    tools: list[dict[str, Any]], tool_choice: Any, parallel_tool_calls: bool = True
) -> str | None:
    """The key SGLang 0.5.23 derives for ``tool_choice`` required/named without a tool parser.

    Mirrors ``get_json_schema_constraint``: an array of ``{name, parameters}`` objects (the
    named tool only, or ``anyOf`` over all tools plus their merged ``$defs``), ``maxItems: 1``
    when parallel tool calls are off, then ``json.dumps``. With ``--tool-call-parser`` the
    server builds a structural tag instead, which this does not predict.
    """
    for t in tools:
        _check_tool(t)
    if isinstance(tool_choice, dict):
        name = _obj(tool_choice.get("function") or {}, "tool_choice.function").get("name")
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
        if sp is None:
            continue
        _obj(sp, "sampling_params")
        for fname, ktype in _NATIVE_FIELDS.items():
            val = sp.get(fname)
            if val is None:
                continue
            if not isinstance(val, str):
                raise ValueError(
                    f"sampling_params.{fname} is not a string (SGLang expects the text)"
                )
            title = ""
            if ktype == "json":
                try:
                    schema = load_json(val, f"sampling_params.{fname}")
                except TooDeep:
                    raise
                except ValueError as exc:
                    raise ValueError(f"sampling_params.{fname} is not JSON: {exc}") from None
                title = _title(schema)
            out.append(
                Found(
                    line,
                    "native",
                    ktype,
                    val,
                    val if ktype == "json" else None,
                    {fname: val},
                    title,
                )
            )
            break  # SGLang uses the first present, in this order
    return out


def _from_openai(line: int, body: dict[str, Any]) -> list[Found]:
    rf = body.get("response_format")
    if rf is not None:
        _obj(rf, "response_format")
    if isinstance(rf, dict) and rf.get("type") == "json_schema":
        js = _obj(rf.get("json_schema") or {}, "response_format.json_schema")
        schema = js.get("schema", rf.get("schema"))
        if not isinstance(schema, dict):
            raise ValueError("response_format json_schema without a schema object")
        if deeper_than(schema, MAX_DEPTH):
            raise ValueError(f"response_format schema is nested deeper than {MAX_DEPTH} levels")
        key = json.dumps(schema)
        return [
            Found(
                line,
                "openai",
                "json",
                key,
                key,
                {"response_format": rf},
                printable(str(js.get("name") or "")) or _title(schema),
            )
        ]
    if isinstance(rf, dict) and rf.get("type") == "json_object":
        key = '{"type": "object"}'
        return [Found(line, "openai", "json", key, key, {"response_format": rf}, "json_object")]
    so = body.get("structured_outputs")
    if so is not None and rf is None:
        found = _from_structured_outputs(line, _obj(so, "structured_outputs"))
        if found:
            return [found]
    tools, choice = body.get("tools"), body.get("tool_choice")
    if tools is not None and not isinstance(tools, list):
        raise ValueError(f"tools is not a JSON array (got {type(tools).__name__})")
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
        return [Found(line, "openai", "json", key, text, frag, printable(str(name)))]
    return []


def _from_structured_outputs(line: int, so: dict[str, Any]) -> Found | None:
    """vLLM's ``structured_outputs``: ``json`` as an object is keyed by ``json.dumps`` of it,
    as a string by its exact bytes; ``regex`` by itself (vLLM 0.32
    ``get_structured_output_key``). The legacy ``guided_*`` fields are not read: vLLM >= 0.12
    ignores them (the request runs unconstrained), so there is nothing to warm."""
    value = so.get("json")
    if isinstance(value, dict):
        if deeper_than(value, MAX_DEPTH):
            raise ValueError(f"structured_outputs.json is nested deeper than {MAX_DEPTH} levels")
        key = json.dumps(value)
        frag = {"structured_outputs": {"json": value}}
        return Found(line, "openai", "json", key, key, frag, _title(value))
    if isinstance(value, str):
        schema = _loads_or_say(value, "structured_outputs.json")
        frag = {"structured_outputs": {"json": value}}
        return Found(line, "openai", "json", value, value, frag, _title(schema))
    if value is not None:
        raise ValueError(f"structured_outputs.json is a {type(value).__name__}, not a schema")
    regex = so.get("regex")
    if isinstance(regex, str):
        return Found(line, "openai", "regex", regex, None, {"structured_outputs": so}, "regex")
    return None


def _title(schema: Any) -> str:
    return printable(str(schema.get("title", ""))) if isinstance(schema, dict) else ""


def scan(path: str | Path) -> LogScan:
    """Read the log once, line by line (memory does not grow with the log's length).

    Every non-blank line is a record and lands in exactly one place: a grammar use
    (``found``), ``unconstrained``, or ``input_errors`` with its line number and why (a byte
    that is not UTF-8, nesting deeper than ``MAX_DEPTH``, a value of the wrong type, schema
    text that is not JSON, a line longer than ``MAX_LINE_BYTES``). Only a log that cannot
    be opened or read on raises (``InputError``, exit 2). ``-`` is stdin; a gzipped log is
    recognised by its magic bytes or its ``.gz`` name.
    """
    result = LogScan()
    with jsonl.open_lines(path, MAX_LINE_BYTES, f"request log {path}") as lines:
        for n, raw in enumerate(lines, 1):
            if type(raw) is not jsonl.OverlongLine and not raw.strip():
                continue
            result.records += 1
            try:
                found = _scan_line(n, raw)
            except ValueError as exc:
                result.input_errors.append({"line": n, "reason": printable(str(exc))[:300]})
                continue
            if not found:
                result.unconstrained += 1
            result.found.extend(found)
    return result


def _scan_line(n: int, raw: bytes) -> list[Found]:
    if type(raw) is jsonl.OverlongLine:
        raise ValueError(f"line longer than {MAX_LINE_BYTES} bytes (skipped)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(jsonl.not_utf8(exc)) from None
    try:
        body = _unwrap(_loads_or_say(text, "line"))
        if not isinstance(body, dict):
            raise ValueError("not a JSON object")
        return _from_native(n, body) if "sampling_params" in body else _from_openai(n, body)
    except RecursionError:  # a fragment deep enough for json.dumps to refuse it
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None


def printable(text: str) -> str:
    """Lone surrogates (``"\\ud800"`` in the log) escaped, so any output can encode it."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# JSON value identity lives here, not in drift: drift imports this module, never the reverse.
def normalise(v: Any) -> Any:
    """Numbers compare as numbers (``1`` equals ``1.0``, as in JSON Schema); booleans stay."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, dict):
        return {k: normalise(x) for k, x in v.items()}
    if isinstance(v, list):
        return [normalise(x) for x in v]
    return v


def value_key(text: str | Any) -> str:
    """Identity of a JSON *value*: equal for texts that differ only in bytes, not meaning."""
    v = json.loads(text) if isinstance(text, str) else text
    return json.dumps(normalise(v), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
