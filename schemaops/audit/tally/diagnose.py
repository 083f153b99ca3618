"""Diagnoses of failed outputs: the production failure modes a plain category mislabels.

Run only for failed outputs (never on the ok path), from the failing text, its outcome and
the record around it (finish reason, the chat message). Each diagnosis is counted and names
what removes it on the server (``FIXES``). Records without these fields (no finish reason,
no message) get only the text-based diagnoses, so plain JSONL audits as before.

- ``whitespace_runaway``: a whitespace run of ``WS_RUN`` or more characters reaching the end
  of the output, or anywhere in an output stopped by ``finish_reason: length``: a grammar
  with free whitespace let the model pad until the token budget ran out.
- ``control_char_in_string``: a raw control character (U+0000..U+001F) inside a JSON
  string; seen from xgrammar's string grammar with ``minLength``/``maxLength``.
- ``truncated_at_max_tokens`` / ``truncated_other``: a ``truncated`` parse failure split by
  whether the server said ``finish_reason: length``; the first carries ``budgets``, a
  recommended ``max_tokens`` per schema whose outputs were cut (``budget.py``).
- ``json_in_reasoning_content``: content empty while ``reasoning_content`` holds JSON.
- ``tool_calls_finish_without_calls``: no tool call although ``finish_reason: tool_calls``,
  or although ``content`` holds a model's tool-call markup (``TOOL_MARKUP``) and the answer
  was not cut at ``finish_reason: length``: vLLM answers ``stop`` when its parser missed it.
- ``prose_with_tool_calls``: prose in ``content`` next to tool calls.
- ``unconstrained_output``: a parse failure no JSON grammar lets through (``UNCONSTRAINED``:
  prose before the JSON, code fences, text after it, Python literals, broken syntax), unless
  a diagnosis above explains the output or it was cut (``finish_reason: length``): the request
  reached the model without its schema enforced. Truncation is not one (a grammar does not
  stop ``max_tokens``).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from schemaops.audit.tally import budget
from schemaops.audit.tally.ranking import ranked
from schemaops.audit.verdict.classify import PARSE, Classification

WS_RUN = 64
_WS_RUN_RE = re.compile(rf"\s{{{WS_RUN},}}")

FIXES = {
    "whitespace_runaway": (
        "SGLang: --constrained-json-disable-any-whitespace (xgrammar, llguidance) or "
        "--constrained-json-max-whitespace-cnt N (xgrammar); vLLM: --structured-outputs-config "
        "'{\"disable_any_whitespace\": true}' (xgrammar, guidance)"
    ),
    "control_char_in_string": (
        "xgrammar's string grammar with minLength/maxLength lets raw control characters "
        "through: SGLang --grammar-backend llguidance, vLLM --structured-outputs-config "
        '\'{"backend": "guidance"}\', or check lengths after decoding instead'
    ),
    "truncated_at_max_tokens": (
        "the token budget ran out: raise max_tokens (max_new_tokens on /generate) for this "
        "schema, and remove free whitespace if whitespace_runaway is counted too"
    ),
    "truncated_other": (
        "cut without finish_reason length: a stop string inside the JSON, an abort, or a "
        "client/proxy ending the stream; check stop sequences and timeouts"
    ),
    "json_in_reasoning_content": (
        "a reasoning parser moved the answer to reasoning_content: SGLang without "
        "--reasoning-parser or with separate_reasoning: false per request; vLLM without "
        "--reasoning-parser"
    ),
    "tool_calls_finish_without_calls": (
        "the tool-call parser did not recognise the call: --tool-call-parser must match the "
        "model's format (vLLM also --enable-auto-tool-choice)"
    ),
    "prose_with_tool_calls": (
        'tool_choice "auto" lets prose beside calls: tool_choice "required" or a named '
        "function makes the server constrain the whole answer to calls"
    ),
    # SGLang: https://docs.sglang.io/docs/advanced_features/structured_outputs.md (a schema per
    # request: response_format json_schema, or json_schema in /generate's sampling_params; the
    # server's --grammar-backend, xgrammar by default). vLLM:
    # https://docs.vllm.ai/en/latest/features/structured_outputs/ (response_format json_schema
    # or the structured_outputs request field; --structured-outputs-config's backend).
    "unconstrained_output": (
        "constrained decoding is off on this path: send the schema with every request "
        '(OpenAI-compatible: response_format {"type": "json_schema", ...}; SGLang /generate: '
        'sampling_params.json_schema; vLLM: structured_outputs {"json": ...}) to a server '
        "with a grammar backend (SGLang: --grammar-backend xgrammar; vLLM: "
        '--structured-outputs-config \'{"backend": "xgrammar"}\'); `schemaops probe` '
        "shows which request paths enforce a schema"
    ),
}

#: parse failures a JSON grammar makes impossible (``classify.SUBTYPES``); ``empty`` and
#: ``truncated`` are not among them (a reasoning parser, a token budget)
UNCONSTRAINED = frozenset(
    {"prose_prefix", "code_fence", "trailing_text", "non_standard_literal", "invalid_syntax"}
)


# The start of a tool call in the formats vLLM's and SGLang's tool parsers read (hermes/Qwen,
# Mistral, Llama 3.x, DeepSeek V3, functionary/Llama 4 style): in content, a call not parsed.
TOOL_MARKUP = (
    "<tool_call>",
    "[TOOL_CALLS]",
    "<|python_tag|>",
    "<｜tool▁calls▁begin｜>",
    "<function=",
)


def finish_reason(rec: Any) -> str | None:
    """``finish_reason`` of an OpenAI choice, SGLang ``meta_info`` or a flat record."""
    if not isinstance(rec, dict):
        return None
    fr: Any = None
    choices = rec.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        fr = choices[0].get("finish_reason")
    elif isinstance(rec.get("meta_info"), dict):
        fr = rec["meta_info"].get("finish_reason")
    else:
        fr = rec.get("finish_reason")
    if isinstance(fr, dict):
        fr = fr.get("type")
    return fr if isinstance(fr, str) else None


def _message(rec: Any) -> dict | None:
    choices = rec.get("choices") if isinstance(rec, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        msg = choices[0].get("message")
        return msg if isinstance(msg, dict) else None
    return None


_CONTROL = re.compile("[\x00-\x1f]")
# The start of one JSON string up to its first raw control character: from an opening quote,
# runs of characters other than a quote, a backslash or a control character, each backslash
# taking the next character whatever it is. What follows a match is the string's closing
# quote, a raw control character inside it, or the end of the text. The unrolled form
# (``[^...]*(?:\\.[^...]*)*``) never backtracks. A regex rather than a walk over the
# characters (``tests/test_audit_diagnoses.py`` holds the two equal): the walk cost 15 us per
# parse failure, a sixth of a failure's whole cost.
_STRING_HEAD = re.compile(r'"[^"\\\x00-\x1f]*(?:\\.[^"\\\x00-\x1f]*)*', re.DOTALL)


def control_char_in_string(text: str) -> bool:
    """Whether a raw control character sits inside a JSON string of ``text``."""
    if _CONTROL.search(text) is None:  # none anywhere (a scan in C): nothing to place
        return False
    if "\\" not in text:  # no escape: every other quote opens a string (the last may be cut)
        return _CONTROL.search("".join(text.split('"')[1::2])) is not None
    pos, end = 0, len(text)
    while (m := _STRING_HEAD.search(text, pos)) is not None:
        pos = m.end()
        if pos >= end:
            return False  # an unterminated string, or one ending in a lone backslash
        if text[pos] != '"':
            return text[pos] < " "
        pos += 1  # closed: the next quote outside a string opens the next one
    return False


def _looks_json(text: str) -> bool:
    s = text.strip()
    return s[:1] in ("{", "[") or "```json" in s or bool(re.search(r"[{\[]\s*\"", s))


def diagnose(rec: Any, text: str, outcome: Classification) -> list[str]:
    """The diagnoses of one failed output (often none)."""
    found: list[str] = []
    # a plain record (a text and its schema: no choices, no meta_info, no finish_reason) has
    # neither a finish reason nor a message, and most failures are of such records
    plain = rec.__class__ is dict and not (
        "choices" in rec or "meta_info" in rec or "finish_reason" in rec
    )
    fr = None if plain else finish_reason(rec)
    if outcome.subtype == "truncated":
        found.append("truncated_at_max_tokens" if fr == "length" else "truncated_other")
    if (text[-1:].isspace() and len(text) - len(text.rstrip()) >= WS_RUN) or (
        fr == "length" and _WS_RUN_RE.search(text)
    ):
        found.append("whitespace_runaway")
    if outcome.category == PARSE and control_char_in_string(text):
        found.append("control_char_in_string")
    msg = None if plain else _message(rec)
    if msg is not None:
        content = msg.get("content") if isinstance(msg.get("content"), str) else ""
        calls = msg.get("tool_calls") if isinstance(msg.get("tool_calls"), list) else []
        if text == content:  # the failing output is the message content, not a call's args
            reasoning = msg.get("reasoning_content") or msg.get("reasoning")
            if not content.strip() and isinstance(reasoning, str) and _looks_json(reasoning):
                found.append("json_in_reasoning_content")
            if not calls and (
                fr == "tool_calls" or (fr != "length" and any(m in content for m in TOOL_MARKUP))
            ):
                found.append("tool_calls_finish_without_calls")
            if calls and content.strip():
                found.append("prose_with_tool_calls")
    # a cut answer breaks off anywhere, also where the parser reports broken syntax (a string
    # cut after a backslash): the cut explains it, not a missing grammar
    if (
        outcome.category == PARSE
        and outcome.subtype in UNCONSTRAINED
        and fr != "length"
        and not found
    ):
        found.append("unconstrained_output")
    return found


def summary(tally: Any) -> dict[str, dict[str, Any]]:
    """``{diagnosis: {"count", "fix"}}``, most frequent first, then ``poisoned`` (a count of
    schemas, with ``schemas``: each one's first failing line, failures, ok outputs before);
    ``truncated_at_max_tokens`` carries ``budgets`` (``budget.budgets``)."""

    out: dict[str, dict[str, Any]] = {
        k: {"count": n, "fix": FIXES[k]} for k, n in ranked(tally.diagnoses)
    }
    cut = out.get("truncated_at_max_tokens")
    if cut is not None:  # where the budget ran out: how large it must be, per schema
        cut["budgets"] = budget.budgets(getattr(tally, "lengths", {}))
    found = poisoned(tally.fail_runs, tally.by_schema)
    if found:
        out["poisoned"] = {"count": len(found), "fix": FIXES["poisoned"], "schemas": found}
    return out


# --- poisoned schemas: every output fails from some record on ---------------------------
#
# A schema whose compile failed or timed out is cached as invalid by SGLang: from then on
# every request with it fails. In the output log that is a run of failures reaching the end
# of the input for that schema. Tracked on the failure path only: ``note_run`` per failed
# output with the number of ok outputs of that schema so far (a change means an ok output
# came in between), ``close_runs`` at the end of a chunk drops runs an ok output ended, and
# ``merge_runs`` joins chunks of ``--jobs`` in file order. A run is [first line, failures,
# ok outputs of the schema before it].

POISON_MIN = 5  # failures in a row at the end, at least
POISON_CHANCE = 1e-3  # ... and a tail that long is this unlikely at the schema's earlier rate

FIXES["poisoned"] = (
    "every output of the schema fails from the given line on, as when SGLang caches a schema "
    "as invalid after a failed or timed-out compile (kept until /flush_cache or a restart): "
    "flush or restart, then `schemaops warm` the schema so no request waits on its compile"
)


def note_run(runs: dict[str, list[int]], schema: str, line: int, ok_so_far: int) -> None:
    """Count one failed output of ``schema`` at ``line`` (``ok_so_far``: its ok outputs yet)."""
    run = runs.get(schema)
    if run is None or run[2] != ok_so_far:
        runs[schema] = [line, 1, ok_so_far]
    else:
        run[1] += 1


def close_runs(runs: dict[str, list[int]], ok_counts: dict[str, int]) -> None:
    """Drop the runs an ok output ended (the chunk's final ok counts differ)."""
    for schema in [s for s, run in runs.items() if ok_counts.get(s, 0) != run[2]]:
        del runs[schema]


def merge_runs(
    mine: dict[str, list[int]],
    theirs: dict[str, list[int]],
    my_by_schema: dict[str, Counter],
    their_by_schema: dict[str, Counter],
    line_offset: int = 0,
) -> None:
    """Join a later chunk's closed runs into an earlier chunk's (before by_schema merges);
    the later chunk's line numbers are shifted by ``line_offset``."""
    for schema in set(mine) | set(their_by_schema):
        their = their_by_schema.get(schema) or Counter()
        run = theirs.get(schema)
        if run is None:
            if sum(their.values()) and schema in mine:
                del mine[schema]  # the later chunk has outputs of it and ends with an ok one
            continue
        my_ok = (my_by_schema.get(schema) or Counter()).get("ok", 0)
        if their.get("ok", 0) == 0 and schema in mine:
            mine[schema][1] += run[1]  # all the later chunk's outputs continue the run
        else:
            mine[schema] = [run[0] + line_offset, run[1], run[2] + my_ok]


def poisoned(runs: dict[str, list[int]], by_schema: dict[str, Counter]) -> list[dict[str, Any]]:
    """Schemas whose outputs all fail from some line on, unlikely at their earlier rate."""
    out = []
    for schema, (line, n, ok_before) in sorted(runs.items()):
        total = sum((by_schema.get(schema) or Counter()).values())
        before = total - n
        rate = (before - ok_before) / before if before else 1.0
        if n >= POISON_MIN and (ok_before == 0 or rate**n < POISON_CHANCE):
            out.append(
                {"schema": schema, "since_line": line, "failures": n, "ok_before": ok_before}
            )
    return out


def terminal_lines(doc: dict[str, Any]) -> list[str]:
    """Rich-markup lines for the terminal report: each diagnosis, its count and its fix.
    Names come from logs and file names: control characters are written as escapes
    (``visible``; a tool name holding ``ESC]0;...`` set the window title), markup escaped."""
    from rich.markup import escape

    from schemaops.audit.report.text import visible

    def shown(text: object) -> str:
        return escape(visible(text))

    lines = []
    for name, d in (doc.get("diagnoses") or {}).items():
        what = f"{d['count']} schema(s)" if name == "poisoned" else f"{d['count']} output(s)"
        lines.append(f"[yellow]{shown(name)}[/yellow]: {what}; fix: {shown(d['fix'])}")
        for b in d.get("budgets", [])[:10]:
            lines.append(f"  {shown(budget.line(b))}")
        for s in d.get("schemas", [])[:10]:
            lines.append(
                f"  {shown(s['schema'])}: every output fails from line {s['since_line']} "
                f"on ({s['failures']} failures, {s['ok_before']} ok before)"
            )
    return lines
