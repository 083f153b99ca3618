"""The files of a registry folder: every ``*.json`` below it, hidden ones left out.

Why not ``Path.rglob``: on a 10,000-file registry its ``Path`` objects, and sorting them by
their parts, cost about a fifth of auditing one line (``lazy.py`` lists the folder on every
run). This walks ``os.scandir`` with strings and answers what
``sorted(root.rglob("*.json"))`` answers without hidden parts (a test holds it to that):
symlinked folders are not entered (so a symlink loop cannot trap it), a folder whose name
ends in ``.json`` is listed as a file would be (reading it fails later, and is reported),
and a folder that cannot be read is skipped, as ``rglob`` skips it.
"""

from __future__ import annotations

import os
from pathlib import Path


def json_files(root: Path) -> list[Path]:
    """``*.json`` paths below ``root`` (no hidden file or folder on the way), sorted by
    their parts as ``Path`` sorts them on POSIX."""
    found: list[tuple[tuple[str, ...], str]] = []
    stack: list[tuple[tuple[str, ...], str]] = [((), str(root))]
    while stack:
        rel, folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except PermissionError:
            continue
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            if name.endswith(".json"):
                found.append(((*rel, name), entry.path))
            try:
                inside = entry.is_dir() and not entry.is_symlink()
            except OSError:
                inside = False
            if inside:
                stack.append(((*rel, name), entry.path))
    found.sort(key=lambda item: item[0])
    return [Path(path) for _, path in found]
