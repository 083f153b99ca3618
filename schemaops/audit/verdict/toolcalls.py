"""Tool calls judged against the tool set the application offered.

Why its own module: without a tool set a tool call's arguments are judged against the
registry schema named like the function (``run/lines.tool_schema_picker``), so a function the
model invented is nobody's failure. Here each record's calls are judged against a tool set,
taken in this order (``ToolJudges.for_record``):

1. ``--tools NAME``: the registry tool set ``NAME.tools.json`` for every record;
2. the record's ``--tools-field`` (default ``toolset``) naming a registry tool set;
3. the request's own ``tools`` where the record holds its request (``read/toolrequest.py``):
   the registry tool set with exactly these functions and parameters when there is one, else
   the offered set judged on its own, named ``offered-<sha256 prefix>``.

A function not in the set is the model failure ``unknown_tool`` (counted in p, its invented
name kept); an offered function's arguments are checked against its parameters by the usual
``SchemaChecker`` (parse failures and ``schema_violation:<keyword>`` with the path, as for any
output). When the tool choice is ``required`` or names a function (the request's
``tool_choice``, else ``--tool-choice``) and a response has no call, that response is one
``no_tool_call`` output (a model failure, under the named tool, or ``(no call)``); under
``auto`` a plain text answer is no tool output at all (``SKIP``: not in p, a good step).

A call's checker is named ``SET/FUNCTION`` (``/`` is in no provider's tool-name rule,
``toolsets.PROVIDER_NAME_RULES``, so it cannot collide with a function), which makes each
tool a row of ``by_schema`` and gives ``by_tool`` for free (``tally/toolsummary.py``).
Each output of a judged response carries ``Output.step`` = (set, response): the audit loop
counts agent steps from it (a step is good when every call in it is).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from schemaops.audit.read.output import Output
from schemaops.audit.read.toolrequest import (
    EMPTY_PARAMETERS,
    NAMED,
    NONE,
    REQUIRED,
    offered_tools,
    request_of,
    tool_choice,
)
from schemaops.audit.verdict.classify import Classification
from schemaops.audit.verdict.validate import SchemaChecker
from schemaops.errors import InputError

UNKNOWN_TOOL = "unknown_tool"
NO_TOOL_CALL = "no_tool_call"
#: a call to an offered function the tool choice did not allow: another function than the
#: named one, or any call under ``none``. The engines constrain a named choice to that one
#: function (SGLang 0.5.23 ``get_json_schema_constraint``, vLLM 0.32.0
#: ``get_json_schema_from_tools``) and send no tools under ``none``, so such a call says the
#: choice was not applied on this path (a model failure, counted in p)
WRONG_TOOL = "wrong_tool"
#: the name reported for a call that names no function at all (a Gemini ``functionCall``
#: without ``name``, an OpenAI call whose ``function.name`` is not a string)
NO_NAME = "(no name)"
#: the row of a response that made no call although the tool choice required one
NO_CALL = "(no call)"
SEP = "/"
OFFERED = "offered-"
#: ``Output.verdict`` of a text answer under ``auto``: not a tool output (not counted)
SKIP = Classification("skip", None, None, None)


class VerdictChecker:
    """The checker of an output whose verdict does not depend on its text (a call to a
    function the set does not offer, a response with no call): one fixed classification.
    Has the attributes the audit loop reads of a ``SchemaChecker`` (``fast``, ``quick``,
    ``fast_path``, ``numbers_plain``), none of which may take it off the general path."""

    quick = None
    numbers_plain = False
    fast = None
    fast_path = False
    hints = None

    def __init__(self, name: str, outcome: Classification) -> None:
        self.name = name
        self.outcome = outcome

    def check(self, value: Any) -> Classification:
        return self.outcome


class SetJudge:
    """One tool set (a registry one or a request's own) and its calls' checkers, compiled
    on first use."""

    def __init__(
        self, name: str, tools: dict[str, Any], assert_format: bool, timeout: float
    ) -> None:
        self.name = name
        self.tools = tools  # function -> its parameters (bundled), None for none
        self.assert_format = assert_format
        self.timeout = timeout
        self._checkers: dict[str, Any] = {}

    @property
    def names(self) -> list[str]:
        return list(self.tools)

    def checker(self, fn: str) -> Any:
        found = self._checkers.get(fn)
        if found is None:
            name = f"{self.name}{SEP}{fn}"
            if fn == NO_CALL:
                found = VerdictChecker(name, no_call(self.name, None))
            elif fn in self.tools:
                params = self.tools[fn]
                if params is None:  # no parameters: OpenAI's empty object schema
                    params = EMPTY_PARAMETERS
                found = SchemaChecker(name, params, self.assert_format, self.timeout)
            else:
                found = VerdictChecker(
                    name,
                    Classification(
                        UNKNOWN_TOOL,
                        None,
                        None,
                        f"the model called {fn!r}, which tool set {self.name!r} does not offer"
                        f" (tools: {', '.join(self.names)})",
                    ),
                )
            self._checkers[fn] = found
        return found


#: a text that holds calls the server did not return as calls: SGLang without a
#: ``--tool-call-parser`` returns the array its required/named constraint produced
#: (``function_call/utils.py``, 0.5.23) as ``content``; a hermes-style model writes
#: ``<tool_call>`` markup that a parser cut or missed (seen on the dev servers, issue 35)
CALLS_AS_TEXT = ('[{"name"', "<tool_call>")


def no_call(toolset: str, named: str | None, text: str = "") -> Classification:
    """The verdict of a response with no tool call where the tool choice required one."""
    want = f"a call to {named!r}" if named else "a tool call"
    msg = f"tool_choice required {want} from tool set {toolset!r}; the response has none"
    if text.lstrip().startswith(CALLS_AS_TEXT):
        msg += (
            " (its text holds calls the server did not return as tool calls: a server"
            " without a tool-call parser, or a parser that missed a cut call)"
        )
    return Classification(NO_TOOL_CALL, None, None, msg)


def signature(tools: list[tuple[str, Any]]) -> str:
    """What identifies a tool set for judging: its functions and their parameters (order and
    descriptions aside), as canonical text."""
    from schemaops.registry.model import canonical_text

    pairs = [[name, EMPTY_PARAMETERS if params is None else params] for name, params in tools]
    # by name, then by the parameters' own canonical text: a request may offer one name twice,
    # and two parameter objects do not compare (sorting the pairs raised TypeError on it)
    return canonical_text(sorted(pairs, key=lambda p: (p[0], canonical_text(p[1]))))


def _of_set(problem: dict, name: str) -> bool:
    """Whether a registry problem is of tool set ``name``'s own file (``agent`` is not
    ``xagent``: the file's name, not a suffix of its path)."""
    return Path(str(problem.get("file", ""))).name == f"{name}.tools.json"


class ToolJudges:
    """Every tool set an audit judges calls against, and which one judges a record."""

    def __init__(
        self,
        registry: str | Path,
        fixed: str | None = None,
        field: str | None = None,
        choice: tuple[str, str | None] | None = None,
        assert_format: bool = True,
        timeout: float = 1.0,
    ) -> None:
        self.root = Path(registry)
        self.field = field or "toolset"
        self.choice = choice
        self.assert_format = assert_format
        self.timeout = timeout
        self._sets: dict[str, SetJudge] = {}
        self._registry: Any = None  # (toolsets, problems), read on first use
        self._by_signature: dict[str, str] | None = None
        self.fixed = self._registry_set(fixed, "--tools") if fixed is not None else None

    def _load(self) -> tuple[dict, list]:
        if self._registry is None:
            if not self.root.is_dir():
                self._registry = ({}, [])
            else:
                from schemaops.registry.loader import inspect_registry

                reg, problems = inspect_registry(self.root, examples=False)
                self._registry = (reg.toolsets, problems)
        return self._registry

    def _registry_set(self, name: str, flag: str) -> SetJudge:
        got = self._sets.get(name)
        if got is not None:
            return got
        if not self.root.is_dir():
            raise InputError(f"{flag} {name}: registry folder not found: {self.root}")
        toolsets, problems = self._load()
        if name not in toolsets:
            known = ", ".join(sorted(toolsets)) or "(none)"
            bad = [p for p in problems if _of_set(p, name)]
            why = f" ({bad[0].get('reason')}; see schemaops registry validate)" if bad else ""
            raise InputError(
                f"{flag} {name}: no tool set {name!r} in {self.root}{why}; tool sets: {known}"
            )
        # a set whose own file has problems (a remote or missing $ref, parameters that are
        # not an object schema...) is refused as a schema with problems is: judged against
        # it, every call could read ok for a check that never ran
        own = [p for p in problems if _of_set(p, name)]
        if own:
            reasons = "; ".join(f"{p.get('pointer') or '/'}: {p.get('reason')}" for p in own[:3])
            raise InputError(
                f"{flag} {name}: tool set {name!r} has registry problems ({reasons}); see"
                " schemaops registry validate"
            )
        ts = toolsets[name]
        got = SetJudge(
            name, {t.name: t.bundled for t in ts.tools}, self.assert_format, self.timeout
        )
        self._sets[name] = got
        return got

    def _offered_set(self, tools: list[tuple[str, Any]], named: str | None) -> SetJudge:
        """The registry set with exactly these functions, else the offered set on its own.
        A request that offered only the function its tool choice names (what SGLang's
        request log keeps of a named choice: ``read/sglang_tools.py``) is the one registry
        set holding that function with these parameters, when exactly one does."""
        sig = signature(tools)
        if self._by_signature is None:
            toolsets, _ = self._load()
            self._by_signature = {}
            self._by_tool: dict[str, list[str]] = {}
            for name, ts in sorted(toolsets.items()):
                self._by_signature[signature([(t.name, t.bundled) for t in ts.tools])] = name
                for t in ts.tools:
                    self._by_tool.setdefault(signature([(t.name, t.bundled)]), []).append(name)
        known = self._by_signature.get(sig)
        if known is None and named is not None and len(tools) == 1 and tools[0][0] == named:
            holders = self._by_tool.get(sig, [])
            known = holders[0] if len(holders) == 1 else None
        if known is not None:
            return self._registry_set(known, "request tools")
        name = OFFERED + hashlib.sha256(sig.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        got = self._sets.get(name)
        if got is None:
            got = self._sets[name] = SetJudge(name, dict(tools), self.assert_format, self.timeout)
        return got

    def picker(self, default: Any) -> Picker:
        """The picker the readers call: ``default`` for a record with no tool set."""
        return Picker(self, default)

    def owns(self, name: str) -> bool:
        head, sep, _ = name.partition(SEP)
        return bool(sep) and head in self._sets

    def offers(self, name: str) -> bool | None:
        """For a row ``SET/FUNCTION``: whether the set offers the function (``(no call)``
        counts as offered: it is the set's own row); None for any other name."""
        head, sep, fn = name.partition(SEP)
        judge = self._sets.get(head) if sep else None
        if judge is None:
            return None
        return fn == NO_CALL or fn in judge.tools

    def checker(self, name: str) -> Any:
        """The checker for ``SET/FUNCTION`` (``owns(name)`` is true)."""
        head, _, fn = name.partition(SEP)
        return self._sets[head].checker(fn)

    def untooled(self, rec: dict[str, Any]) -> bool:
        """Whether no tool set applies to ``rec`` (no ``--tools``, no request, no tool set
        field): ``for_record`` is None, and its outputs are read as they are."""
        return self.fixed is None and "request" not in rec and self.field not in rec

    def for_record(self, rec: dict[str, Any]) -> RecordTools | None:
        """The tool set and tool choice ``rec`` is judged under, or None (no tool set: the
        calls keep the default picker). A record naming a tool set the registry lacks raises
        ``InputError`` (read by the caller as the record's input error)."""
        if self.untooled(rec):
            return None  # the usual record: nothing says which tools it had (a few lookups)
        req = request_of(rec)
        choice = tool_choice(req) if req is not None else None
        if choice is None:
            choice = self.choice
        judge = self.fixed
        if judge is None:
            named = rec.get(self.field)
            if isinstance(named, str):
                judge = self._registry_set(named, f"record field {self.field!r}:")
            elif req is not None:
                offered = offered_tools(req)
                if offered is not None:
                    named_fn = choice[1] if choice is not None and choice[0] == NAMED else None
                    judge = self._offered_set(offered, named_fn)
        if judge is None:
            return None
        return RecordTools(judge, choice)


class Picker:
    """The tool-call picker the readers get (``extract.find_outputs``): ``default`` for a
    record with no tool set, ``for_record`` for the record's own."""

    __slots__ = ("judges", "default")

    def __init__(self, judges: ToolJudges, default: Any) -> None:
        self.judges, self.default = judges, default

    def __call__(self, record_schema: str | None, function: Any) -> str | None:
        return self.default(record_schema, function)

    def for_record(self, rec: dict[str, Any]) -> RecordTools | None:
        return self.judges.for_record(rec)


class RecordTools:
    """One record's tool set and tool choice: the picker its readers call for each tool
    call (``SET/FUNCTION``), and ``finish``, which marks its responses' outputs as steps and
    turns a required-but-absent call into ``no_tool_call``."""

    __slots__ = ("set", "mode", "named", "prefix")

    def __init__(self, judge: SetJudge, choice: tuple[str, str | None] | None) -> None:
        self.set = judge
        self.mode, self.named = choice if choice is not None else (None, None)
        self.prefix = judge.name + SEP

    def __call__(self, record_schema: str | None, function: Any) -> str:
        fn = function if isinstance(function, str) and function else NO_NAME
        return self.prefix + fn

    def finish(self, outs: list[Output]) -> list[Output]:
        """The record's outputs, each response's marked with its step; a response without a
        call becomes one ``no_tool_call`` output under required/named, and a text answer with
        no schema of its own is ``SKIP`` otherwise."""
        groups: dict[str, list[Output]] = {}
        for o in outs:
            groups.setdefault(_response_of(o.source), []).append(o)
        name = self.set.name
        result: list[Output] = []
        for key, group in groups.items():
            step = (name, key)
            calls = any(o.schema is not None and o.schema.startswith(self.prefix) for o in group)
            required = self.mode == REQUIRED or self.mode == NAMED
            if not calls and required and not any(o.refusal is not None for o in group):
                first = group[0]
                fn = self.named if self.mode == NAMED and self.named else NO_CALL
                result.append(
                    first._replace(
                        schema=self.prefix + fn,
                        verdict=no_call(
                            name, self.named if self.mode == NAMED else None, first.text
                        ),
                        step=step,
                        index=None,
                    )
                )
                continue
            if not calls and not any(o.schema is None and o.refusal is None for o in group):
                # a structured answer with a schema of its own and no call: judged as any
                # such output, and no agent step (as the audit's lean path, which never
                # reaches here, counts it)
                result.extend(group)
                continue
            for o in group:
                if o.schema is None and o.refusal is None:
                    o = o._replace(verdict=SKIP)  # a text answer: not a tool output
                elif o.refusal is None and o.verdict is None:
                    wrong = self._not_chosen(o.schema)
                    if wrong is not None:
                        o = o._replace(verdict=wrong)
                result.append(o._replace(step=step))
        return result

    def _not_chosen(self, schema: str | None) -> Classification | None:
        """``wrong_tool`` for a call to an offered function the tool choice did not allow;
        None otherwise (a function not offered stays ``unknown_tool``)."""
        if schema is None or not schema.startswith(self.prefix):
            return None
        fn = schema[len(self.prefix) :]
        if fn not in self.set.tools:
            return None
        if self.mode == NAMED and self.named and fn != self.named:
            why = f"the tool choice named {self.named!r}; the model called {fn!r}"
        elif self.mode == NONE:
            why = f"the tool choice was 'none'; the model called {fn!r}"
        else:
            return None
        return Classification(WRONG_TOOL, None, None, why)


def _response_of(source: str) -> str:
    """Which response of a record an output belongs to (its choice or candidate), from its
    source path: ``choices[1].message.content`` -> ``choices[1]``; one response otherwise."""
    for lead in ("response.body.", "response."):
        if source.startswith(lead):
            source = source[len(lead) :]
            break
    if source.startswith(("choices[", "candidates[")):
        return source[: source.index("]") + 1]
    return ""
