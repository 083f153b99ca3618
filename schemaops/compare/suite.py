"""The official JSON-Schema-Test-Suite as compare items (``suite_cases``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class SuiteCase:
    """One JSON-Schema-Test-Suite group: a schema and its valid/invalid instances."""

    name: str
    schema: Any
    valid: list[Any]
    invalid: list[Any]

    @property
    def text(self) -> str:
        return json.dumps(self.schema, separators=(",", ":"), ensure_ascii=False)


def suite_cases(
    root: Path | str | None = None, draft: str = "draft2020-12", optional: bool = False
) -> Iterator[SuiteCase]:
    """The suite's groups for ``draft`` (``tests/<draft>/*.json``), skipping ``optional/``
    unless asked, and groups needing remote refs (``http://localhost:1234``: never fetched).

    ``root``: the suite's folder; default: where ``schemaops.corpora`` finds it (``../shared``
    or the user cache that ``schemaops corpora fetch`` fills), else ``FileNotFoundError``."""
    if root is None:
        from schemaops.corpora import JSTS, locate

        found = locate().jsts
        if found is None:
            raise FileNotFoundError(f"{JSTS} not at hand: run `python scripts/get_corpora.py`")
        root = found
    folder = Path(root) / "tests" / draft
    files = sorted(folder.glob("*.json"))
    if optional:
        files += sorted((folder / "optional").rglob("*.json"))
    for path in files:
        for i, group in enumerate(json.loads(path.read_text())):
            if "localhost:1234" in json.dumps(group["schema"]):
                continue
            tests = group.get("tests") or []
            yield SuiteCase(
                name=f"{path.stem}/{i}: {group.get('description', '')}",
                schema=group["schema"],
                valid=[t["data"] for t in tests if t.get("valid")],
                invalid=[t["data"] for t in tests if not t.get("valid")],
            )
