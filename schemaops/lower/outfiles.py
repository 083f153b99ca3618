"""The one place a schema name becomes a path under ``--out`` (``lower``, ``lower --target``
and ``check --fix``): ``OUT/<name>.json``, ``OUT/<name>.examples.json`` and the report
``OUT/.lower/<name>.json``. A name that is no plain file name (``registry.names``) is an
input error (exit 2), never a file written outside ``--out`` nor a traceback."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from schemaops.errors import InputError
from schemaops.registry.names import name_problem

#: the hidden folder of per-schema reports (the loader skips dot folders)
REPORT_DIR = ".lower"


@dataclass(frozen=True)
class OutPaths:
    served: Path
    examples: Path
    report: Path


def out_paths(out: Path, name: str) -> OutPaths:
    """The files of schema ``name`` under ``out``; ``InputError`` for a name that would leave
    ``out`` or cannot be a file name."""
    bad = name_problem(name)
    if bad is not None:
        raise InputError(f"schema name {name!r} cannot be a file name under --out {out}: {bad}")
    paths = OutPaths(
        out / f"{name}.json", out / f"{name}.examples.json", out / REPORT_DIR / f"{name}.json"
    )
    for p in (paths.served, paths.examples):  # belt and braces: each lies directly in out
        if p.parent != out:
            raise InputError(f"schema name {name!r} leaves --out {out}")
    return paths
