"""``lower --target T`` on a tool set: each tool's parameters lowered and proven, one request.

Why per tool: a provider takes each function's parameters as one strict schema, so each is
lowered by the same entry point as a registry schema (``targets.lower_for_target``) and proven
by the same differential against the original (``target_run.prove_target``): a tool's
``exactness`` follows the same evidence rules (no instance on a side, ``--generate 0`` or the
deadline: ``unproven``). What no per-tool rewrite can change is judged on the whole request
(``providers.tools``): a function name the provider refuses (renaming a tool breaks every
caller and every prompt that names it: not lowerable), more functions than one request may
carry, and Anthropic's optional/union limits summed over every strict tool. A ``restricted``
request finding (Anthropic's strict-tool count, Gemini's declaration count) serves the tool
set labelled ``unproven``.

The request fragment is written in the provider's shape (``request``):

- openai / azure: ``{"tools": [{"type": "function", "function": {name, description,
  parameters, "strict": true}}]}``;
- anthropic: ``{"tools": [{name, description, input_schema, "strict": true}]}``;
- gemini: ``{"tools": [{"functionDeclarations": [{name, description,
  parametersJsonSchema}]}]}``.

With ``--out``, ``NAME.tools.json`` is the registry's tool-set form (an OpenAI-style ``tools``
array with the served parameters and ``strict: true``), which is the OpenAI/Azure request's
``tools`` value itself and keeps DIR a registry that ``check --target`` re-judges; the
provider-shaped fragment is ``.lower/NAME.tools.request.json`` and the report
``.lower/NAME.tools.json``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemaops.lower.outfiles import REPORT_DIR
from schemaops.lower.target_run import TargetCase, prove_target
from schemaops.lower.targets import lower_for_target
from schemaops.providers.base import Finding
from schemaops.providers.tools import (
    NAME_RULES,
    RULES,
    parameters_of,
    request_findings,
    tool_label,
)
from schemaops.registry.model import canonical_text, content_hash

#: the verdict of a tool set or tool that cannot be sent
REFUSED = "refused"


@dataclass
class ToolSetCase:
    """One tool set lowered for one provider: a ``TargetCase`` per tool, and the request."""

    toolset: str
    target: str
    original_hash: str
    tools: list[TargetCase] = field(default_factory=list)
    #: original function objects, in order (name, description, ...)
    functions: list[dict[str, Any]] = field(default_factory=list)
    #: request-wide findings of the served tool set (count, summed limits)
    findings: list[Finding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @staticmethod
    def tool_verdict(c: TargetCase) -> str:
        """``refused`` when not lowered, else its ``exactness`` (exact, relaxed, narrowed,
        relaxed+narrowed or unproven)."""
        return c.exactness if c.lowered_ok else REFUSED

    @property
    def refused_request(self) -> list[Finding]:
        return [f for f in self.findings if f.rule.effect == "refused"]

    @property
    def restricted(self) -> list[Finding]:
        return [f for f in self.findings if f.rule.effect == "restricted"]

    @property
    def lowered_ok(self) -> bool:
        return not self.all_problems

    @property
    def all_problems(self) -> list[str]:
        out = list(self.problems)
        out += [f"{f.rule.id}: {f.message} ({f.rule.source})" for f in self.refused_request]
        out += [f"{c.name}: {p}" for c in self.tools for p in c.problems]
        return out

    @property
    def unproven(self) -> list[str]:
        out = [
            f"{f.rule.id}: {f.message}: a documented restriction, effect unknown ({f.rule.source})"
            for f in self.restricted
        ]
        return out + [f"{c.name}: {u}" for c in self.tools if c.lowered_ok for u in c.unproven]

    @property
    def verdict(self) -> str:
        """The set's: ``refused``, ``unproven``, else the tools' labels joined (``exact``
        only when every tool is exact)."""
        if not self.lowered_ok:
            return REFUSED
        if self.unproven:
            return "unproven"
        labels = {c.exactness for c in self.tools}
        relaxed = any("relaxed" in x for x in labels)
        narrowed = any("narrowed" in x for x in labels)
        return {
            (False, False): "exact",
            (True, False): "relaxed",
            (False, True): "narrowed",
            (True, True): "relaxed+narrowed",
        }[(relaxed, narrowed)]

    @property
    def proven(self) -> bool:
        return self.lowered_ok and not self.unproven

    def served_functions(self) -> list[tuple[dict[str, Any], Any]]:
        """(original function object, served parameters) per tool."""
        return [(fn, c.tl.lowered.served) for fn, c in zip(self.functions, self.tools, strict=True)]

    def registry_form(self) -> list[dict[str, Any]]:
        """The tool set as the registry holds it, served: an OpenAI-style ``tools`` array."""
        out = []
        for fn, served in self.served_functions():
            new = {k: v for k, v in fn.items() if k not in ("parameters", "strict")}
            new["parameters"] = served
            new["strict"] = True
            out.append({"type": "function", "function": new})
        return out

    def request(self) -> dict[str, Any]:
        """The provider's request fragment (module doc)."""
        if self.target in ("openai", "azure"):
            return {"tools": self.registry_form()}
        items = []
        for fn, served in self.served_functions():
            item: dict[str, Any] = {"name": fn["name"]}
            if isinstance(fn.get("description"), str):
                item["description"] = fn["description"]
            if self.target == "anthropic":
                item["input_schema"] = served
                item["strict"] = True
            else:
                item["parametersJsonSchema"] = served
            items.append(item)
        if self.target == "anthropic":
            return {"tools": items}
        return {"tools": [{"functionDeclarations": items}]}

    def check_call(self, name: str, arguments: Any) -> dict[str, Any]:
        """What the application does with a call the provider returned: the arguments mapped
        back (``to_original``: unwrap, a null at a property served as required-with-null
        dropped) and checked against the tool's original parameters, each failure either
        ``flagged`` by the tool's residual (the provider does not enforce it) or
        ``uncovered`` (a lowering bug: the provider should have refused it). A function not
        in the set is ``known: false`` (audit's ``unknown_tool``)."""
        from schemaops.lower.residual import check_residual

        for fn, c in zip(self.functions, self.tools, strict=True):
            if fn["name"] != name:
                continue
            mapped = c.tl.to_original(arguments)
            rc = check_residual(c.tl.lowered.original, c.tl.check_rules, mapped)
            return {
                "tool": name,
                "known": True,
                "arguments": mapped,
                "ok": rc.ok,
                "flagged": [v.to_dict() for v in rc.flagged],
                "uncovered": [v.to_dict() for v in rc.uncovered],
            }
        return {"tool": name, "known": False, "ok": False, "flagged": [], "uncovered": []}

    def to_dict(self) -> dict[str, Any]:
        request = self.request()
        return {
            "toolset": self.toolset,
            "target": self.target,
            "lowered": self.lowered_ok,
            "verdict": self.verdict,
            "original_hash": self.original_hash,
            "request_hash": content_hash(request),
            "request": request,
            "unproven": self.unproven,
            "problems": self.all_problems,
            "request_findings": [f.to_dict() for f in self.findings],
            "tools": [
                {"tool": fn["name"], "verdict": self.tool_verdict(c), **c.to_dict()}
                for fn, c in zip(self.functions, self.tools, strict=True)
            ],
        }


