"""``probe --registry DIR``: the ``tools.*`` paths probed with the registry's own tool sets.

Why: the engine builds its tool grammar from the whole ``tools`` array (SGLang's ``anyOf`` over
the functions for ``required``, the named function's parameters for a named choice;
``engines/tool_schema.py``), so a canary sent with a lone canary function says whether *a*
tool grammar is applied, not whether the grammar of the application's tool set compiles and
holds. With a registry, each ``tools.*`` path is probed once per tool set, the canary function
(``paths.TOOL_NAME``) sent after the set's functions as the request carries them
(``ToolSet.request_tools``): ``required`` and ``auto`` offer the whole set, the named modes
name the canary function.

A model may then call one of the set's functions instead of the canary, which no canary
judges. Such a call is judged here (``judge_offered``), keeping a false ``unconstrained`` at 0:

- a function the request did not offer, or (named modes) any function but the named one:
  ``broken`` (a tool grammar makes the name an enum; only an unconstrained answer writes it);
- arguments that are not JSON (not cut off): ``broken``; JSON but for a raw control character
  inside a string (xgrammar's leak where a string has minLength/maxLength): ``inconclusive``;
- arguments that break the function's parameters: ``inconclusive`` (a grammar may be applied
  and leaky, as ``probe``'s registry rows say ``leaky``; no evidence either way);
- valid arguments: ``inconclusive`` (allowed; nothing about the canary's tokens).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schemaops.errors import InputError
from schemaops.probe.paths import TOOL_NAME, PathSpec, Reading, tools_request


def load_toolsets(registry: Path) -> list[Any]:
    """The registry's tool sets (``registry.toolsets.ToolSet``), in file order; a registry
    that does not load is an input error (exit 2)."""
    from schemaops.registry import RegistryError, load_registry

    try:
        return list(load_registry(registry).toolsets.values())
    except RegistryError as exc:  # exit 2 (nothing probed); ``--json`` lists the problems
        err = InputError(f"--registry {registry}: {exc}")
        err.problems = exc.problems  # type: ignore[attr-defined] (read by ``_common.call``)
        raise err from None


def offered(ts: Any) -> dict[str, Any]:
    """name -> the parameters a call to it is judged by (bundled; none: the empty object)."""
    empty = {"type": "object", "properties": {}}
    return {t.name: t.bundled if t.bundled is not None else empty for t in ts.tools}


def with_toolsets(specs: list[PathSpec], toolsets: list[Any]) -> list[PathSpec]:
    """Each ``tools.*`` spec once per tool set (canary function after the set's functions);
    the other specs as they are. No tool sets: ``specs`` unchanged."""
    if not toolsets:
        return specs
    out: list[PathSpec] = []
    for spec in specs:
        if spec.tools is None:
            out.append(spec)
            continue
        for ts in toolsets:
            out.append(
                PathSpec(
                    spec.name,
                    spec.kind,
                    spec.endpoint,
                    f"{spec.what}, beside registry tool set {ts.name} ({len(ts.tools)} tools)",
                    tools_request(spec.tools, tuple(ts.request_tools())),
                    spec.tools,
                    ts.name,
                    offered(ts),
                )
            )
    return out


def row_name(doc: dict[str, Any]) -> str:
    """A path row's name in ``failed``: ``tools.required[SET]`` for a tool-set row."""
    ts = doc.get("toolset")
    return f"{doc['path']}[{ts}]" if ts else str(doc["path"])


def judge_offered(spec: PathSpec, reading: Reading) -> tuple[str, str] | None:
    """(judgement, why) for a call that names anything but the canary function on a tool-set
    path (module doc); None when the canary judges the answer."""
    name = reading.tool_name
    if spec.toolset is None or not reading.tool_call or name in (None, TOOL_NAME):
        return None
    if name not in spec.offered:
        return "broken", f"the call names {name!r}, a function the request did not offer"
    if spec.tools and spec.tools.startswith("named"):
        return "broken", f"tool_choice names {TOOL_NAME!r}; the call names {name!r}"
    try:
        args = json.loads(reading.text or "")
    except RecursionError:
        return "broken", f"the arguments of the call to {name!r} are not JSON (too deep)"
    except ValueError:
        if reading.truncated:
            return "inconclusive", f"the call to {name!r} was cut off at max_tokens"
        try:  # a raw control character inside a string: xgrammar's known leak
            json.JSONDecoder(strict=False).decode(reading.text or "")
        except (ValueError, RecursionError):
            return "broken", f"the arguments of the call to {name!r} are not JSON"
        return "inconclusive", (
            f"the arguments of the call to {name!r} hold a raw control character in a string "
            "(xgrammar lets one into a string with minLength/maxLength: leaky, not "
            "unconstrained); no evidence either way"
        )
    from schemaops.compare.instances import validator

    errors = list(validator(spec.offered[name]).iter_errors(args))
    if errors:
        e = errors[0]
        where = "/" + "/".join(str(p) for p in e.absolute_path)
        return "inconclusive", (
            f"the model called offered function {name!r}; its arguments break {e.validator!r} "
            f"at {where}: a grammar may be applied and leaky, no evidence either way"
        )
    return "inconclusive", (
        f"the model called offered function {name!r} with valid arguments: allowed, and no "
        "evidence about the canary"
    )


__all__ = ["judge_offered", "load_toolsets", "offered", "row_name", "with_toolsets"]
