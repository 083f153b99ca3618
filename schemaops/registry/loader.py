"""Load a registry folder. (Minimal first version: the registry issue extends validation.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from schemaops.errors import InputError, SchemaopsError
from schemaops.registry.model import DEFAULT_DRAFT, Schema

DEFAULT_REGISTRY = Path("schemas")


class RegistryError(SchemaopsError):
    """The registry has problems; ``problems`` lists each (file, pointer, reason)."""

    exit_code = 1

    def __init__(self, problems: list[dict], exit_code: int = 1) -> None:
        self.problems = problems
        self.exit_code = exit_code
        lines = [f"{p['file']}{('#' + p['pointer']) if p.get('pointer') else ''}: {p['reason']}"
                 for p in problems]
        super().__init__(f"{len(problems)} problem(s) in registry:\n  " + "\n  ".join(lines))


@dataclass
class Registry:
    root: Path
    schemas: dict[str, Schema] = field(default_factory=dict)

    def get(self, name: str) -> Schema:
        try:
            return self.schemas[name]
        except KeyError:
            known = ", ".join(sorted(self.schemas)) or "(none)"
            raise InputError(f"unknown schema {name!r} in {self.root}; known: {known}") from None

    def __iter__(self) -> Iterator[Schema]:
        return iter(self.schemas.values())

    def __len__(self) -> int:
        return len(self.schemas)


def load_registry(path: str | Path = DEFAULT_REGISTRY) -> Registry:
    root = Path(path)
    if not root.is_dir():
        raise InputError(f"registry folder not found: {root}")
    reg = Registry(root=root)
    for f in sorted(root.glob("*.json")):
        if f.name.endswith(".examples.json"):
            continue
        data = json.loads(f.read_text(encoding="utf-8"))
        s = Schema(name=f.stem, schema=data, path=f,
                   draft=data.get("$schema", DEFAULT_DRAFT) if isinstance(data, dict) else DEFAULT_DRAFT)
        side = f.with_name(f.stem + ".examples.json")
        if side.exists():
            ex = json.loads(side.read_text(encoding="utf-8"))
            s.valid, s.invalid = ex.get("valid", []), ex.get("invalid", [])
        reg.schemas[s.name] = s
    return reg
