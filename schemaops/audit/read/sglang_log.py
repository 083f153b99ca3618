"""SGLang's own JSON request log, read as records: what ``--log-requests
--log-requests-format json --log-requests-target DIR`` writes.

Format (SGLang 0.5.23 ``python/sglang/srt/utils/request_logger.py`` and ``utils/
log_utils.py``, read in the wheel the dev server installs, 2026-12-01; checked against the
file the dev server writes): one line per event, ``[YYYY-mm-dd HH:MM:SS] `` then
``json.dumps({"timestamp", "event", "rid", "obj", "out"})``, in ``DIR/HOSTNAME_RANK.log``
rotated every hour by renaming (``TimedRotatingFileHandler(when="H")``). Events:
``request.received`` and ``request.received.openai`` (no output) and ``request.finished``
with the request (``obj``: ``sampling_params.json_schema``, the schema string as the server
keys it) and the answer (``out``: ``text``, ``meta_info``; a batch is a list). A request
whose grammar failed or is cached as invalid finishes with ``meta_info.finish_reason`` =
``{"type": "abort", "message": "Failed to compile json grammar: ...", "status_code": 400}``
and a meaningless one-token ``text``.

``adapt`` turns each such line into the record shape ``audit`` reads (``schema``, ``text``,
``meta_info``): the schema named by its registry name (the ``json_schema`` string matched
exactly, then by its compact and its key-sorted serialisation, against each registry
schema's and wire string's), or ``unregistered:<sha256 prefix>`` (an input error: not in
the registry); an aborted request becomes ``{"schema", "error": {"message"}}`` (no output:
an input error, and the engine error ``poison.py`` looks for), as in a log of the answers.
Events that are no structured output (received events, requests without ``json_schema``,
such as health checks) are dropped and counted. Any other line is left as it is. ``watch``
adapts each batch of lines with ``adapt``; ``audit`` meets the lines one at a time in its loop
(``audit/run/lines.py``) and asks ``LogLines.record`` only of a line that is not JSON, so an
audit of plain records pays nothing for it.

``--log-requests-level`` (``arg_groups/fields/observability.py``): 3 logs every output whole;
the default 2 cuts strings over 2,048 characters to their two ends around "...": such an
output is an input error naming the flag (never a failure), and such a ``json_schema`` is
named by the registry schema its two ends match, when exactly one does. Levels 0 and 1 log
no output text at all: nothing to classify.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import orjson

from schemaops.strings import sha256_hex

#: ``--log-requests-level 2`` (SGLang's default) keeps a longer string as its first and last
#: 1,024 characters around "..." (``_transform_data_for_logging``, max_length 2048)
CUT = 2048
PREFIX = re.compile(rb'\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] (?=\{"timestamp": )')
CUT_OUTPUT = (
    "the request log cut this output to 2,048 characters (--log-requests-level 2, SGLang's "
    "default): run the server with --log-requests-level 3"
)
#: how SGLang's tool-call constraint starts as its request log writes it (``json.dumps`` of
#: ``get_json_schema_constraint``: ``sglang_tools.py``)
TOOL_CONSTRAINT = '{"type": "array", "minItems": 1, "items": {'
#: json_schema strings whose name was looked up, at most (then the memo starts over)
MEMO_MAX = 4096
#: a json_schema string longer than this is memoised by its length and sha256, not by its
#: text: the memo then holds at most MEMO_MAX x (this x 4 bytes + a name), about 8 MiB, where
#: whole strings held up to 4,096 schemas (600 distinct 1 MB schemas: 1.26 GB)
MEMO_KEY_CHARS = 512


class SchemaNames:
    """``json_schema`` string -> registry name (the registry is read on first use)."""

    def __init__(self, registry: str, fixed: str | None = None) -> None:
        self.registry = registry
        self.fixed = fixed
        self._by_text: dict[str, str] | None = None
        self._memo: dict[str | tuple[int, bytes], str] = {}
        self.error: str | None = None

    def _load(self) -> dict[str, str]:
        from schemaops.registry import inspect_registry
        from schemaops.registry.model import canonical_text

        by_text: dict[str, str] = {}
        # what loads is named; a file with problems names nothing (said once in ``error``)
        reg, problems = inspect_registry(self.registry, examples=False)
        if problems:
            first = problems[0]
            self.error = (
                f"registry {self.registry}: {len(problems)} problem(s), so a request with a"
                f" schema of a file that has one is named unregistered; first:"
                f" {first.get('file')}: {first.get('reason')}"
            )[:300]
        for s in reg:
            texts = {canonical_text(s.schema), _sorted(s.schema)}
            try:
                wire = s.wire("native")
                texts |= {wire, _sorted(json.loads(wire))}
            except Exception:  # noqa: S110 - a schema without a wire string: its own text only
                pass
            for t in texts:
                by_text.setdefault(t, s.name)
        return by_text

    def name(self, text: str) -> str:
        if self.fixed is not None:
            return self.fixed
        key = memo_key(text)
        got = self._memo.get(key)
        if got is not None:
            return got
        if self._by_text is None:
            self._by_text = self._load()
        got = self._by_text.get(text)
        if got is None:
            try:
                value = json.loads(text)
                compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
                got = self._by_text.get(compact) or self._by_text.get(_sorted(value))
            except (ValueError, RecursionError):
                pass
        if got is None and is_cut(text):  # level 2 cut the schema: its two ends name it
            head, tail = text[: CUT // 2], text[-(CUT // 2) :]
            found = {n for t, n in self._by_text.items() if t.startswith(head) and t.endswith(tail)}
            got = found.pop() if len(found) == 1 else None
        if got is None:
            got = f"unregistered:{sha256_hex(text)[:12]}"
        if len(self._memo) >= MEMO_MAX:
            self._memo.clear()
        self._memo[key] = got
        return got


def memo_key(text: str) -> str | tuple[int, bytes]:
    """What the name memo keeps of a ``json_schema`` string: the text when short, else its
    length and sha256 (a tuple, so it never equals a short text)."""
    if len(text) <= MEMO_KEY_CHARS:
        return text
    return len(text), hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def is_cut(text: str) -> bool:
    """A string the level-2 request log cut in the middle."""
    return len(text) == CUT + 3 and text[CUT // 2 : CUT // 2 + 3] == "..."


def _sorted(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


#: what ``LogLines.record`` answers for a line that is no request-log line
NOT_LOGGED = b""


class LogLines:
    """Request-log lines met one at a time in an audit's input (``audit_lines``): the
    registry is read for names only when the first such line comes, so an audit of plain
    records pays nothing."""

    def __init__(self, registry: str, fixed: str | None = None) -> None:
        self.registry, self.fixed = registry, fixed
        self.names: SchemaNames | None = None

    def record(self, raw: bytes) -> bytes | None:
        """``raw`` as a record line; None for an event that is no structured output (to be
        counted and dropped); ``NOT_LOGGED`` when ``raw`` is no request-log line."""
        m = PREFIX.match(raw) if raw[:1] == b"[" else None
        if m is None:
            return NOT_LOGGED
        if self.names is None:
            self.names = SchemaNames(self.registry, self.fixed)
        return _record(raw[m.end() :], self.names)

    def registry_error(self) -> str | None:
        """Why the registry could not name request-log schemas, once (then None)."""
        if self.names is None or self.names.error is None:
            return None
        error, self.names.error = self.names.error, None
        return error


def adapt(lines: list[bytes], names: SchemaNames) -> tuple[list[bytes], int]:
    """The lines with SGLang request-log lines turned into records; (lines, dropped)."""
    out: list[bytes] = []
    dropped = 0
    match = PREFIX.match
    for raw in lines:
        m = match(raw) if raw[:1] == b"[" else None
        if m is None:
            out.append(raw)
            continue
        rec = _record(raw[m.end() :], names)
        if rec is None:
            dropped += 1
        else:
            out.append(rec)
    return out, dropped


def _record(body: bytes, names: SchemaNames) -> bytes | None:
    try:
        ev = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body  # a broken event: the audit reports it as an input error
    if not isinstance(ev, dict) or ev.get("event") != "request.finished":
        return None
    obj, out = ev.get("obj"), ev.get("out")
    if not isinstance(obj, dict):
        return body
    params = obj.get("sampling_params")
    if isinstance(out, list):  # a batch: one record per prompt (a JSON array line)
        plist = params if isinstance(params, list) else [params] * len(out)
        recs = [_one(p, o, names) for p, o in zip(plist, out, strict=False)]
        kept = [r for r in recs if r is not None]
        return orjson.dumps(kept) if kept else None
    rec = _one(params, out, names, ev.get("rid"))
    return None if rec is None else orjson.dumps(rec)


def _one(params: Any, out: Any, names: SchemaNames, rid: Any = None) -> dict | None:
    js = params.get("json_schema") if isinstance(params, dict) else None
    if not isinstance(js, str):
        return None  # not a structured output (or regex/ebnf: not a JSON Schema to check)
    rec: dict[str, Any] = {"schema": names.name(js)}
    if rid is not None:
        rec["id"] = rid
    if not isinstance(out, dict):
        rec["error"] = {"message": "request log: no answer recorded"}
        return rec
    meta = out.get("meta_info")
    fr = meta.get("finish_reason") if isinstance(meta, dict) else None
    if isinstance(fr, dict) and fr.get("type") == "abort":
        rec["error"] = {
            "message": str(fr.get("message") or "aborted"),
            "code": fr.get("status_code"),
        }
        return rec
    text = out.get("text")
    if isinstance(text, str) and is_cut(text):  # not the output: an input error, never a failure
        rec["error"] = {"message": CUT_OUTPUT}
        return rec
    if js.startswith(TOOL_CONSTRAINT):  # required/named tool calls (sglang_tools.py)
        from schemaops.audit.read import sglang_tools

        try:
            found = sglang_tools.tools_of(json.loads(js))
        except (ValueError, RecursionError):
            found = None
        if found is not None:
            return sglang_tools.record(found[0], found[1], text, meta, rid)
    rec["text"] = text
    rec["meta_info"] = meta
    return rec
