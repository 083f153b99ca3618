"""A command's options parsed from its own typer declarations, without building the app.

Why (issue 36, start-up): ``schemaops audit`` on a short file spent most of its start in
the CLI, not in the audit: building the typer app imports every command module (the
providers, the engines' capacity tables) and typer's parameter coercion, which builds a
pydantic ``TypeAdapter`` per option (pydantic, its plugin loader, ``importlib.metadata``,
``email``: measured with ``python -X importtime -m schemaops audit one.jsonl``, figures in
docs/findings.md, issue 36). ``cli.main`` asks ``parse`` first for the hot command; a command
line it is not sure of (``--help``, an unknown or malformed option, a value it would coerce
differently, any declaration it does not know) returns None and the full typer app handles
it, so every message, help text and exit code stays typer's.

What is read: the command function's signature, each parameter's ``typer.Option`` /
``typer.Argument`` (as its default or in ``Annotated``), with the option names, the default and
the annotation (``str``, ``Path``, ``int``, ``float``, ``bool`` flags, ``list[str]``
arguments, each possibly ``| None``). What is accepted is what click's parser does with such
declarations (``--name value``, ``--name=value``, a short ``-j 4``, ``--`` ending options,
options and arguments in any order, the last of a repeated option winning); numbers only in
the plain forms that both ``int()``/``float()`` and typer's coercion read the same.
``tests/test_cli_fastargs.py`` compares the values with the ones typer passes, and the
fallback cases with typer's own handling.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

_INT = re.compile(r"-?[0-9]+\Z")
_FLOAT = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z")
#: attributes of a typer parameter that this parser does not reproduce: any of them set and
#: the command line goes to typer
_UNSUPPORTED = (
    "callback",
    "envvar",
    "is_eager",
    "parser",
    "click_type",
    "prompt",
    "count",
    "default_factory",
    "min",
    "max",
    "formats",
    "mode",
    "exists",
    "resolve_path",
)


class _Spec:
    """One parameter: its keyword, names, base type, default, and whether it is the argument."""

    def __init__(self, name: str, kind: type, default: Any, many: bool, argument: bool) -> None:
        self.name, self.kind, self.default = name, kind, default
        self.many, self.argument = many, argument


def _base(annotation: Any) -> tuple[Any, bool] | None:
    """(base type, is a list) of ``T``, ``T | None`` or ``list[T]``; None for anything else."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            return None
        return _base(args[0])
    if origin is list:
        (inner,) = typing.get_args(annotation) or (None,)
        return (inner, True) if inner in (str, Path) else None
    if annotation in (str, Path, int, float, bool):
        return annotation, False
    return None


_SPECS: dict[Callable, tuple[dict[str, _Spec], _Spec | None] | None] = {}


def specs(fn: Callable) -> tuple[dict[str, _Spec], _Spec | None] | None:
    """Option name -> spec, and the positional argument's spec, of a typer command function;
    None when a declaration is outside what ``parse`` reproduces."""
    if fn in _SPECS:
        return _SPECS[fn]
    from typer.models import ArgumentInfo, OptionInfo

    out: dict[str, _Spec] = {}
    positional: _Spec | None = None
    found: tuple[dict[str, _Spec], _Spec | None] | None = None
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
        for p in inspect.signature(fn).parameters.values():
            annotation, info, default = hints.get(p.name), p.default, p.default
            decls: list[str] = []
            if typing.get_origin(annotation) is typing.Annotated:
                meta = [
                    m for m in annotation.__metadata__ if isinstance(m, OptionInfo | ArgumentInfo)
                ]
                annotation = typing.get_args(annotation)[0]
                info = meta[0] if meta else None
                # in Annotated, typer reads the first positional of Option() as a name
                first = getattr(info, "default", None)
                if isinstance(first, str) and first.startswith("-"):
                    decls.append(first)
                elif first not in (None, ...):
                    raise LookupError(p.name)
            elif isinstance(info, OptionInfo | ArgumentInfo):
                default = info.default
            else:
                raise LookupError(p.name)
            if info is None or any(getattr(info, a, None) for a in _UNSUPPORTED):
                raise LookupError(p.name)
            if getattr(info, "expose_value", True) is False:
                raise LookupError(p.name)
            base = _base(annotation)
            if base is None:
                raise LookupError(p.name)
            kind, many = base
            if isinstance(info, ArgumentInfo):
                if positional is not None or not many or default is not ...:
                    raise LookupError(p.name)
                positional = _Spec(p.name, kind, default, many, True)
                continue
            decls += list(info.param_decls or ())
            if many or not decls or any("/" in d or not d.startswith("-") for d in decls):
                raise LookupError(p.name)
            if kind is bool and default is not False:
                raise LookupError(p.name)
            spec = _Spec(p.name, kind, default, many, False)
            for d in decls:
                if d in out:
                    raise LookupError(d)
                out[d] = spec
        found = (out, positional)
    except (LookupError, NameError, TypeError, ValueError):
        found = None
    _SPECS[fn] = found
    return found


def _value(spec: _Spec, text: str) -> tuple[bool, Any]:
    """(understood, value) of one option value as typer would coerce it."""
    if spec.kind is str:
        return True, text
    if spec.kind is Path:
        return (True, Path(text)) if text else (False, None)
    if spec.kind is int:
        return (True, int(text)) if _INT.match(text) else (False, None)
    if spec.kind is float:
        return (True, float(text)) if _FLOAT.match(text) else (False, None)
    return False, None


def parse(fn: Callable, argv: list[str]) -> dict[str, Any] | None:
    """The keyword arguments typer would call ``fn`` with for ``argv`` (what follows the
    command's name), or None when the command line is for typer to handle."""
    found = specs(fn)
    if found is None:
        return None
    options, positional = found
    given: dict[str, Any] = {}
    rest: list[str] = []
    i, only_args = 0, False
    while i < len(argv):
        tok = argv[i]
        i += 1
        if only_args or tok == "-" or not tok.startswith("-"):
            rest.append(tok)
            continue
        if tok == "--":
            only_args = True
            continue
        name, eq, inline = tok.partition("=") if tok.startswith("--") else (tok, "", "")
        spec = options.get(name)
        if spec is None:  # --help, -h, an unknown option, a bundled short option
            return None
        if spec.kind is bool:
            if eq:
                return None
            given[spec.name] = True
            continue
        if eq:
            text = inline
        else:
            if i >= len(argv):
                return None  # "requires an argument": typer says so
            text = argv[i]
            i += 1
            if text.startswith("-") and not _FLOAT.match(text) and text != "-":
                return None  # click would take it as the value; typer decides
        ok, value = _value(spec, text)
        if not ok:
            return None
        given[spec.name] = value
    if positional is None:
        return None if rest else _with_defaults(options, given)
    if not rest:
        return None  # "missing argument": typer says so
    given[positional.name] = [positional.kind(x) for x in rest]
    return _with_defaults(options, given)


def _with_defaults(options: dict[str, _Spec], given: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for spec in options.values():
        default = spec.default
        if spec.kind is Path and isinstance(default, str):
            default = Path(default)
        out.setdefault(spec.name, default)
    out.update(given)
    return out
