"""Tool sets (``NAME.tools.json``) judged for each hosted provider's strict tool calling.

Why a table of its own: a provider takes a tool set, not a schema. Each function's parameters
go through the provider's schema table (``openai.py``, ``anthropic.py``, ``gemini.py``,
``azure.py``: the same rules as ``check --target`` on a schema), and the request adds rules of
its own that no single schema breaks: the function's name, how many functions one request may
carry, and limits that Anthropic counts across all strict tools of a request. Those are the
rules here, each with the page or SDK source it was read from (``docs/contracts/hosted.md``).

How each provider is sent the tool set (what ``lower --target`` writes, ``lower/toolsets.py``):

- OpenAI / Azure OpenAI: ``tools: [{"type": "function", "function": {name, description,
  parameters, "strict": true}}]``: strict function calling follows the Structured Outputs
  subset (the ``openai`` table), as openai-python's ``pydantic_function_tool`` sends it
  (``strict: True`` with ``to_strict_json_schema``; openai-python 3.60.0,
  ``src/openai/lib/_tools.py``);
- Anthropic: ``tools: [{name, description, input_schema, "strict": true}]`` (strict tool use:
  the structured-outputs subset, the ``anthropic`` table);
- Gemini: ``tools: [{"functionDeclarations": [{name, description, parametersJsonSchema}]}]``:
  ``parametersJsonSchema`` takes JSON Schema (``parameters`` takes the OpenAPI subset; the two
  are mutually exclusive), judged with the ``gemini`` table, which is read from the
  ``responseJsonSchema`` field's keyword list: the ``parametersJsonSchema`` reference gives no
  list of its own (``GEMINI_DECL``), so that reading is this table's, said in the rule notes.

A function without ``parameters`` takes no arguments ("Omitting parameters defines a function
with an empty parameter list", OpenAI's ``FunctionDefinition``): it is judged, and lowered, as
``{"type": "object", "properties": {}}``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from schemaops.providers import anthropic
from schemaops.providers.base import VERDICTS, Finding, Rule, TargetVerdict

READ = "2026-12-03"
#: openai-python's ``FunctionDefinition.name`` docstring (3.60.0, installed in .venv):
#: "Must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64."
OPENAI_NAME = (
    "https://github.com/openai/openai-python/blob/main/src/openai/types/shared_params/"
    "function_definition.py"
)
#: Chat Completions reference, ``tools``: "A max of 128 functions are supported."
OPENAI_TOOLS = "https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools"
#: Messages API reference, ``Tool.name``: "Must match the regex ^[a-zA-Z0-9_-]{1,64}$."
ANTHROPIC_NAME = "https://docs.anthropic.com/en/api/messages"
#: The API's 400 text when strict tools compile too large: "Simplify your tool schemas or
#: reduce the number of strict tools" (anthropic-sdk-python #1185): a count limit exists.
ANTHROPIC_STRICT_COUNT = "https://github.com/anthropics/anthropic-sdk-python/issues/1185"
#: Gemini API reference, ``FunctionDeclaration``: name "Must be a-z, A-Z, 0-9, or contain
#: underscores, colons, dots, and dashes, with a maximum length of 64"; ``parametersJsonSchema``
#: "must describe an object ... mutually exclusive with parameters".
GEMINI_DECL = "https://ai.google.dev/api/caching#FunctionDeclaration"
#: Vertex AI's ``FunctionDeclaration.name`` adds "Must start with a letter or an underscore";
#: its ``Tool.function_declarations``: "Maximum 128 function declarations can be provided"
#: (google-cloud-aiplatform v1beta1; older releases said 64).
VERTEX_DECL = (
    "https://github.com/googleapis/googleapis/blob/master/google/cloud/aiplatform/v1beta1/"
    "tool.proto"
)

MAX_OPENAI_FUNCTIONS = 128
MAX_ANTHROPIC_STRICT = 20
MAX_GEMINI_DECLARATIONS = 128

NAME_RULES: dict[str, re.Pattern[str]] = {
    "openai": re.compile(r"[a-zA-Z0-9_-]{1,64}"),
    "azure": re.compile(r"[a-zA-Z0-9_-]{1,64}"),
    "anthropic": re.compile(r"[a-zA-Z0-9_-]{1,64}"),
    "gemini": re.compile(r"[a-zA-Z0-9_.:-]{1,64}"),
}
#: no parameters: the empty parameter list
EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


def _rule(target: str, rid: str, summary: str, effect: str, source: str, note: str = "") -> Rule:
    return Rule(f"{target}.{rid}", summary, effect, source, READ, note)  # type: ignore[arg-type]


def _openai_rules(target: str) -> dict[str, Rule]:
    return {
        "name": _rule(
            target,
            "tool-name",
            "a function name is 1 to 64 of a-z, A-Z, 0-9, _ and -",
            "refused",
            OPENAI_NAME,
        ),
        "count": _rule(
            target,
            "max-functions",
            f"at most {MAX_OPENAI_FUNCTIONS} functions in one request",
            "refused",
            OPENAI_TOOLS,
            "The reference says 'A max of 128 functions are supported'; a longer array is "
            "judged refused (conservative).",
        ),
        "strict": _rule(
            target,
            "tool-not-strict",
            "a function sent with strict: false: its arguments are not constrained",
            "ignored",
            OPENAI_TOOLS,
            "Without strict the parameters are a hint, not a grammar: the whole parameters "
            "schema is the residual (lower --target sends strict: true).",
        ),
    }


RULES: dict[str, dict[str, Rule]] = {
    "openai": _openai_rules("openai"),
    "azure": _openai_rules("azure"),
    "anthropic": {
        "name": _rule(
            "anthropic",
            "tool-name",
            "a tool name matches ^[a-zA-Z0-9_-]{1,64}$",
            "refused",
            ANTHROPIC_NAME,
        ),
        "count": _rule(
            "anthropic",
            "max-strict-tools",
            f"more than {MAX_ANTHROPIC_STRICT} strict tools in one request",
            "restricted",
            ANTHROPIC_STRICT_COUNT,
            "The structured-outputs page's limits table gives a number of strict tools per "
            f"request ({MAX_ANTHROPIC_STRICT} as read); no stored copy of the table could be "
            "read to confirm it, and the API's own 400 text names the count ('reduce the "
            "number of strict tools'). Restricted, verdict unproven: not known refused.",
        ),
        "strict": _rule(
            "anthropic",
            "tool-not-strict",
            "a tool sent with strict: false: its input is not constrained",
            "ignored",
            anthropic.SOURCE,
        ),
    },
    "gemini": {
        "name": _rule(
            "gemini",
            "tool-name",
            "a function name is 1 to 64 of a-z, A-Z, 0-9, _, :, . and -",
            "refused",
            GEMINI_DECL,
        ),
        "name-start": _rule(
            "gemini",
            "tool-name-start",
            "a function name starts with a letter or an underscore",
            "restricted",
            VERTEX_DECL,
            "Vertex AI's FunctionDeclaration says so; the Gemini API reference does not. "
            "Restricted, verdict unproven.",
        ),
        "count": _rule(
            "gemini",
            "max-declarations",
            f"more than {MAX_GEMINI_DECLARATIONS} function declarations in one request",
            "restricted",
            VERTEX_DECL,
            "Vertex AI's Tool.function_declarations: 'Maximum 128 function declarations can "
            "be provided'; the Gemini API reference states no maximum. Restricted, verdict "
            "unproven.",
        ),
    },
}


def tool_label(toolset: str, tool: str) -> str:
    """The report's name of one tool: ``SET.tools[NAME]`` (as ``check --tool-choice`` names
    its tool-set cases)."""
    return f"{toolset}.tools[{tool}]"


def parameters_of(tool: Any) -> Any:
    """What the request carries as the function's parameters (bundled; empty when absent)."""
    return tool.bundled if tool.bundled is not None else dict(EMPTY_PARAMETERS)


