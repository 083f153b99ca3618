"""What ``watch`` keeps across restarts (``--state-dir``): offsets and cumulative counters.

One JSON file, ``watch-state.json``, written after each batch the loop counted: the files'
offsets (``follow.Tracked``) and the totals those offsets account for, in one atomic write
(a temporary file in the folder, fsync, rename). So a restart resumes each file where the
counters stopped: a line is never counted twice nor skipped, and the ``..._total`` series
continue instead of starting over. A second watch on the same folder is refused (a lock).
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from schemaops.audit.tally.stats import Tally
from schemaops.errors import InputError

STATE_FILE = "watch-state.json"
LOCK_FILE = "watch.lock"
VERSION = 1


class StateDir:
    """The locked ``--state-dir`` folder and its saved state."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise InputError(f"--state-dir {folder}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise InputError(f"--state-dir {folder}: another schemaops watch is using it") from None
        self._lock_fd = fd

    def load(self) -> dict[str, Any]:
        path = self.folder / STATE_FILE
        try:
            doc = orjson.loads(path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, orjson.JSONDecodeError) as exc:
            raise InputError(
                f"{path}: unreadable saved state ({exc}); remove it to start over"
            ) from None
        if not isinstance(doc, dict) or doc.get("version") != VERSION:
            raise InputError(f"{path}: not a schemaops watch state (version {VERSION})")
        return doc

    def save(self, doc: dict[str, Any]) -> None:
        data = orjson.dumps({"version": VERSION, **doc})
        fd, tmp = tempfile.mkstemp(prefix=".watch-state.", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.folder / STATE_FILE)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def close(self) -> None:
        os.close(self._lock_fd)


def totals_to_json(t: Tally, engine_errors: Counter) -> dict[str, Any]:
    """The cumulative counters a restart continues from."""
    return {
        "lines": t.lines,
        "outputs": t.outputs,
        "ok": t.ok,
        "input_errors": t.input_errors,
        "categories": dict(t.categories),
        "parse_failures": dict(t.parse_failures),
        "by_schema": {s: dict(c) for s, c in t.by_schema.items()},
        "diagnoses": dict(t.diagnoses),
        "engine_errors": dict(engine_errors),
    }


def totals_from_json(doc: dict[str, Any]) -> tuple[Tally, Counter]:
    t = Tally()
    try:
        t.lines = int(doc.get("lines", 0))
        t.outputs = int(doc.get("outputs", 0))
        t.ok = int(doc.get("ok", 0))
        t.input_errors = int(doc.get("input_errors", 0))
        t.categories = Counter(doc.get("categories") or {})
        t.parse_failures = Counter(doc.get("parse_failures") or {})
        t.by_schema = {str(s): Counter(c) for s, c in (doc.get("by_schema") or {}).items()}
        t.diagnoses = Counter(doc.get("diagnoses") or {})
        engine = Counter(doc.get("engine_errors") or {})
    except (TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"saved watch state: unreadable totals ({exc})") from None
    return t, engine
