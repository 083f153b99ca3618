"""Read registry JSON (schema files, sidecars) strictly enough that nothing is lost silently.

Python's ``json`` module accepts three things a registry must not: duplicate keys (the last
one wins, so the schema served is not the one the author reads), lone UTF-16 surrogates
(``"\\ud800"`` parses, but the wire string cannot be encoded as UTF-8, so hashing or sending
it crashes later), and nesting so deep that the C parser or every recursive consumer
(jsonschema's metaschema check, validation, diff) raises ``RecursionError``. Each becomes a
problem that names the file and where, instead of a traceback or a silent change.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import orjson

from schemaops.exactjson import MAX_EXACT_DIGITS, may_have_long_int
from schemaops.strings import pointer

#: Largest registry file read (a schema or sidecar past this is refused, not read whole)
MAX_FILE_BYTES = 64 << 20


def read_bytes(path: str | Path) -> bytes:
    """A registry file's bytes; ``OSError`` for anything but a regular file of at most
    ``MAX_FILE_BYTES`` (a FIFO named ``x.json`` would block the read forever, a device such
    as ``/dev/zero`` behind a symlink would never end): a bounded, explained refusal."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"not a regular file (a folder, FIFO, socket or device): {path}")
        # one read of the size fstat gave (plus one byte, to see growth), more if it grew
        parts = [os.read(fd, min(st.st_size, MAX_FILE_BYTES) + 1)]
        size = len(parts[0])
        while parts[-1] and size <= MAX_FILE_BYTES:
            parts.append(os.read(fd, 1 << 20))
            size += len(parts[-1])
    finally:
        os.close(fd)
    if size > MAX_FILE_BYTES:
        raise OSError(f"larger than {MAX_FILE_BYTES >> 20} MiB: {path}")
    return b"".join(parts)


def read_text(path: str | Path) -> str:
    """``read_bytes`` decoded as UTF-8 (``UnicodeDecodeError`` when it is not)."""
    return read_bytes(path).decode("utf-8")


#: Deepest nesting of JSON containers accepted in a schema file or a sidecar instance.
#: jsonschema recurses several frames per level; 100 schema levels (about 200 JSON levels)
#: already exhaust Python's default recursion limit. Real schemas stay far below: the
#: deepest of JSONSchemaBench's 9,557 is 27 levels.
MAX_DEPTH = 128


class _Duplicates:
    """``object_pairs_hook`` that builds dicts as ``json`` does and remembers repeated keys."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict:
        out = dict(pairs)
        if len(out) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen and key not in self.keys:
                    self.keys.append(key)
                seen.add(key)
        return out


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def shape_problems(data: Any, max_depth: int = MAX_DEPTH) -> list[tuple[str, str, str]]:
    """``(pointer, kind, reason)`` for nesting deeper than ``max_depth`` and lone surrogates.

    Iterative, so it is safe on any depth. Stops at the first problem of each kind.
    """
    out: list[tuple[str, str, str]] = []
    too_deep = surrogate = False
    stack: list[tuple[Any, tuple, int]] = [(data, (), 1)]
    while stack and not (too_deep and surrogate):
        node, parts, depth = stack.pop()
        if isinstance(node, str):
            if not surrogate and _has_surrogate(node):
                surrogate = True
                out.append((pointer(parts), "bad_unicode", _surrogate_reason(node)))
            continue
        if not isinstance(node, (dict, list)):
            continue
        if depth > max_depth:
            if not too_deep:
                too_deep = True
                out.append(
                    (
                        pointer(parts[:8]) + ("/..." if len(parts) > 8 else ""),
                        "too_deep",
                        f"nested deeper than {max_depth} levels: refused (checking or "
                        "validating it would exhaust the recursion limit)",
                    )
                )
            continue
        if isinstance(node, dict):
            for key, value in node.items():
                if not surrogate and _has_surrogate(key):
                    surrogate = True
                    out.append((pointer(parts), "bad_unicode", _surrogate_reason(key, "key")))
                stack.append((value, (*parts, key), depth + 1))
        else:
            stack.extend((v, (*parts, i), depth + 1) for i, v in enumerate(node))
    return out


def _within_depth(data: Any, max_depth: int) -> bool:
    """No container nested deeper than ``max_depth`` (``shape_problems``' depth rule, without
    the pointers it builds: 4x faster, and what every clean file needs)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            return False
        depth += 1
        if type(node) is dict:
            stack.extend((v, depth) for v in node.values() if type(v) in (dict, list))
        elif type(node) is list:
            stack.extend((v, depth) for v in node if type(v) in (dict, list))
    return True


