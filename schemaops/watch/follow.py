"""Following growing JSONL logs: new complete lines, rotation, truncation, ``.gz`` rolls.

A followed file is known by its (device, inode), the bytes consumed (``offset``, of the
decompressed stream for a ``.gz``), the lines consumed, and a fingerprint of its head (sha256
of its first ``HEAD_BYTES`` bytes, or of all of it while it is shorter). Rules:

- only complete lines are consumed: a last line without its newline waits for the rest
  (except in a file rotated away, whose writer is gone: its tail is consumed once the grace
  period after the rotation has passed);
- a line longer than ``max_line`` is read past (never held) and yielded as an
  ``OverlongLine``, which the audit counts as an input error;
- truncation (the file got shorter than the offset, or its head changed under the same
  inode, as ``copytruncate`` does) starts the file over at 0;
- rotation (the path now names another inode): the old file stays open and is read to its
  end (the writer may still append until it reopens), the new one is read from 0;
- a ``.gz`` file is complete when it appears; a ``.gz`` whose head is the head of a file
  already followed is that file rolled and compressed: it is read only past what was read
  of that file (so a restart after a rotation loses nothing and doubles nothing);
- only regular files are opened (``jsonl.open_regular``: a FIFO or device is refused, never
  waited on); folders are listed one level deep and globs never follow a symlink loop
  (``shardlist.local_glob``).
"""

from __future__ import annotations

import gzip
import os
import time
import zlib
from typing import Any

from schemaops.errors import InputError
from schemaops.jsonl import OverlongLine, bounded_lines, open_regular
from schemaops.watch.files import (
    HEAD_BYTES,
    Batch,
    Events,
    Tracked,
    expand,
    gz_head,
    head_of,
    identity,
    is_gz,
    plain_head,
)

__all__ = ["Batch", "Events", "Follower", "Tracked", "expand"]

CHUNK = 1 << 20
#: seconds a file rotated away is still read (its writer may append until it reopens)
ROTATE_GRACE_S = 5.0
#: finished files remembered (for their heads: a later ``.gz`` roll of one is recognised)
RETIRED_MAX = 1000


