"""Every repository path the code and the docs name exists: a docstring that sends a reader
to ``tests/test_audit_lean.py`` (a file that was never there) is a wrong suggestion, as an
error message naming an option that does not exist would be."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: a path into the repository's own folders, written as a path (``tests/x.py``, ``bench/y.py``,
#: ``docs/contracts/z.md``, ``scripts/w.sh``), not a module name; ``tests/draft2020-12/...`` is
#: the JSON-Schema-Test-Suite's own layout, cited by the code that follows it
_NAMED = re.compile(
    r"(?<![\w./-])((?!tests/draft)(?:tests|bench|scripts|docs)/[\w/.-]+\.(?:py|md|sh|json))"
)


def _sources() -> list[Path]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    files += sorted((REPO / "schemaops").rglob("*.py")) + sorted((REPO / "bench").glob("*.py"))
    files += sorted((REPO / "scripts").glob("*"))
    return [f for f in files if f.is_file()]


def test_every_named_repository_path_exists() -> None:
    missing = []
    named = 0
    for f in _sources():
        for m in _NAMED.finditer(f.read_text(encoding="utf-8", errors="replace")):
            named += 1
            if not (REPO / m.group(1)).exists():
                missing.append(f"{f.relative_to(REPO)}: {m.group(1)}")
    assert named > 100  # the pattern finds what it is meant to find
    assert missing == []