def _surrogate_reason(text: str, what: str = "string") -> str:
    bad = next(c for c in text if "\ud800" <= c <= "\udfff")
    return (
        f"a {what} holds a lone surrogate \\u{ord(bad):04x}: not valid Unicode, so the wire "
        "string cannot be encoded as UTF-8"
    )


_NOT_PLAIN = object()


def _plain(text: str, max_depth: int) -> Any:
    """The value of a text with none of the problems ``parse`` reports, read by orjson (in C,
    without the Python hook per object that finds duplicates), or ``_NOT_PLAIN`` when that is
    not proven, and ``parse`` reads it as before. Proven when there is:
    - no ``\\u`` escape (no lone surrogate, no escaped colon);
    - no run of 19 digits where orjson read a large float (it reads an integer from 2**64, or
      below -2**63, as one; the stdlib keeps it exact);
    - as many colons in the text as in orjson's own writing of the value (a repeated key
      loses its pair, and its colon, there);
    - nesting within ``max_depth`` (by counting openers, else walked).
    orjson refuses what the stdlib refuses here (``NaN``, control characters in strings), and
    then the stdlib reads it and names the problem."""
    if "\\u" in text:
        return _NOT_PLAIN
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return _NOT_PLAIN
    if text.count("[") + text.count("{") > max_depth and not _within_depth(data, max_depth):
        return _NOT_PLAIN  # (and orjson writes no more than 255 levels)
    try:
        back = orjson.dumps(data)
    except TypeError:
        return _NOT_PLAIN
    if text.count(":") != back.count(b":"):
        return _NOT_PLAIN
    # such a float is written back with an exponent of at least 18 ("1.8446744073709552e+19"):
    # without "e+" in orjson's writing there is no digit run to look for
    if b"e+" in back and may_have_long_int(text):
        return _NOT_PLAIN
    return data


def parse(text: str, max_depth: int = MAX_DEPTH) -> tuple[Any, list[tuple[str, str, str]]]:
    """Parse JSON text; return ``(data, problems)`` with problems as (pointer, kind, reason).

    ``data`` is ``None`` when the text could not be parsed at all (``not_json``,
    ``too_deep``). Duplicate keys (``duplicate_key``), lone surrogates (``bad_unicode``)
    and nesting beyond ``max_depth`` (``too_deep``) are reported with the parsed data.
    """
    data = _plain(text, max_depth)
    if data is not _NOT_PLAIN:
        return data, []
    return strict_parse(text, max_depth)


class _NotJsonConstant(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity``: the stdlib reads them unless told not to."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _no_constant(name: str) -> Any:
    raise _NotJsonConstant(name)


def strict_parse(text: str, max_depth: int = MAX_DEPTH) -> tuple[Any, list[tuple[str, str, str]]]:
    """``parse`` by the stdlib alone (what ``parse`` answers for every text; the reference
    its orjson path is tested against)."""
    hook = _Duplicates()
    try:
        data = json.loads(text, object_pairs_hook=hook, parse_constant=_no_constant)
    except _NotJsonConstant as exc:
        reason = (
            f"not JSON: {exc.name} is not a JSON number (RFC 8259 has no NaN or Infinity);"
            " Python's json reads it, strict parsers (orjson, JavaScript's JSON.parse) refuse it"
        )
        return None, [("", "not_json", reason)]
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        return None, [("", "not_json", f"not JSON: {exc.msg} at {where}")]
    except RecursionError:
        reason = f"nested too deeply to parse (more than {max_depth} levels are refused)"
        return None, [("", "too_deep", reason)]
    except ValueError as exc:  # an integer past the interpreter's digit limit (a DoS guard)
        if "digits" not in str(exc):
            raise
        reason = (
            f"an integer of more than {MAX_EXACT_DIGITS} digits (Python's limit on reading"
            " one: sys.get_int_max_str_digits)"
        )
        return None, [("", "number_too_long", reason)]
    # a lone surrogate can only come from a \u escape (the text is valid Unicode): without
    # one, and within the depth bound, there is no shape problem to point at
    if "\\u" in text or not _within_depth(data, max_depth):
        problems = shape_problems(data, max_depth)
    else:
        problems = []
    if hook.keys:
        shown = ", ".join(repr(k) for k in hook.keys[:5])
        more = f" and {len(hook.keys) - 5} more" if len(hook.keys) > 5 else ""
        problems.append(
            (
                "",
                "duplicate_key",
                f"duplicate key(s) {shown}{more} in one object: JSON parsers keep only the "
                "last value, so what is served is not what the file reads",
            )
        )
    return data, problems