def _worst(verdicts: list[str]) -> str:
    return max(verdicts, key=VERDICTS.index) if verdicts else "accepted"


@dataclass
class ToolSetVerdict:
    """One tool set judged for one target: a verdict per tool (its parameters by the schema
    table plus its own name rule; pointers into the ``NAME.tools.json`` file) and the
    request-wide findings (count, Anthropic's limits summed over the set)."""

    toolset: str
    target: str
    tools: list[TargetVerdict] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def set_verdict(self) -> TargetVerdict:
        return TargetVerdict(f"{self.toolset}.tools", self.target, list(self.findings))

    @property
    def verdict(self) -> str:
        return _worst([self.set_verdict.verdict, *(t.verdict for t in self.tools)])

    @property
    def passed(self) -> bool:
        return self.verdict != "refused"

    def rows(self) -> list[TargetVerdict]:
        """The set's own verdict, then one per tool: what the terminal and JUnit list."""
        return [self.set_verdict, *self.tools]

    def to_dict(self) -> dict[str, Any]:
        return {
            "toolset": self.toolset,
            "target": self.target,
            "verdict": self.verdict,
            "passed": self.passed,
            "tools": len(self.tools),
            "request": self.set_verdict.to_dict(),
            "results": [t.to_dict() for t in self.tools],
        }


