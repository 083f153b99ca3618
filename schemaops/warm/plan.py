"""What to warm: one ``WarmItem`` per distinct cache key, and the HTTP request that warms it.

The item keeps the request *fragment* that decides the cache key (``sampling_params`` keys
for ``/generate``; ``response_format`` or ``tools`` + ``tool_choice`` for the OpenAI path)
exactly as the application sends it. The rest of the request (prompt, ``max_new_tokens: 1``,
DP routing) is filled in here and does not touch the key.

How SGLang 0.5.23 derives the key (read in its source):

- ``/generate``: ``("json", sampling_params["json_schema"])``, the string as sent.
- ``/v1/chat/completions`` with ``response_format: json_schema``:
  ``json.dumps(response_format.json_schema.schema)`` (``sglang.utils.convert_json_schema_to_str``),
  so key order matters and whitespace/escaping of the request body does not.
- ``tools`` with ``tool_choice`` ``"required"`` or a named function (no ``--tool-call-parser``):
  ``json.dumps`` of an array schema built from the tools (``function_call/utils.py``
  ``get_json_schema_constraint``): for a named function it holds that tool only, for
  ``"required"`` an ``anyOf`` over all tools, plus ``maxItems: 1`` when
  ``parallel_tool_calls`` is false. With ``--tool-call-parser`` the server builds a
  structural tag instead. Either way, sending the same tools/tool_choice as the application
  makes the server derive the same key, which is why items carry the fragment, not the key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from schemaops.http.answer import NATIVE_PATH, OPENAI_PATH
from schemaops.registry import Registry
from schemaops.strings import sha256_hex

Api = Literal["native", "openai"]
ToolsMode = Literal["off", "named", "required"]
# Where an OpenAI chat request carries the schema. vLLM 0.32 keys a schema given as an object
# (response_format, or structured_outputs.json as an object) by json.dumps of the object as
# received, and a schema given as a string (structured_outputs.json) by its exact bytes
# (vllm/v1/structured_output/request.py get_structured_output_key). SGLang has
# response_format only.
SchemaField = Literal["response_format", "structured_outputs", "structured_outputs_string"]
SCHEMA_FIELDS = ("response_format", "structured_outputs", "structured_outputs_string")

PROMPT = "Hi"
# SGLang 0.5.23 reads the DP rank from the body (`routed_dp_rank`, /generate and OpenAI) and,
# on the OpenAI path, from this header too; the header is what other servers ignore quietly.
DP_RANK_HEADER = "X-Data-Parallel-Rank"


@dataclass
class WarmItem:
    """One distinct cache key to warm.

    ``name`` is what reports show (the registry name; for log items the matching registry
    name or a hash). ``key`` is the exact key string when the client can know it (always for
    ``/generate`` and ``response_format``; ``None`` for tools, which the server derives).
    """

    name: str
    api: Api
    key_type: str
    fragment: dict[str, Any]
    key: str | None = None
    source: str = "registry"
    seen: int = 1
    matches: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def identity(self) -> str:
        """Dedupe identity: the cache key when known, else the API path plus the fragment.

        SGLang compiles a key again for each concurrent request that misses the cache (its
        cache holds finished grammars only), so one key must never be sent twice at once.
        The key is the same whichever endpoint derived it, hence no API path in it.
        """
        if self.key is not None:
            return f"{self.key_type}\n{self.key}"
        return self.api + "\n" + json.dumps(self.fragment, ensure_ascii=False)

    @property
    def short_hash(self) -> str:
        return sha256_hex(self.identity)[:10]


def native_item(name: str, key_type: str, key: str, **kw: Any) -> WarmItem:
    """An item for ``/generate``: the key string goes into ``sampling_params`` unchanged."""
    field_name = "json_schema" if key_type == "json" else key_type
    return WarmItem(
        name=name, api="native", key_type=key_type, fragment={field_name: key}, key=key, **kw
    )


def response_format_item(name: str, schema: Any, **kw: Any) -> WarmItem:
    """An OpenAI item: ``response_format: json_schema`` carrying the parsed schema as is.

    The server serialises it with ``json.dumps`` (", " and ": " separators, key order as
    sent), which is the registry's ``wire("openai")`` string when ``schema`` is the registry's
    bundled schema.
    """
    fragment = {
        "response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
    }
    return WarmItem(
        name=name, api="openai", key_type="json", fragment=fragment, key=json.dumps(schema), **kw
    )


def structured_outputs_item(
    name: str, schema: Any, as_string: str | None = None, **kw: Any
) -> WarmItem:
    """A vLLM item: ``structured_outputs.json`` with the schema as an object (key
    ``json.dumps(schema)``, the same entry as ``response_format``) or, with ``as_string``,
    as that exact string (the key is those bytes: another entry unless they are equal)."""
    value: Any = as_string if as_string is not None else schema
    key = as_string if as_string is not None else json.dumps(schema)
    return WarmItem(
        name=name,
        api="openai",
        key_type="json",
        fragment={"structured_outputs": {"json": value}},
        key=key,
        **kw,
    )


def key_paths(native_wire: str, bundled: Any) -> dict[str, str]:
    """The cache key each request path of each engine derives from one registry schema (its
    exact string): the engine models' ``cache_keys``, SGLang's then vLLM's."""
    from schemaops.engines import ENGINES

    out: dict[str, str] = {}
    for engine in ENGINES.values():
        out.update(engine.cache_keys(native_wire, bundled))
    return out


