"""An output folder is checked before the work that fills it, not when the first file lands.

Why: ``check --fix --out DIR`` gates a registry, lowers and proves schemas (minutes) and only
then writes DIR. An ``--out`` that cannot be written (``/proc/x``, an existing regular file, a
folder on a read-only file system) used to end that run in a traceback with no report. Asking
``os.access`` is not enough (root passes it on a read-only mount, and ``/proc`` lies), so the
folder is created and a probe file is really written and removed.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from schemaops.errors import InputError


def prepare_out_folder(out: Path, flag: str = "--out", registry: Path | None = None) -> Path:
    """Create ``out`` (and its parents) and prove a file can be written in it.

    Raises ``InputError`` (exit 2) naming ``flag`` and the reason: the ``registry`` folder or a
    folder inside it (served files written there would be read as registry schemas and leave
    it invalid), an existing path that is not a folder, a folder that cannot be created, or
    one a file cannot be written in."""
    if registry is not None:
        try:
            inside = registry.exists() and out.resolve().is_relative_to(registry.resolve())
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise InputError(f"{flag} {out}: {exc}") from None
        if inside:
            raise InputError(f"{flag} must not be the registry or a folder inside it")
    if out.exists() and not out.is_dir():
        raise InputError(f"{flag} {out} exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".schemaops-write-probe-", dir=out)
    except OSError as exc:
        raise InputError(f"cannot write {flag} {out}: {exc.strerror or exc}") from None
    try:
        os.write(fd, b"probe")
    except OSError as exc:  # e.g. a full disk: the folder exists, a file does not fit
        raise InputError(f"cannot write {flag} {out}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
        Path(probe).unlink(missing_ok=True)
    return out
