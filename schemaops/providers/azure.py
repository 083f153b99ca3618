"""Azure OpenAI structured outputs (``strict: true``): OpenAI's table, and what Azure refuses
that api.openai.com serves.

Azure OpenAI serves OpenAI's models behind its own request validation, and it differs: a
strict schema whose property definitions carry a ``default`` is refused there with "'default'
is not permitted within a property definition", while api.openai.com served the same schema
(a maintainer's paired probe; ``DEFAULT_SOURCE``). Everything else is OpenAI's table
(``openai.py``), each rule under an ``azure.`` id with its source, so the two targets are
judged alike except where Azure is known to differ. Nothing here is read from Azure's own
documentation: the rules are OpenAI's and the one observed difference.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from schemaops.providers.base import Finding, Rule, Table, walk
from schemaops.providers.openai import RULES as OPENAI_RULES
from schemaops.providers.openai import judge as openai_judge

#: The Azure refusal of a non-null default is quoted in openai-agents-python #4390 (and the
#: follow-up PR #4459: "'default' is not permitted within a property definition"), where the
#: same schema was served by api.openai.com.
DEFAULT_SOURCE = "https://github.com/openai/openai-agents-python/issues/4390"
READ = "2026-12-03"


def _azure(rule: Rule) -> Rule:
    return dataclasses.replace(rule, id="azure." + rule.id.split(".", 1)[1])


_DEFAULT = Rule(
    "azure.default",
    "a default is not permitted within a property definition",
    "refused",
    DEFAULT_SOURCE,
    READ,
    "Observed on Azure OpenAI deployments (the API's error text); api.openai.com serves "
    "it (openai.undocumented-keyword's note). Every default below the root is judged "
    "refused, whatever its value: the error text does not single out null (openai-python "
    "strips a null default before sending, so a null one was not observed either way).",
)

RULES: dict[str, Rule] = {r.id: r for r in map(_azure, OPENAI_RULES.values())}
RULES[_DEFAULT.id] = _DEFAULT


def judge(schema: Any) -> list[Finding]:
    """OpenAI's findings under Azure's rule ids, and every ``default`` below the root."""
    out = [Finding(RULES[_azure(f.rule).id], f.pointer, f.message) for f in openai_judge(schema)]
    for node in walk(schema):
        if node.parts and "default" in node.schema:
            out.append(Finding(_DEFAULT, node.at("default"), "'default'"))
    return out


TABLE = Table(
    target="azure",
    version=READ,
    api="Azure OpenAI Structured Outputs, strict: true (OpenAI's table, and Azure's own refusals)",
    rules=RULES,
    judge=judge,
)