def _examples(reg: Any, tool: Any) -> tuple[list[Any], list[Any]]:
    """(valid, invalid) argument examples: those of the registry schema a tool's parameters
    are (``{"$ref": "NAME.json"}``), else none."""
    params = tool.parameters
    if not (isinstance(params, dict) and set(params) == {"$ref"}):
        return [], []
    ref = params["$ref"]
    stem = ref.removesuffix(".json") if isinstance(ref, str) and "#" not in ref else None
    s = reg.schemas.get(stem) if stem else None
    return (list(s.valid), list(s.invalid)) if s is not None else ([], [])


def lower_toolset(
    reg: Any, ts: Any, target: str, *, generate: int = 25, timeout_s: float = 120.0
) -> ToolSetCase:
    """Lower every tool of the registry tool set ``ts`` for ``target`` and prove each."""
    case = ToolSetCase(ts.name, target, ts.hash)
    for tool, entry in zip(ts.tools, ts.source, strict=True):
        case.functions.append(dict(entry["function"]))
        label = tool_label(ts.name, tool.name)
        if not NAME_RULES[target].fullmatch(tool.name):
            rule = RULES[target]["name"]
            case.problems.append(
                f"{label}: {rule.id}: {target} refuses the name {tool.name!r} and a rename "
                f"breaks every caller: not lowerable ({rule.source})"
            )
        tl = lower_for_target(parameters_of(tool), target, label)
        tc = TargetCase(label, tl, content_hash(parameters_of(tool)), problems=list(tl.problems))
        valid, invalid = _examples(reg, tool)
        if generate and not tc.problems:
            tc.diff = prove_target(tl, generate, valid, invalid, deadline_s=timeout_s)
            tc.problems += [f"differential: {f}" for f in tc.diff.failures[:5]]
        case.tools.append(tc)
    case.findings = request_findings(target, [c.tl.lowered.served for c in case.tools])
    return case


def write_toolset(out: Path, case: ToolSetCase) -> None:
    """``NAME.tools.json`` (served, registry form), ``.lower/NAME.tools.request.json`` (the
    provider's fragment) and ``.lower/NAME.tools.json`` (the report); a tool set not lowered
    gets its report only, and an earlier run's served file for it is removed."""
    out.mkdir(parents=True, exist_ok=True)
    (out / REPORT_DIR).mkdir(exist_ok=True)
    served = out / f"{case.toolset}.tools.json"
    request = out / REPORT_DIR / f"{case.toolset}.tools.request.json"
    files: dict[Path, Any] = {out / REPORT_DIR / f"{case.toolset}.tools.json": case.to_dict()}
    if case.lowered_ok:
        files[served] = case.registry_form()
        files[request] = case.request()
    else:
        served.unlink(missing_ok=True)
        request.unlink(missing_ok=True)
    for path, data in files.items():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)


def toolset_lines(case: ToolSetCase) -> list[str]:
    """The terminal lines of one tool set (after the schemas' report)."""
    mark = "ok" if case.lowered_ok else "NOT LOWERED"
    lines = [f"tool set {case.toolset}: {mark} [{case.verdict}] for {case.target}"]
    lines.append(f"  request: {canonical_text(case.request())[:160]}")
    for fn, c in zip(case.functions, case.tools, strict=True):
        lines.append(f"  tool {fn['name']}: {case.tool_verdict(c)}")
        for r in c.tl.lowered.residual:
            lines.append(f"    residual: {r.keyword} at {r.pointer or '/'}")
    lines += [f"  unproven: {u}" for u in case.unproven]
    lines += [f"  problem: {p}" for p in case.all_problems]
    return lines


__all__ = ["ToolSetCase", "lower_toolset", "toolset_lines", "write_toolset"]