def tool_definition(name: str, schema: Any, description: str = "") -> dict[str, Any]:
    """The OpenAI tool definition an agent sends for a registry schema used as arguments."""
    fn: dict[str, Any] = {"name": name}
    if description:
        fn["description"] = description
    fn["parameters"] = schema
    return {"type": "function", "function": fn}


def tool_items(
    tools: list[dict[str, Any]], mode: ToolsMode, parallel_tool_calls: bool | None = None
) -> list[WarmItem]:
    """Items for tool calling, sending ``tools`` exactly as given (as the application does).

    ``named``: one request per tool with ``tool_choice`` naming it (each is its own key).
    ``required``: one request with ``tool_choice: "required"`` (one key over all tools).
    """
    extra: dict[str, Any] = {}
    if parallel_tool_calls is not None:
        extra["parallel_tool_calls"] = parallel_tool_calls
    if mode == "required":
        names = [t.get("function", {}).get("name", "?") for t in tools]
        frag = {"tools": tools, "tool_choice": "required", **extra}
        return [
            WarmItem(
                name="tools:required",
                api="openai",
                key_type="json",
                fragment=frag,
                extra={"tools": names},
            )
        ]
    items = []
    for t in tools:
        name = t.get("function", {}).get("name", "?")
        choice = {"type": "function", "function": {"name": name}}
        frag = {"tools": tools, "tool_choice": choice, **extra}
        items.append(WarmItem(name=name, api="openai", key_type="json", fragment=frag))
    return items


def plan_from_registry(
    registry: Registry,
    api: Api = "native",
    tools_mode: ToolsMode = "off",
    tools: list[dict[str, Any]] | None = None,
    parallel_tool_calls: bool | None = None,
    schema_field: SchemaField = "response_format",
) -> list[WarmItem]:
    """The items for every registry schema on one API path.

    ``schema_field`` (``openai`` only): ``response_format`` (default), ``structured_outputs``
    (the bundled schema as an object) or ``structured_outputs_string`` (the registry's
    canonical compact ``wire("native")`` text, what ``JSON.stringify`` and most non-Python
    clients send: vLLM keys it by those bytes, apart from the object's key).

    ``native`` uses ``Schema.wire("native")``; ``openai`` sends ``Schema.bundled()`` so the
    server's ``json.dumps`` reproduces ``wire("openai")``. With ``tools_mode`` other than
    ``off`` the registry schemas are tool parameters (or ``tools`` gives the application's
    own tool definitions verbatim).
    """
    if tools_mode != "off":
        if api != "openai":
            raise ValueError("tool calling is an OpenAI API path: use --api openai")
        defs = (
            tools
            if tools is not None
            else [tool_definition(s.name, s.bundled(), s.description) for s in registry]
        )
        return dedupe(tool_items(defs, tools_mode, parallel_tool_calls))
    if api == "native":
        items = [native_item(s.name, "json", s.wire("native")) for s in registry]
    elif schema_field == "structured_outputs":
        items = [structured_outputs_item(s.name, s.bundled()) for s in registry]
    elif schema_field == "structured_outputs_string":
        items = [
            structured_outputs_item(s.name, s.bundled(), as_string=s.wire("native"))
            for s in registry
        ]
    else:
        # the key is json.dumps(bundled) == wire("openai") (tests/test_warm_fromlog.py checks it)
        items = [response_format_item(s.name, s.bundled()) for s in registry]
    return dedupe(items)


def dedupe(items: list[WarmItem]) -> list[WarmItem]:
    """Merge items with the same identity, adding up how often each was seen."""
    out: dict[str, WarmItem] = {}
    for it in items:
        prev = out.get(it.identity)
        if prev is None:
            out[it.identity] = it
        else:
            prev.seen += it.seen
    return list(out.values())


def build_request(
    item: WarmItem, *, model: str | None = None, dp_rank: int | None = None, max_tokens: int = 1
) -> tuple[str, dict[str, Any], dict[str, str]]:
    """``(path, json_body, headers)`` of a 1-token request for ``item``.

    ``max_new_tokens: 1`` is enough: SGLang compiles the grammar when the request arrives and
    answers only after it compiled (200) or failed (400), before the one token is decoded.
    """
    headers: dict[str, str] = {}
    if item.api == "native":
        sp = {"max_new_tokens": max_tokens, "temperature": 0.0, **item.fragment}
        body: dict[str, Any] = {"text": PROMPT, "sampling_params": sp}
        if dp_rank is not None:
            body["routed_dp_rank"] = dp_rank
        return NATIVE_PATH, body, headers
    body = {
        "model": model or "default",
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens,
        "temperature": 0.0,
        **item.fragment,
    }
    if dp_rank is not None:
        headers[DP_RANK_HEADER] = str(dp_rank)
    return OPENAI_PATH, body, headers


def baseline_request(api: Api, *, model: str | None = None, dp_rank: int | None = None):
    """An unconstrained 1-token request: the latency a cached grammar adds almost nothing to."""
    return build_request(
        WarmItem(name="(baseline)", api=api, key_type="none", fragment={}),
        model=model,
        dp_rank=dp_rank,
    )
