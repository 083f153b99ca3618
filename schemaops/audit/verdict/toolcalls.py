"""Tool calls judged against a registry tool set (``audit --tools NAME``).

Why its own module: without a tool set a tool call's arguments are judged against the
registry schema named like the function (``run/lines.tool_schema_picker``), so a function the
model invented is nobody's failure. With ``--tools NAME`` each call is judged against the
tool set the application offered (``registry/toolsets.py``): a function not in it is the
model failure ``unknown_tool`` (counted in p, its invented name kept), and an offered
function's arguments are checked against its bundled ``parameters`` by the usual
``SchemaChecker`` (parse failures and ``schema_violation:<keyword>`` with the path as for any
output).

A call's checker is named ``SET/FUNCTION`` (``/`` is in no provider's tool-name rule,
``toolsets.PROVIDER_NAME_RULES``, so it cannot collide with a function), which makes each
tool a row of ``by_schema`` and gives ``by_tool`` for free (``summary``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schemaops.audit.verdict.classify import OK, Classification
from schemaops.audit.verdict.validate import SchemaChecker
from schemaops.errors import InputError

UNKNOWN_TOOL = "unknown_tool"
#: the name reported for a call that names no function at all (a Gemini ``functionCall``
#: without ``name``, an OpenAI call whose ``function.name`` is not a string)
NO_NAME = "(no name)"
SEP = "/"


class UnknownToolChecker:
    """The checker of a call to a function the tool set does not offer: every value is
    ``unknown_tool`` (the arguments of a function that does not exist have nothing to obey).
    Has the attributes the audit loop reads of a ``SchemaChecker`` (``fast``, ``quick``,
    ``fast_path``), none of which may take it off the general path."""

    quick = None
    fast = None
    fast_path = False
    hints = None

    def __init__(self, name: str, toolset: str, function: str, offered: list[str]) -> None:
        self.name = name
        self.outcome = Classification(
            UNKNOWN_TOOL,
            None,
            None,
            f"the model called {function!r}, which tool set {toolset!r} does not offer"
            f" (tools: {', '.join(offered)})",
        )

    def check(self, value: Any) -> Classification:
        return self.outcome


class ToolCallJudge:
    """One registry tool set, and the checkers its calls are judged by (compiled on use)."""

    def __init__(
        self, registry: str | Path, name: str, assert_format: bool = True, timeout: float = 1.0
    ) -> None:
        from schemaops.registry.loader import inspect_registry

        root = Path(registry)
        if not root.is_dir():
            raise InputError(f"--tools {name}: registry folder not found: {root}")
        reg, problems = inspect_registry(root, examples=False)
        if name not in reg.toolsets:
            known = ", ".join(sorted(reg.toolsets)) or "(none)"
            bad = [p for p in problems if str(p.get("file", "")).endswith(f"{name}.tools.json")]
            why = f" ({bad[0].get('reason')}; see schemaops registry validate)" if bad else ""
            raise InputError(
                f"--tools {name}: no tool set {name!r} in {root}{why}; tool sets: {known}"
            )
        self.set = reg.toolsets[name]
        self.name = name
        self.assert_format = assert_format
        self.timeout = timeout
        self._checkers: dict[str, Any] = {}

    def pick(self, record_schema: str | None, function: Any) -> str:
        """The checker name of a call to ``function`` (the record's own schema is for its
        text answer, not for its tool calls)."""
        fn = function if isinstance(function, str) and function else NO_NAME
        return f"{self.name}{SEP}{fn}"

    def owns(self, name: str) -> bool:
        return name.startswith(self.name + SEP)

    def checker(self, name: str) -> Any:
        """The checker for ``SET/FUNCTION``: the function's bundled parameters, or
        ``UnknownToolChecker`` for a function the set does not offer."""
        found = self._checkers.get(name)
        if found is None:
            fn = name[len(self.name) + len(SEP) :]
            offered = self.set.names
            if fn in offered:
                params = self.set.get(fn).bundled
                if params is None:  # no parameters: OpenAI's empty object schema
                    params = {"type": "object", "properties": {}}
                found = SchemaChecker(name, params, self.assert_format, self.timeout)
            else:
                found = UnknownToolChecker(name, self.name, fn, offered)
            self._checkers[name] = found
        return found


def summary(by_schema: dict[str, Any], toolset: str) -> tuple[dict, dict]:
    """(``by_tool``, ``unknown_tools``) from the JSON report's ``by_schema`` rows of
    ``toolset``: each offered or called function with n, ok, p and its categories; the
    invented names with their counts, most frequent first."""
    prefix = toolset + SEP
    by_tool: dict[str, dict] = {}
    unknown: dict[str, int] = {}
    for name, row in by_schema.items():
        if not name.startswith(prefix):
            continue
        fn = name[len(prefix) :]
        cats = row.get("categories") or {}
        by_tool[fn] = {
            "n": row["outputs"],
            "ok": row.get("ok", cats.get(OK, 0)),
            "p": row["p"],
            "categories": cats,
            "offered": not cats.get(UNKNOWN_TOOL),
        }
        if cats.get(UNKNOWN_TOOL):
            unknown[fn] = cats[UNKNOWN_TOOL]
    unknown = dict(sorted(unknown.items(), key=lambda kv: (-kv[1], kv[0])))
    return by_tool, unknown


def tools_hint(registry: str | Path) -> str:
    """`` (or judge tool calls against a tool set: --tools NAME, here: a, b)`` when the
    registry has tool sets, else ``""``: the suggestion for a call no schema is named like."""
    root = Path(registry)
    if not root.is_dir():
        return ""
    from schemaops.registry.loader import TOOLS_SUFFIX

    names = sorted(f.name[: -len(TOOLS_SUFFIX)] for f in root.rglob(f"*{TOOLS_SUFFIX}"))
    if not names:
        return ""
    return f"; judge tool calls against a tool set with --tools NAME ({', '.join(names)})"
