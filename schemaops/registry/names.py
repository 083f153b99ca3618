"""Whether a schema name can be a file name: ``lower --out`` and ``check --fix`` write
``OUT/<name>.json``, ``OUT/<name>.examples.json`` and ``OUT/.lower/<name>.json``.

A name comes from the file stem (always a file name already) or from ``x-schemaops-name``,
which is any string: ``../../X`` or an absolute path wrote outside ``--out``, and a ``/`` or a
NUL byte ended in a traceback. The registry refuses such a name (problem ``bad_name``), and
every writer derives its paths through ``name_problem`` as well.
"""

from __future__ import annotations

#: the longest file name most filesystems take (ext4, APFS, NTFS: 255 bytes or units)
MAX_FILE_NAME_BYTES = 255
#: the longest suffix a writer adds to a name
LONGEST_SUFFIX = ".examples.json"


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be the stem of a file in a folder (None: it can)."""
    if not isinstance(name, str) or not name:
        return "not a non-empty string"
    if "\x00" in name:
        return "holds a NUL byte"
    if "/" in name or "\\" in name:
        return "holds a path separator ('/' or '\\'): it would name a file in another folder"
    if name.startswith("."):
        return "starts with '.' ('..' is the parent folder; a hidden file is never loaded)"
    size = len((name + LONGEST_SUFFIX).encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_NAME_BYTES:
        return f"too long for a file name ({size} bytes with {LONGEST_SUFFIX}, over 255)"
    return None