def _moved(f: Finding, prefix: str) -> Finding:
    return Finding(f.rule, prefix + f.pointer, f.message)


def judge_tool(toolset: str, tool: Any, target: str) -> TargetVerdict:
    """One tool: its parameters by the target's schema table, pointers moved into the tools
    file (``/I/function/parameters/...``), and its name and ``strict`` by this table."""
    from schemaops.providers import judge_schema

    rules = RULES[target]
    v = judge_schema(tool_label(toolset, tool.name), parameters_of(tool), target)
    prefix = f"/{tool.index}/function/parameters"
    narrowed = {f.pointer for f in v.narrowed}
    v.findings = [_moved(f, prefix) for f in v.findings]
    v.narrowed = [
        f for f in v.findings if f.rule.effect == "ignored" and f.pointer[len(prefix) :] in narrowed
    ]
    where = f"/{tool.index}/function"
    if not NAME_RULES[target].fullmatch(tool.name):
        v.findings.insert(0, Finding(rules["name"], f"{where}/name", f"name {tool.name!r}"))
    elif "name-start" in rules and not re.match(r"[A-Za-z_]", tool.name):
        v.findings.insert(0, Finding(rules["name-start"], f"{where}/name", f"name {tool.name!r}"))
    if tool.strict is False and "strict" in rules:
        msg = "strict: false in the tool set: the parameters are not enforced"
        v.findings.append(Finding(rules["strict"], f"{where}/strict", msg))
    return v


def judge_toolset(ts: Any, target: str) -> ToolSetVerdict:
    """A registry ``ToolSet`` judged for ``target`` (see module doc)."""
    out = ToolSetVerdict(ts.name, target)
    for tool in ts.tools:
        out.tools.append(judge_tool(ts.name, tool, target))
    out.findings = request_findings(target, [parameters_of(t) for t in ts.tools])
    return out


def request_findings(target: str, parameters: list[Any]) -> list[Finding]:
    """The request-wide rules for ``len(parameters)`` functions sent strict: the count, and
    Anthropic's optional/union parameter limits summed over every strict tool."""
    rules = RULES[target]
    n = len(parameters)
    out: list[Finding] = []
    limit = {
        "openai": MAX_OPENAI_FUNCTIONS,
        "azure": MAX_OPENAI_FUNCTIONS,
        "anthropic": MAX_ANTHROPIC_STRICT,
        "gemini": MAX_GEMINI_DECLARATIONS,
    }[target]
    if n > limit:
        out.append(Finding(rules["count"], "", f"{n} functions"))
    if target == "anthropic":
        optional = unions = 0
        for p in parameters:
            o, u = anthropic.request_counts(p)
            optional, unions = optional + o, unions + u
        if optional > anthropic.MAX_OPTIONAL:
            msg = f"{optional} optional parameters across the tool set's strict tools"
            out.append(Finding(anthropic.RULES["anthropic.max-optional"], "", msg))
        if unions > anthropic.MAX_UNIONS:
            msg = f"{unions} union parameters across the tool set's strict tools"
            out.append(Finding(anthropic.RULES["anthropic.max-unions"], "", msg))
    return out


def all_rules() -> list[Rule]:
    """Every tool-set rule (for the report's tables)."""
    return [r for rules in RULES.values() for r in rules.values()]
