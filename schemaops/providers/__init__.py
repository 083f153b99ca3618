"""Hosted structured-output APIs: is each registry schema accepted by OpenAI, Anthropic,
Gemini and Azure OpenAI in their strict / structured modes? Offline, from the providers'
documented rules, their SDKs' transforms and reported API errors.

Public API:

- ``check_targets(registry, targets) -> HostedReport``: every schema of the registry folder
  (its wire form, cross-file refs inlined) judged against each target's table, and every
  tool set (``NAME.tools.json``) as that provider's strict tool calling takes it
  (``tools.py``: each tool's parameters by the same table, plus names and counts).
- ``TABLES``: target name -> ``Table`` (its rules, each with source URL and read date).
- ``HostedReport``, ``TargetVerdict``, ``Finding``, ``Rule``.

One table per provider (``openai.py``, ``anthropic.py``, ``gemini.py``, ``azure.py``: OpenAI's
rules and Azure's own refusals) is the one place to
update when a provider changes its documentation; ``docs/contracts/hosted.md`` is the contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemaops.errors import InputError
from schemaops.providers import anthropic, azure, gemini, openai
from schemaops.providers.base import VERDICTS, Finding, Rule, Table, TargetVerdict, verdicts
from schemaops.providers.narrowing import narrowings

TABLES: dict[str, Table] = {
    t.target: t for t in (openai.TABLE, anthropic.TABLE, gemini.TABLE, azure.TABLE)
}
TARGETS = tuple(TABLES)


@dataclass
class HostedReport:
    """What ``check_targets`` returns; ``passed`` (no ``refused``) decides the exit code: an
    ``unproven`` pair passes (its restriction is listed), as a false 400 is as wrong as a
    false accept."""

    registry: str
    targets: list[str]
    results: list[TargetVerdict] = field(default_factory=list)
    #: one per (tool set, target): ``tools.ToolSetVerdict``
    toolsets: list[Any] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results) and all(t.passed for t in self.toolsets)

    @property
    def failed_toolsets(self) -> list[Any]:
        return [t for t in self.toolsets if not t.passed]

    @property
    def failed(self) -> list[TargetVerdict]:
        return [r for r in self.results if not r.passed]

    def counts(self) -> dict[str, dict[str, int]]:
        """target -> verdict -> number of schemas."""
        out = {t: dict.fromkeys(VERDICTS, 0) for t in self.targets}
        for r in self.results:
            out[r.target][r.verdict] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "registry": self.registry,
            "targets": self.targets,
            "passed": self.passed,
            "counts": self.counts(),
            "tables": {t: TABLES[t].to_dict() for t in self.targets},
            "tool_rules": {t: tool_rules(t) for t in self.targets},
            "results": [r.to_dict() for r in self.results],
            "toolsets": [t.to_dict() for t in self.toolsets],
        }


def tool_rules(target: str) -> list[dict[str, str]]:
    """The tool-set rules of ``target`` (``tools.RULES``), as the report lists them."""
    from schemaops.providers.tools import RULES

    return [r.to_dict() for r in RULES[target].values()]


def parse_targets(targets: list[str]) -> list[str]:
    """Validated targets in the order given, once each; an unknown one is a usage error."""
    out: list[str] = []
    for t in targets:
        name = str(t).strip().lower()
        if name not in TABLES:
            raise InputError(f"unknown target {t!r}: expected one of {', '.join(TARGETS)}")
        if name not in out:
            out.append(name)
    if not out:
        raise InputError(f"no target: expected one or more of {', '.join(TARGETS)}")
    return out


def judge_schema(name: str, schema: Any, target: str) -> TargetVerdict:
    """One schema (its wire form) judged against one target's table."""
    table = TABLES[target]
    found = table.judge(schema)
    v = verdicts(table, name, found)
    narrow = {at for at, _ in narrowings(schema, found)}  # the judgement lower makes too
    v.narrowed = [f for f in v.findings if f.pointer in narrow and f.rule.effect == "ignored"]
    return v


def check_targets(registry: str | Path, targets: list[str]) -> HostedReport:
    """Judge every schema of the registry folder against each target (schema order, then
    target order), then every tool set (``toolsets``). A registry with problems raises
    RegistryError (exit 2) as ``check`` does."""
    from schemaops.registry import load_registry

    names = parse_targets(targets)
    reg = load_registry(Path(registry))
    report = HostedReport(str(registry), names)
    for s in reg.schemas.values():
        for t in names:
            report.results.append(judge_schema(s.name, s.bundled(), t))
    from schemaops.providers.tools import judge_toolset

    for ts in reg.toolsets.values():
        for t in names:
            report.toolsets.append(judge_toolset(ts, t))
    return report


__all__ = [
    "TABLES",
    "TARGETS",
    "Finding",
    "HostedReport",
    "Rule",
    "Table",
    "TargetVerdict",
    "check_targets",
    "judge_schema",
    "parse_targets",
]