class Follower:
    """Follows the files behind ``targets`` (files, folders, globs; not ``-``)."""

    def __init__(
        self,
        targets: list[str],
        saved: list[dict[str, Any]] | None = None,
        from_end: bool = False,
        max_line: int = 32 << 20,
        batch_bytes: int = 8 << 20,
    ) -> None:
        self.targets = targets
        self.max_line = max_line
        self.batch_bytes = batch_bytes
        self.from_end = from_end
        self.events = Events()
        self.files: dict[tuple[int, int], Tracked] = {}
        #: finished or saved-but-not-found files, by (dev, ino): offsets and heads to resume
        self.retired: dict[tuple[int, int], Tracked] = {}
        for d in saved or []:
            try:
                t = Tracked.from_json(d)
            except (KeyError, TypeError, ValueError):
                continue
            self.retired[(t.dev, t.ino)] = t
        self._first = True
        #: a file had more than one batch's worth in the last poll
        self.more = False
        #: .gz files whose head could not be read yet, by size (unchanged twice: corrupt)
        self._pending_gz: dict[tuple[int, int], int] = {}

    # --- discovery --------------------------------------------------------------------
    def scan(self) -> None:
        """Open what is new behind the targets; notice rotations, truncations, removals."""
        seen: set[tuple[int, int]] = set()
        for target in self.targets:
            for path in expand(target):
                ident = identity(path)
                if ident is None:
                    continue
                key = (ident[0], ident[1])
                seen.add(key)
                t = self.files.get(key)
                if t is not None:
                    t.path = path  # renamed in a folder: the same file
                    continue
                self._open_new(path, key, ident[2])
        now = time.monotonic()
        for key, t in list(self.files.items()):
            if key not in seen and t.rotated_at is None and not t.done:
                t.rotated_at = now  # rotated away or removed: read on for the grace period
                self.events.rotations += 1
        self._first = False

    def _open_new(self, path: str, key: tuple[int, int], size: int) -> None:
        known = self.retired.get(key)
        if known is not None and known.done and not known.head_len:
            return  # found unreadable before (not regular, a corrupt gzip): said once
        try:
            fh = open_regular(path)
        except InputError as exc:
            self.events.unreadable += 1
            self.events.note(str(exc))
            self._retire(key, Tracked(path, key[0], key[1], done=True))
            return
        t = Tracked(path, key[0], key[1], fh=fh, size=size)
        t.gz = is_gz(path, fh)
        if t.gz:
            head = gz_head(path)
            if head is None:  # being written (looked at again next poll), or corrupt
                fh.close()
                if self._pending_gz.get(key) == size:  # no longer growing: corrupt
                    self.events.unreadable += 1
                    self.events.note(f"cannot read {path}: not a readable gzip file")
                    self._retire(key, Tracked(path, key[0], key[1], done=True))
                self._pending_gz[key] = size
                return
            self._pending_gz.pop(key, None)
        else:
            head = plain_head(fh.fileno())
        t.head, t.head_len = head
        old = self._resume_point(key, t, path)
        if old is not None:
            t.offset, t.line = old.offset, old.line
            t.done = old.done and t.gz
        elif self._first and self.from_end and not t.gz:
            t.offset = size
            t.line = 0
        if t.done:
            t.close()
        self.files[key] = t

    def _resume_point(self, key: tuple[int, int], t: Tracked, path: str) -> Tracked | None:
        """Where this file continues from: the same inode with the same head (saved or
        finished before); or, for a copy or a ``.gz`` roll (a file that starts with the full
        head of one already known), the point reached in that one: through a file still
        open (its descriptor reads the rest: this one is done), else its saved offset."""
        old = self.retired.get(key)
        if old is not None and old.gz == t.gz and self._starts_with(t, old, path):
            del self.retired[key]
            return old
        for other in self.files.values():
            if other.head_len == HEAD_BYTES and self._starts_with(t, other, path):
                return Tracked(path, *key, other.offset, other.line, done=True)
        for old in self.retired.values():
            if old.head_len == HEAD_BYTES and old.offset and self._starts_with(t, old, path):
                return Tracked(path, *key, old.offset, old.line, done=False)
        return None

    def _starts_with(self, t: Tracked, old: Tracked, path: str) -> bool:
        if old.head_len == 0 or t.head_len < old.head_len:
            return False
        if old.head_len == t.head_len:
            return old.head == t.head
        if t.gz:
            try:
                with open_regular(path) as raw, gzip.GzipFile(fileobj=raw) as gz:
                    return head_of(gz.read(old.head_len))[0] == old.head
            except (InputError, OSError, EOFError, zlib.error):
                return False
        assert t.fh is not None
        return plain_head(t.fh.fileno(), old.head_len)[0] == old.head

    # --- reading ----------------------------------------------------------------------
    def poll(self) -> list[Batch]:
        """Scan, then the new complete lines of every file (at most ``batch_bytes`` each)."""
        self.scan()
        self.more = False
        out: list[Batch] = []
        now = time.monotonic()
        for key, t in list(self.files.items()):
            if t.done:
                continue
            first = t.line + 1
            try:
                lines = self._read_gz(t) if t.gz else self._read_plain(t, now)
            except OSError as exc:
                self.events.unreadable += 1
                self.events.note(f"{t.path}: unreadable at byte {t.offset}: {exc}")
                lines, t.done = [], True
            if lines:
                out.append(Batch(t.path, first, lines))
            if t.rotated_at is not None and now - t.rotated_at >= ROTATE_GRACE_S:
                t.done = True
            if t.done:
                t.close()
                self._retire(key, t)
        return out

    def _retire(self, key: tuple[int, int], t: Tracked) -> None:
        self.files.pop(key, None)
        self.retired[key] = t
        while len(self.retired) > RETIRED_MAX:
            del self.retired[next(iter(self.retired))]

    def _read_plain(self, t: Tracked, now: float) -> list[bytes]:
        assert t.fh is not None
        fd = t.fh.fileno()
        size = os.fstat(fd).st_size
        t.size = size
        if size < t.offset or (t.head_len and t.offset and self._head_changed(t, fd)):
            self.events.truncations += 1
            t.offset, t.line, t.skipping = 0, 0, False
        if t.head_len < HEAD_BYTES and size > t.head_len:
            t.head, t.head_len = plain_head(fd)
        lines: list[bytes] = []
        budget = self.batch_bytes
        final = t.rotated_at is not None and now - t.rotated_at >= ROTATE_GRACE_S
        while t.offset < size and budget > 0:
            buf = os.pread(fd, min(CHUNK, size - t.offset), t.offset)
            if not buf:
                break
            if t.skipping:  # inside an overlong line: up to its newline
                i = buf.find(b"\n")
                if i < 0:
                    t.offset += len(buf)
                    continue
                t.offset += i + 1
                t.skipping = False
                t.line += 1
                lines.append(OverlongLine())
                continue
            last = buf.rfind(b"\n")
            if last < 0:
                if not self._long_line(t, fd, size, lines, final):
                    break
                continue
            part = buf[:last].split(b"\n")
            lines.extend(part)
            t.line += len(part)
            t.offset += last + 1
            budget -= last + 1
        if budget > 0:
            t.caught_up_at = now
        else:
            self.more = True
        if final and not t.skipping and t.offset < size and budget > 0:
            tail = os.pread(fd, min(size - t.offset, self.max_line), t.offset)
            if tail and b"\n" not in tail:  # the rotated file's last line, never completed
                lines.append(tail)
                t.line += 1
                t.offset += len(tail)
        return lines

    def _head_changed(self, t: Tracked, fd: int) -> bool:
        """``copytruncate`` then new lines past the old offset: the same inode, a new head."""
        return plain_head(fd, t.head_len)[0] != t.head

    def _long_line(self, t: Tracked, fd: int, size: int, lines: list[bytes], final: bool) -> bool:
        """No newline in the next chunk: one line up to ``max_line`` bytes, or an overlong
        one to read past. False when the line is not complete yet (wait for the rest)."""
        buf = os.pread(fd, min(self.max_line + 1, size - t.offset), t.offset)
        i = buf.find(b"\n")
        if i >= 0:
            lines.append(buf[:i])
            t.line += 1
            t.offset += i + 1
            return True
        if len(buf) > self.max_line:
            t.skipping = True
            t.offset += len(buf)
            return True
        if final and buf:
            lines.append(buf)
            t.line += 1
            t.offset += len(buf)
            return True
        return False

    def _read_gz(self, t: Tracked) -> list[bytes]:
        """Up to ``batch_bytes`` of a complete ``.gz``'s lines (past its offset)."""
        assert t.fh is not None
        if t.lines_iter is None:
            t.fh.seek(0)
            t.gzs = gzip.GzipFile(fileobj=t.fh)
            try:
                t.gzs.seek(t.offset)
            except (EOFError, zlib.error, OSError) as exc:
                return self._gz_broken(t, exc)
            t.lines_iter = bounded_lines(t.gzs, self.max_line)
        lines: list[bytes] = []
        budget = self.batch_bytes
        try:
            for line in t.lines_iter:  # a last line without newline is complete: the file is
                lines.append(line)
                t.line += 1
                t.offset = t.gzs.tell()
                budget -= len(line) + 1
                if budget <= 0:
                    self.more = True
                    return lines
        except (EOFError, zlib.error, OSError) as exc:
            lines.extend(self._gz_broken(t, exc))
            return lines
        t.done = True
        return lines

    def _gz_broken(self, t: Tracked, exc: BaseException) -> list[bytes]:
        self.events.unreadable += 1
        self.events.note(f"{t.path}: unreadable after line {t.line}: {type(exc).__name__}")
        t.done = True
        return []

    # --- state ------------------------------------------------------------------------
    def lag_bytes(self) -> dict[str, int]:
        """Bytes behind each open plain file's end (a ``.gz`` reports its compressed rest)."""
        out: dict[str, int] = {}
        for t in self.files.values():
            if t.done or t.fh is None:
                continue
            if t.gz:
                out[t.path] = 0 if t.lines_iter is None else max(0, t.size - t.fh.tell())
            else:
                out[t.path] = max(0, t.size - t.offset)
        return out

    def lag_seconds(self, now: float) -> dict[str, float]:
        """Seconds since each open file's reader last reached its end (0: it did now)."""
        return {
            t.path: max(0.0, now - t.caught_up_at)
            for t in self.files.values()
            if not t.done and t.fh is not None
        }

    def saved(self) -> list[dict[str, Any]]:
        """What a restart resumes from: every open file, then the most recent finished."""
        rows = [t.to_json() for t in self.files.values()]
        rows += [t.to_json() for t in list(self.retired.values())[-RETIRED_MAX:] if t.head_len]
        return rows

    def close(self) -> None:
        for t in self.files.values():
            t.close()
