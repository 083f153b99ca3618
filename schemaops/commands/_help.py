"""How ``--help`` lays out a command's options, for every command alike.

typer 0.29 shows each option's Python type as its metavar (``<bool>`` after a flag,
``<list[str]>``, ``<float range>``): a type repr, not what to type, and a column wide enough
to cut long option names (``--parallel-tool-cal…``) at 100 columns. ``PlainCommand`` (set on
every command by ``cli.py``) shows click's plain metavars instead (nothing after a flag;
``TEXT``, ``PATH``, ``INT``, ``NUM``, ``a|b`` for a short choice) and files the options a
command's first use does not need under "More options", so the first panel holds the few that
matter (``MAIN``).
"""

from __future__ import annotations

import copy
from typing import Any

from typer.core import TyperCommand

#: command -> the options its first panel shows (the rest: "More options"); a command not
#: named keeps every option in one panel
MAIN: dict[str, tuple[str, ...]] = {
    "audit": ("--registry", "--schema", "--max-failure-rate", "--min-compound", "--html"),
    "warm": ("--server", "--registry", "--schema", "--wait-ready", "--api", "--from-log"),
    "watch": ("--registry", "--state-dir", "--listen", "--on-poisoned", "--once"),
    "probe": ("--server", "--paths", "--registry", "--timeout"),
    "compare": ("--backends", "--registry", "--tokenizer", "--corpus", "--html"),
    "check": ("--backend", "--engine", "--target", "--registry", "--fix", "--out", "--junit"),
    "lower": ("--backend", "--engine", "--target", "--registry", "--out"),
    "dev-server": ("--port", "--engine", "--grammar-backend", "--status", "--stop"),
}
#: shown in the first panel of every command
ALWAYS = ("--json", "--help")
MORE = "More options"


def plain_metavar(param: Any) -> str | None:
    """click's plain metavar for ``param`` (``None``: leave it as declared)."""
    if param.metavar is not None or not hasattr(param, "type_descriptor"):
        return None
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return ""
    desc = param.type_descriptor
    if desc.is_choice:
        names = [str(getattr(c, "value", c)) for c in desc.choices or ()]
        return "|".join(names) if len("|".join(names)) <= 20 else "CHOICE"
    if desc.is_path:
        return "PATH"
    bare = param.bare_type().removeprefix("list[").removesuffix("]")
    return {"int": "INT", "float": "NUM", "Path": "PATH"}.get(bare, "TEXT")


def _no_type(ctx: Any) -> None:
    """An argument's type column: empty (its metavar already says what to give)."""
    return None


def _no_pair(param: Any) -> Any:
    """For the help table only: ``--probe/--no-probe`` as one name, ``--[no-]probe`` (typer
    gives the negative its own column, as wide as the longest one, which cut the names of
    ``warm``'s table at 100 columns). A copy: the parser keeps both names."""
    long = [o for o in param.opts if o.startswith("--")]
    neg = list(param.secondary_opts)
    if len(long) != 1 or neg != ["--no-" + long[0][2:]]:
        return param
    shown = copy.copy(param)
    shown.opts = [f"--[no-]{long[0][2:]}", *[o for o in param.opts if not o.startswith("--")]]
    shown.secondary_opts = []
    return shown


class PlainCommand(TyperCommand):
    """A typer command whose help shows plain metavars and its main options first."""

    formatting_help = False

    def format_help(self, ctx: Any, formatter: Any) -> None:
        import typer.rich_utils  # rich: imported by a run that prints help, not by every start

        # typer appends an option's numeric range to its type column (" [1<=x<=256]"): up to
        # 12 more columns, which pushed long option names out of a 100-column table. The range
        # is still enforced, and a value outside it is refused with the range in the message.
        # RANGE_STRING is one of that module's public layout constants.
        typer.rich_utils.RANGE_STRING = ""
        self.formatting_help = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.formatting_help = False

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        if self.formatting_help:
            params = [_no_pair(p) for p in params]
        main = MAIN.get(self.name or "")
        for p in params:
            if p.param_type_name == "argument" and p.metavar is not None:
                # its name column shows the metavar (FILE...); typer adds the type repr beside
                p.display_type_rich = _no_type
            shown = plain_metavar(p)
            if shown is not None:
                p.metavar = shown
            long = [o for o in getattr(p, "opts", []) if o.startswith("--")]
            if (
                main is not None
                and long
                and getattr(p, "rich_help_panel", None) is None
                and not set(long) & set(main + ALWAYS)
            ):
                p.rich_help_panel = MORE
        return params
