"""What ``watch`` keeps across restarts (``--state-dir``): offsets and cumulative counters.

One JSON file, ``watch-state.json``, written after each batch the loop counted: the files'
offsets (``follow.Tracked``) and the totals those offsets account for, in one atomic write
(a temporary file in the folder, fsync, rename). So a restart resumes each file where the
counters stopped: a line is never counted twice nor skipped, and the ``..._total`` series
continue instead of starting over. A second watch on the same folder is refused (a lock).

A saved state is checked field by field when it is loaded (``check_state``): one that is not
what watch writes (a count that is no integer, or negative; a list where an object belongs)
is exit 2 naming the file and the field. Guessing would be worse: a negative offset makes a
file unreadable on every run, and a made-up count becomes a counter that is wrong for good.
"""

from __future__ import annotations

import fcntl
import math
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from schemaops.audit.report.text import visible
from schemaops.audit.tally.stats import Tally
from schemaops.errors import InputError
from schemaops.watch.files import HEAD_BYTES

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
        bad = check_state(doc)
        if bad is not None:
            raise InputError(
                f"{path}: saved state field {visible(bad)}; watch never guesses a count or an"
                " offset: fix the field, or remove the file to start over (counters from 0)"
            )
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
        "tool_steps": {s: list(v) for s, v in t.tool_steps.items()},
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
        t.tool_steps = {
            str(s): [int(v[0]), int(v[1])] for s, v in (doc.get("tool_steps") or {}).items()
        }
        engine = Counter(doc.get("engine_errors") or {})
    except (TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"saved watch state: unreadable totals ({exc})") from None
    return t, engine


#: the counters of ``totals_to_json`` (and ``skipped_lines``, which ``run`` adds)
_COUNTS = ("lines", "outputs", "ok", "input_errors", "skipped_lines")
_COUNTERS = ("categories", "parse_failures", "diagnoses", "engine_errors")
#: the integer fields of a saved file (``files.Tracked.to_json``); others may be added
_FILE_INTS = ("dev", "ino", "offset", "line", "head_len", "size")


class _Bad(Exception):
    """``where`` must be ``what``: the first problem ``check_state`` met."""


def _count(v: Any, where: str) -> int:
    if type(v) is not int or v < 0:  # a bool is no count, nor is 5.0
        raise _Bad(f"{where} must be an integer >= 0 (got {_shown(v)})")
    return v


def _time(v: Any, where: str) -> None:
    if type(v) not in (int, float) or not math.isfinite(v):
        raise _Bad(f"{where} must be a number (Unix time) (got {_shown(v)})")


def _obj(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _Bad(f"{where} must be an object (got {_shown(v)})")
    return v


def _counter(v: Any, where: str) -> None:
    for k, n in _obj(v, where).items():
        _count(n, f"{where}.{k}")


def _shown(v: Any) -> str:
    text = orjson.dumps(v).decode() if not isinstance(v, bytes) else repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_files(files: Any) -> None:
    if not isinstance(files, list):
        raise _Bad(f"files must be a list (got {_shown(files)})")
    for i, f in enumerate(files):
        where = f"files[{i}]"
        _obj(f, where)
        if not isinstance(f.get("path"), str):
            raise _Bad(f"{where}.path must be a string (got {_shown(f.get('path'))})")
        for k in _FILE_INTS:
            if k in f or k in ("dev", "ino", "offset"):
                _count(f.get(k), f"{where}.{k}")
        if f.get("head_len", 0) > HEAD_BYTES:
            raise _Bad(f"{where}.head_len must be at most {HEAD_BYTES} (got {f['head_len']})")
        if not isinstance(f.get("head", ""), str):
            raise _Bad(f"{where}.head must be a string (got {_shown(f.get('head'))})")
        for k in ("gz", "done"):
            if not isinstance(f.get(k, False), bool):
                raise _Bad(f"{where}.{k} must be true or false (got {_shown(f.get(k))})")


def _check_totals(t: Any) -> None:
    _obj(t, "totals")
    for k in _COUNTS:
        if k in t:
            _count(t[k], f"totals.{k}")
    for k in _COUNTERS:
        if k in t:
            _counter(t[k], f"totals.{k}")
    for schema, cats in _obj(t.get("by_schema", {}), "totals.by_schema").items():
        _counter(cats, f"totals.by_schema.{schema}")
    for s, v in _obj(t.get("tool_steps", {}), "totals.tool_steps").items():
        _ints(v, 2, f"totals.tool_steps.{s}")
    tools = _obj(t.get("tools", {}), "totals.tools")
    _counter(tools.get("unknown_tools", {}), "totals.tools.unknown_tools")
    if "unknown_tools_unsampled" in tools:
        _count(tools["unknown_tools_unsampled"], "totals.tools.unknown_tools_unsampled")
    if t.get("ok", 0) > t.get("outputs", 0):
        raise _Bad(f"totals.ok must be at most totals.outputs (got {t['ok']} > {t['outputs']})")


def _ints(v: Any, n: int, where: str) -> None:
    if not isinstance(v, list) or len(v) != n:
        raise _Bad(f"{where} must be a list of {n} integers >= 0 (got {_shown(v)})")
    for i, x in enumerate(v):
        _count(x, f"{where}[{i}]")


def _check_poison(p: Any) -> None:
    _obj(p, "poison")
    for s, run in _obj(p.get("runs", {}), "poison.runs").items():
        _ints(run, 3, f"poison.runs.{s}")
    for s, tot in _obj(p.get("totals", {}), "poison.totals").items():
        _ints(tot, 2, f"poison.totals.{s}")
    for s, f in _obj(p.get("flagged", {}), "poison.flagged").items():
        where = f"poison.flagged.{s}"
        if not isinstance(_obj(f, where).get("reason"), str):
            raise _Bad(f"{where}.reason must be a string (got {_shown(f.get('reason'))})")
        _time(f.get("since"), f"{where}.since")
    _counter(p.get("flag_count", {}), "poison.flag_count")
    for s, t in _obj(p.get("hook_last", {}), "poison.hook_last").items():
        _time(t, f"poison.hook_last.{s}")


def check_state(doc: dict[str, Any]) -> str | None:
    """The first field of a loaded state that is not what watch writes, as "FIELD must be
    ...", or None. Unknown fields are allowed (a later version may add some)."""
    try:
        if "files" in doc:
            _check_files(doc["files"])
        if "totals" in doc:
            _check_totals(doc["totals"])
        if "poison" in doc:
            _check_poison(doc["poison"])
        if "saved_at" in doc:
            _time(doc["saved_at"], "saved_at")
    except _Bad as exc:
        return str(exc)
    return None
