"""``check``/``compare`` cases for tool sets under ``tool_choice`` auto with a tool parser.

Why apart from ``toolsets.py``: there the engines compile a JSON schema, measured in
``compare``'s isolated workers; here they compile a *structural tag*
(``engines/structural_tags.py``), compiled and walked in this process (``tooltags.py``).
One case per tool set, engine and parser where the engine constrains ``auto`` (and for
``required:PARSER``, which both engines compile as the same kind of tag), named
``NAME.tools[ENGINE MODE:PARSER]`` and judged by ``gate.evaluate`` like a schema, plus the
unknown-tool verdict; where the engine does not constrain ``auto``, a note with the
condition that would (never a pass without a walk).
"""

from __future__ import annotations

from typing import Any

from schemaops.check.gate import CheckCase, Problem, evaluate
from schemaops.check.tooltags import UNKNOWN_TOOL, WRONG_TOOL, tag_instances, tag_result
from schemaops.engines.structural_tags import ToolTag, derive_tag, parse_parser_mode
from schemaops.engines.tool_schema import ENGINES
from schemaops.errors import InputError


def tag_specs(
    reg: Any, modes: list[str], strict_level: int = 0, engines: tuple[str, ...] = ENGINES
) -> tuple[list[tuple[str, ToolTag, dict, list[dict]]], list[str]]:
    """(case name, tag, metadata, walked instances) per tool set x engine x auto mode, and
    notes for the ones the engine leaves unconstrained (or schemaops does not cover)."""
    from schemaops.check.toolsets import tool_examples

    specs: list[tuple[str, ToolTag, dict, list[dict]]] = []
    notes: list[str] = []
    for ts in reg.toolsets.values():
        examples = {t.name: tool_examples(reg, t) for t in ts.tools}
        for mode in dict.fromkeys(modes):
            parsed = parse_parser_mode(mode)
            if parsed is None:
                continue
            base = parsed[0]
            if base.startswith("named:") and base[len("named:") :] not in ts.names:
                raise InputError(f"--tool-choice {mode}: tool set {ts.name} has no such tool")
            for engine in engines:
                tt = derive_tag(engine, ts.request_tools(), base, parsed[1], strict_level)
                label = f"{ts.name} [{engine} {base}:{tt.parser}]"
                if tt.tag is None:
                    notes.append(f"{label}: {tt.note}")
                    continue
                args = {
                    n: "held to parameters (strict)"
                    if n in tt.strict_tools
                    else "any JSON (not strict)"
                    for n in ts.names
                }
                meta = {
                    "toolset": ts.name,
                    "mode": base,
                    "parser": tt.parser,
                    "engines": [engine],
                    "tools": len(ts.tools),
                    "toolset_hash": ts.hash,
                    "strict_level": strict_level,
                    "constraint": "structural_tag",
                    "tag": tt.tag,
                    "arguments": args,
                }
                name = f"{ts.name}.tools[{engine} {base}:{tt.parser}]"
                specs.append((name, tt, meta, tag_instances(tt, examples)))
    return specs, notes


def tag_cases(
    reg: Any,
    backend: str,
    tokenizer: str,
    compile_budget_ms: float,
    timeout_s: float,
    modes: list[str],
    strict_level: int = 0,
    engines: tuple[str, ...] = ENGINES,
) -> tuple[list[CheckCase], list[str]]:
    """Gate the auto-mode structural tags of ``reg``'s tool sets on ``backend``."""
    specs, notes = tag_specs(reg, modes, strict_level, engines)
    if not specs:
        return [], notes
    from schemaops.compare.core import make_backend

    b = make_backend(backend, tokenizer)
    cases = []
    for name, tt, meta, instances in specs:
        result = tag_result(b, tt, instances, name)
        cases.append(judge(result, meta, backend, compile_budget_ms, timeout_s))
    return cases, notes


def unknown_outcome(result: dict[str, Any]) -> str:
    """``refused`` / ``accepted`` / ``unchecked`` for the unknown-tool call (invalid 0)."""
    for d in (result.get("enforcement") or {}).get("details") or []:
        if d.get("kind") == "invalid" and d.get("index") == 0:
            return {"accepted": "accepted", "rejected": "refused"}.get(d["outcome"], "unchecked")
    return "unchecked"


def other_outcome(result: dict[str, Any]) -> str | None:
    """Under a named choice, ``refused`` / ``accepted`` / ``unchecked`` for the call to
    another tool of the set (``tooltags.WRONG_TOOL``); None when none was walked."""
    for d in (result.get("enforcement") or {}).get("details") or []:
        if d.get("kind") == "invalid" and d.get("keyword") == WRONG_TOOL:
            return {"accepted": "accepted", "rejected": "refused"}.get(d["outcome"], "unchecked")
    return None


def judge(
    result: dict[str, Any], meta: dict, backend: str, budget_ms: float, timeout_s: float
) -> CheckCase:
    """``gate.evaluate`` plus the unknown-tool verdict and the tool-set notes."""
    case = evaluate(result, backend, budget_ms, timeout_s)
    meta = dict(meta, unknown_tool=unknown_outcome(result))
    other = other_outcome(result)
    if other is not None:
        meta["other_tool"] = other
    if other == "accepted":
        case.problems.append(
            Problem(
                "accepts_other_tool",
                f"under the named choice {meta['mode']!r} the structural tag lets a call to "
                "another tool of the set through",
                "this engine's tag for a named choice holds every tool: serve named choices "
                "without --tool-call-parser (the JSON schema it derives fixes the name), or "
                "watch for wrong_tool in the audit",
            )
        )
    if meta["unknown_tool"] == "accepted":
        case.problems.append(
            Problem(
                "accepts_unknown_tool",
                f"the structural tag lets a call to {UNKNOWN_TOOL!r} (not in the set) through",
                "report it to the engine: each tool's name is fixed in its begin string",
            )
        )
    if case.verdict == "rejects_valid" and backend == "llguidance":
        case.warnings.append(
            "llguidance refuses the tokenizer's own </tool_call> token where the tag's end is "
            "text: the model must spell the closing tag in pieces; serve this tag on xgrammar"
        )
    free = [n for n, a in meta["arguments"].items() if a.startswith("any")]
    if free:
        case.warnings.append(
            f"the arguments of {len(free)} tool(s) are any JSON under this tag (not strict: "
            f'{", ".join(free)}): set "strict": true on them or run the server at '
            "--tool-strict-level parameter (SGLANG_TOOL_STRICT_LEVEL=2), or validate them"
        )
    mask = result.get("mask_us") or {}
    case.notes.append(
        f"tool set {meta['toolset']}: {meta['tools']} tools, tool_choice {meta['mode']} with "
        f"{meta['engines'][0]}'s {meta['parser']} parser (structural tag); unknown tool name "
        f"{meta['unknown_tool']}"
        + (f"; arguments free (not strict): {', '.join(free)}" if free else "")
        + (f"; mask per token {mask} us" if mask.get("mean") is not None else "")
    )
    case.result["toolset"] = meta
    return case
