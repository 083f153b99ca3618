"""``check`` on a registry's tool sets: compile what each engine compiles for ``tool_choice``.

Why: for ``required`` or a named function, SGLang and vLLM compile one JSON schema derived
from the whole ``tools`` array (``engines/tool_schema.py``), so the compile budget applies to
the tool set as a whole, and the one thing a tool call must never do, name a function that
was not offered, is enforced only if that derived grammar refuses it. Each tool set becomes
gate items (one per engine derivation and mode; derivations with the same text are compiled
once), judged by the same gate as schemas (``gate.evaluate``: compile status, budget,
invalid examples reaching a stop, valid ones refused). The walked examples are built here:

- valid: one call per tool whose ``parameters`` is a registry schema with valid examples;
- invalid: a call to a function not in the set (``unknown_tool``) with arguments another
  tool accepts; the grammar must refuse it, or the case fails (``accepts_unknown_tool``);
  and a call with each such tool's first invalid example as arguments.

vLLM's named mode constrains only the arguments (the name is the request's, never
generated), so no unknown-name call is walked there. ``auto`` (``auto:PARSER``) derives no
JSON schema in either engine; with a tool-call parser it may be a structural tag
(``engines/structural_tags.py``): compiled and walked in ``tooltags.py`` as a case
``NAME.tools[ENGINE auto:PARSER]`` where the engine constrains it (a strict tool, or the
server's strict level ``tool_strict_level``), else a note saying it is unconstrained and
what would constrain it; never passed without a walk.
"""

from __future__ import annotations

import json
from typing import Any

from schemaops.check.gate import CheckCase, Problem, gate_items
from schemaops.compare.run import Item
from schemaops.engines.structural_tags import is_tag_mode
from schemaops.engines.tool_schema import ENGINES, derive
from schemaops.errors import InputError
from schemaops.registry.model import canonical_text

#: a function name no tool set holds (checked): what a model inventing a tool would write
UNKNOWN_TOOL = "unknown_tool_not_offered"


def expand_modes(modes: list[str], names: list[str]) -> list[str]:
    """``named`` -> ``named:FN`` for every tool; ``required``/``auto``/``named:FN`` and the
    tag modes (``required:PARSER``, ``auto:PARSER``, ``named:FN:PARSER``) as given."""
    out: list[str] = []
    for m in modes:
        if m == "named":
            out.extend(f"named:{n}" for n in names)
        elif m in ("required", "auto") or (
            m.startswith(("named:", "auto:", "required:")) and not m.endswith(":")
        ):
            out.append(m)
        else:
            raise InputError(
                f"--tool-choice {m!r}: expected required, required:PARSER, auto, auto:PARSER, "
                "named, named:FN or named:FN:PARSER"
            )
    return list(dict.fromkeys(out))


def tool_examples(reg: Any, tool: Any) -> tuple[list[Any], list[Any]]:
    """(valid, invalid) argument examples of a tool whose parameters are a registry schema."""
    params = tool.parameters
    if not (isinstance(params, dict) and set(params) == {"$ref"}):
        return [], []
    ref = params["$ref"]
    stem = ref.removesuffix(".json") if isinstance(ref, str) and "#" not in ref else None
    s = reg.schemas.get(stem) if stem else None
    return (list(s.valid), list(s.invalid)) if s is not None else ([], [])


def _call(engine: str, mode: str, name: str, args: Any) -> Any:
    """The output the derived grammar describes: an array of ``{name, parameters}`` calls,
    or (vLLM named) the arguments alone."""
    if engine == "vllm" and mode.startswith("named:"):
        return args
    return [{"name": name, "parameters": args}]


def _instances(reg: Any, ts: Any, engine: str, mode: str) -> tuple[list, list, bool]:
    """(valid, invalid, walks_unknown_name) for one derivation."""
    named = mode[len("named:") :] if mode.startswith("named:") else None
    valid: list[Any] = []
    invalid: list[Any] = []
    any_args: Any = None
    for tool in ts.tools:
        good, bad = tool_examples(reg, tool)
        if good and any_args is None:
            any_args = good[0]
        if named is not None and tool.name != named:
            continue
        if good:
            valid.append(_call(engine, mode, tool.name, good[0]))
        if bad:
            invalid.append(_call(engine, mode, tool.name, bad[0]))
    unknown = not (engine == "vllm" and named is not None)
    if unknown:
        invalid.insert(
            0, [{"name": UNKNOWN_TOOL, "parameters": {} if any_args is None else any_args}]
        )
    return valid, invalid, unknown


def _named_defs(ts: Any, mode: str) -> bool:
    """The named tool's parameters carry ``$defs``: SGLang nests them under
    ``items/properties/parameters`` without hoisting (``engines/tool_schema.py``), so a
    ``#/$defs/...`` ref there points at nothing."""
    if not mode.startswith("named:"):
        return False
    bundled = ts.get(mode[len("named:") :]).bundled
    return isinstance(bundled, dict) and isinstance(bundled.get("$defs"), dict)


def toolset_items(
    reg: Any, modes: list[str], engines: tuple[str, ...] = ENGINES
) -> tuple[list[Item], dict[str, dict], list[str]]:
    """Gate items for every tool set and mode, their metadata by item name, and notes.

    Two engines deriving the same text for a mode share one item (one compile).
    """
    items: list[Item] = []
    meta: dict[str, dict] = {}
    notes: list[str] = []
    for ts in reg.toolsets.values():
        if UNKNOWN_TOOL in ts.names:
            raise InputError(f"tool set {ts.name} has a tool named {UNKNOWN_TOOL}")
        for mode in expand_modes(modes, ts.names):
            if is_tag_mode(mode):
                continue  # a structural tag, not a JSON schema: ``tag_cases``
            if mode.startswith("named:") and mode[6:] not in ts.names:
                raise InputError(f"--tool-choice {mode}: tool set {ts.name} has no such tool")
            by_text: dict[str, str] = {}
            for engine in engines:
                c = derive(engine, ts.request_tools(), mode)
                if c.schema is None:
                    notes.append(f"{ts.name} [{engine} {mode}]: {c.note}")
                    continue
                text = canonical_text(c.schema)
                if text in by_text:
                    meta[by_text[text]]["engines"].append(engine)
                    continue
                name = f"{ts.name}.tools[{engine} {mode}]"
                valid, invalid, unknown = _instances(reg, ts, engine, mode)
                items.append(Item(name, text, valid, invalid))
                by_text[text] = name
                meta[name] = {
                    "toolset": ts.name,
                    "mode": mode,
                    "engines": [engine],
                    "tools": len(ts.tools),
                    "toolset_hash": ts.hash,
                    "unknown_call": json.dumps(invalid[0]) if unknown else None,
                    "nested_defs": engine == "sglang" and _named_defs(ts, mode),
                }
    return items, meta, notes


def unknown_tool_outcome(result: dict[str, Any]) -> str:
    """What the grammar did with the call to ``UNKNOWN_TOOL``: ``refused`` (evidence: the
    walk stopped inside it), ``accepted`` (it walked to a stop), or ``unchecked`` (not
    walked: the grammar did not compile, or the mode generates no name)."""
    for d in (result.get("enforcement") or {}).get("details") or []:
        if not isinstance(d, dict) or d.get("kind") != "invalid" or d.get("index") != 0:
            continue
        if d.get("outcome") == "accepted":
            return "accepted"
        if d.get("outcome") == "rejected":
            return "refused"
    return "unchecked"


def toolset_cases(
    reg: Any,
    backend: str,
    tokenizer: str,
    compile_budget_ms: float,
    timeout_s: float,
    modes: list[str],
    tool_strict_level: int = 0,
    engines: tuple[str, ...] = ENGINES,
    **worker: Any,
) -> tuple[list[CheckCase], list[str]]:
    """Gate every tool set of ``reg`` on ``backend``; (cases, notes for modes not compiled).
    ``engines``: whose derivations (``check --engine E`` gates E's only).

    ``tool_strict_level``: the server's (SGLang ``SGLANG_TOOL_STRICT_LEVEL``, vLLM
    ``--tool-strict-level``: 0 off/auto, 1 function, 2 parameter), for ``auto``."""
    from schemaops.check.tagcases import tag_cases

    items, meta, notes = toolset_items(reg, modes, engines)
    tcases, tnotes = tag_cases(
        reg, backend, tokenizer, compile_budget_ms, timeout_s, modes, tool_strict_level, engines
    )
    notes += tnotes
    if not items:
        return tcases, notes
    cases = gate_items(items, backend, tokenizer, compile_budget_ms, timeout_s, **worker)
    for case in cases:
        m = meta.get(case.schema, {})
        # the unknown-name call is invalid example 0 (``_instances``)
        m["unknown_tool"] = (
            unknown_tool_outcome(case.result)
            if m.get("unknown_call")
            else ("not generated (vLLM named: the name is the request's)")
        )
        if m["unknown_tool"] == "accepted":
            case.problems.append(
                Problem(
                    "accepts_unknown_tool",
                    f"the grammar lets a call to {UNKNOWN_TOOL!r} (not in the tool set) through",
                    "the tool name must be an enum of the offered tools; report it to the engine",
                )
            )
        if m.get("nested_defs") and case.status != "ok":
            case.warnings.append(
                "SGLang 0.5.23 nests a named tool's parameters without their $defs "
                "(function_call/utils.py get_json_schema_constraint), so '#/$defs/...' refs "
                "resolve against nothing: inline those definitions into the parameters"
            )
        mask = case.result.get("mask_us") or {}
        case.notes.append(
            f"tool set {m.get('toolset')}: {m.get('tools')} tools, tool_choice "
            f"{m.get('mode')}, as {' and '.join(m.get('engines', []))} derive it"
            + (f"; unknown tool name {m['unknown_tool']}")
            + (f"; mask per token {mask} us" if mask else "")
        )
        case.result["toolset"] = m
    return cases + tcases, notes


def registry_toolset_cases(
    registry: Any,
    backend: str,
    tokenizer: str,
    compile_budget_ms: float,
    timeout_s: float,
    modes: list[str],
    tool_strict_level: int = 0,
    engines: tuple[str, ...] = ENGINES,
    **worker: Any,
) -> tuple[list[CheckCase], list[str]]:
    """``toolset_cases`` for a registry folder; nothing (and no load) without tool sets."""
    from pathlib import Path

    from schemaops.registry import load_registry
    from schemaops.registry.loader import TOOLS_SUFFIX

    if not modes or not any(Path(registry).rglob(f"*{TOOLS_SUFFIX}")):
        return [], []
    return toolset_cases(
        load_registry(registry),
        backend,
        tokenizer,
        compile_budget_ms,
        timeout_s,
        modes,
        tool_strict_level,
        engines,
        **worker,
    )
