"""Following growing JSONL logs: new complete lines, rotation, truncation, ``.gz`` rolls.

A followed file is known by its (device, inode), the bytes consumed (``offset``, of the
decompressed stream for a ``.gz``), the lines consumed, and a fingerprint of its head (sha256
of its first ``HEAD_BYTES`` bytes, or of all of it while it is shorter). The rules, and the
followers they are taken from (Vector's file source: vectordotdev/vector
``lib/file-source/src/fingerprinter.rs``, ``checkpointer.rs``, ``file_server.rs``; Fluent
Bit's tail input: docs.fluentbit.io/manual/data-pipeline/inputs/tail, ``Rotate_Wait``, ``DB``):

- only complete lines are consumed: a last line without its newline waits for the rest
  (except in a file rotated away, whose writer is gone: its tail is consumed once the file
  has stopped growing for the grace period);
- a line longer than ``max_line`` is read past (never held) and yielded as an
  ``OverlongLine``, which the audit counts as an input error;
- truncation (the file got shorter than the offset, or its head changed under the same
  inode, as ``copytruncate`` does) starts the file over at 0 with the new head as its
  fingerprint; the point reached before is remembered, so the copy ``copytruncate`` made
  (plain or ``.gz``) is read from there: the lines written since the last poll are in the
  copy only;
- rotation (the path now names another inode, or the file left the followed names): the
  old file stays open and is read to its end, however far behind the reader is, and until
  it has not grown for ``ROTATE_GRACE_S`` (Fluent Bit's ``Rotate_Wait``, 5 s: the writer may
  append until it reopens); the new one is read from 0. A folder's rotated names
  (``app.log.1``, ``app.log-20261203``, SGLang's ``x.log.2026-12-03_13``) are followed as
  the file they were, by inode;
- a ``.gz`` file is complete when it appears; a file (``.gz`` or a copy) whose head is the
  head of a file already followed is that file rolled: through a descriptor still reading
  that file (a rename: this one is done), else from the furthest point reached in any file
  of that head (``copytruncate``, a restart): only what was not read is read;
- a file whose name is still in a followed folder is remembered while it is there (so 1,100
  rolled ``.gz`` are read once, whatever their number); records of files gone are kept up to
  ``RETIRED_MAX``;
- at most ``max_open`` files are open: a file read to its end is closed first and reopened
  (by its name, checked by inode and head) when its size or mtime changes;
- a loss that cannot be avoided (a file gone before it was read to its end: removed while
  watch was down, or while closed) is counted (``lost_rotations``) and said;
- only regular files are opened (``jsonl.open_regular``: a FIFO or device is refused, never
  waited on); folders are listed one level deep and globs never follow a symlink loop
  (``shardlist.local_glob``).
"""

from __future__ import annotations

import errno
import gzip
import os
import resource
import time
import zlib
from typing import Any

from schemaops.errors import InputError
from schemaops.jsonl import open_regular
from schemaops.watch.files import (
    HEAD_BYTES,
    Batch,
    Events,
    Known,
    Tracked,
    expand,
    gz_head,
    head_at,
    head_of,
    identity,
    is_gz,
    plain_head,
    rolled_name,
    rolled_siblings,
    shown,
)
from schemaops.watch.reading import finish, gz_lines, plain_lines

__all__ = ["Batch", "Events", "Follower", "Tracked", "expand"]

#: seconds a file rotated away is still read after it stopped growing (Fluent Bit's
#: ``Rotate_Wait`` default: docs.fluentbit.io/manual/data-pipeline/inputs/tail)
ROTATE_GRACE_S = 5.0
#: records of files gone kept (for their heads: a later roll or copy of one is recognised)
RETIRED_MAX = 1000
#: open files at most, whatever the limit of the process
MAX_OPEN = 512
_NO_FD = (os.strerror(errno.EMFILE), os.strerror(errno.ENFILE), "no such file")


def default_max_open() -> int:
    """Half the soft ``RLIMIT_NOFILE`` less a reserve (the state, sockets, the hook, the
    registry's files), at most ``MAX_OPEN``: 1,100 files under ``ulimit -n 1024`` get 480."""
    try:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (OSError, ValueError):
        return 64
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return MAX_OPEN
    return max(4, min(MAX_OPEN, (soft - 64) // 2))


class Follower:
    """Follows the files behind ``targets`` (files, folders, globs; not ``-``)."""

    def __init__(
        self,
        targets: list[str],
        saved: list[dict[str, Any]] | None = None,
        from_end: bool = False,
        max_line: int = 32 << 20,
        batch_bytes: int = 8 << 20,
        max_open: int | None = None,
    ) -> None:
        self.targets = targets
        self.max_line = max_line
        self.batch_bytes = batch_bytes
        self.from_end = from_end
        self.max_open = max_open or default_max_open()
        self.events = Events()
        #: every file behind the targets now (open, closed while idle, or done), and files
        #: rotated away still being read, by (dev, ino)
        self.files: dict[tuple[int, int], Tracked] = {}
        #: records of files not followed now (saved, finished and gone, before a truncation)
        self.known = Known(RETIRED_MAX)
        for d in saved or []:
            try:
                self.known.add(Tracked.from_json(d))
            except (KeyError, TypeError, ValueError):
                continue
        self.n_open = 0
        self._first = True
        #: a file had more than one batch's worth in the last poll
        self.more = False
        #: .gz files whose head could not be read yet, by size (unchanged twice: corrupt)
        self._pending_gz: dict[tuple[int, int], int] = {}
        #: closed files that changed since they were closed (``scan``), to reopen and read
        self._changed: set[tuple[int, int]] = set()
        #: the followed files by head (built once per scan when a new file needs it)
        self._heads: dict[str, list[Tracked]] | None = None

    # --- discovery --------------------------------------------------------------------
    def scan(self) -> None:
        """Open what is new behind the targets; notice rotations, removals, changed files."""
        seen: set[tuple[int, int]] = set()
        self._heads = None
        self._changed.clear()
        for target in self.targets:
            for path in expand(target):
                ident = identity(path)
                if ident is None:
                    continue
                key = (ident[0], ident[1])
                if key in seen:
                    continue
                seen.add(key)
                t = self.files.get(key)
                if t is not None and t.fh is None and t.head_len:
                    changed = (ident[2], ident[3]) != (t.size, t.mtime_ns)
                    if t.done and changed:  # a finished file changed: another file now
                        self._retire(key, t)
                        t = None
                    elif not t.done and (changed or t.gz or t.offset < ident[2]):
                        self._changed.add(key)
                if t is None:
                    self._open_new(path, key, ident[2], ident[3])
                    continue
                t.path = path  # renamed in a folder: the same file
                t.rotated_at = None
        now = time.monotonic()
        for key, t in list(self.files.items()):
            if key in seen:
                continue
            if t.done or t.fh is None:  # finished, or closed and gone before it was read
                if not t.done and t.size > t.offset:
                    self._lost(t, "removed or renamed away while closed")
                t.done = True
                self._retire(key, t)
            elif t.rotated_at is None:
                t.rotated_at = t.grown_at = now  # rotated away or removed: read to its end
                self.events.rotations += 1
        if self._first:
            self._first = False
            self._unmatched_saved()
        self.known.trim()

    def _unmatched_saved(self) -> None:
        """After the first scan: a saved file not found is looked for under its rotated
        names (a FILE renamed while watch was down); not there, its unread rest is lost:
        counted when bytes were known unread, or when it was a live log (a rolled name,
        ``app.log.3``, is written no more: read to its saved size, nothing of it is lost)."""
        for rec in list(self.known.rows.values()):
            if rec.matched or rec.done or rec.gz:
                continue
            here = identity(rec.path)
            if here is not None and (here[0], here[1]) == (rec.dev, rec.ino):
                continue  # still there, no longer named by the targets: nothing lost
            for sib in rolled_siblings(rec.path):
                ident = identity(sib)
                if ident is not None and (ident[0], ident[1]) == (rec.dev, rec.ino):
                    self._open_new(sib, (ident[0], ident[1]), ident[2], ident[3])
                    break
            if not rec.matched and (rec.size > rec.offset or not rolled_name(rec.path)):
                self._lost(rec, "gone while watch was not running")
            rec.done = True

    def _lost(self, t: Tracked, why: str) -> None:
        self.events.lost_rotations += 1
        self.events.note(
            f"{shown(t.path)}: {why}: lines written to it after line {t.line} (byte "
            f"{t.offset}) are lost (counted in lost_rotations)"
        )
        t.matched = True

    def _open_new(self, path: str, key: tuple[int, int], size: int, mtime: int) -> None:
        room = self._room()
        try:
            fh = open_regular(path)
        except InputError as exc:
            if any(s in str(exc) for s in _NO_FD):  # gone since the stat, or no fd: next poll
                return
            self.events.unreadable += 1
            self.events.note(shown(str(exc)))
            self.files[key] = Tracked(path, key[0], key[1], done=True, size=size, mtime_ns=mtime)
            return
        self.n_open += 1
        t = Tracked(path, key[0], key[1], fh=fh, size=size, mtime_ns=mtime)
        t.gz = is_gz(path, fh)
        if t.gz:
            head = gz_head(path)
            if head is None:  # being written (looked at again next poll), or corrupt
                self._close(t)
                if self._pending_gz.get(key) == size:  # no longer growing: corrupt
                    self.events.unreadable += 1
                    self.events.note(f"cannot read {shown(path)}: not a readable gzip file")
                    self.files[key] = Tracked(
                        path, key[0], key[1], done=True, size=size, mtime_ns=mtime
                    )
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
        if t.done or not room:
            self._close(t)
            if not t.done:
                self._changed.add(key)  # to read: reopened when there is room
        self.files[key] = t
        if self._heads is not None and t.head_len == HEAD_BYTES:
            self._heads.setdefault(t.head, []).append(t)

    def _resume_point(self, key: tuple[int, int], t: Tracked, path: str) -> Tracked | None:
        """Where this file continues from: a record of the same inode *and* the same head
        (saved, finished before); or, for a copy or a roll (a file that starts with the full
        head of one followed), through the descriptor of that file while it still holds what
        was read (its descriptor reads the rest: this one is done), else from the furthest
        point reached in a file of that head (``copytruncate``, a restart)."""
        for old in self.known.by_inode(*key):
            if old.gz == t.gz and self._starts_with(t, old, path):
                self.known.remove(old)
                old.matched = True
                return old
        if t.head_len < HEAD_BYTES:
            return None
        same = [o for o in self._files_by_head(t.head) if o is not t]
        for other in same:
            if not other.done and not other.gz:
                if self._holds(other):
                    offset = other.offset if t.gz else t.size
                    return Tracked(path, *key, offset, other.line, done=True)
                return Tracked(path, *key, other.offset, other.line)
        records = [o for o in same if o.done] + self.known.by_head(t.head)
        if not records:
            return None
        best = max(records, key=lambda o: o.offset)
        for o in self.known.by_head(t.head):
            o.matched = o.done = True  # its rest is read here: never a loss after a restart
        return Tracked(path, *key, best.offset, best.line)

    def _files_by_head(self, head: str) -> list[Tracked]:
        if self._heads is None:
            self._heads = {}
            for f in self.files.values():
                if f.head_len == HEAD_BYTES:
                    self._heads.setdefault(f.head, []).append(f)
        return self._heads.get(head, [])

    def _holds(self, other: Tracked) -> bool:
        """Whether ``other``'s file still has what was read of it (its head, at least its
        offset): not emptied by ``copytruncate`` since (then its copy holds the rest)."""
        fh, opened = other.fh, None
        try:
            if fh is None:
                opened = fh = open_regular(other.path)
                st = os.fstat(fh.fileno())
                if (st.st_dev, st.st_ino) != (other.dev, other.ino):
                    return False
            fd = fh.fileno()
            if os.fstat(fd).st_size < other.offset:
                return False
            return plain_head(fd, other.head_len)[0] == other.head
        except (InputError, OSError):
            return False
        finally:
            if opened is not None:
                opened.close()

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

    # --- open files -------------------------------------------------------------------
    def _room(self) -> bool:
        """Whether one more file may stay open; closes the longest idle files (read to
        their end, not rotated away) to make room when the bound is reached."""
        if self.n_open < self.max_open:
            return True
        idle = [
            t
            for t in self.files.values()
            if t.fh is not None
            and not (t.done or t.gz or t.skipping)
            and t.rotated_at is None
            and t.offset >= t.size
        ]
        idle.sort(key=lambda t: t.grown_at)
        for t in idle[: max(1, self.max_open // 8)]:
            self._close(t)
        return self.n_open < self.max_open

    def _reopen(self, key: tuple[int, int], t: Tracked) -> bool:
        """A closed file opened again by its name, if that still names its inode."""
        if not self._room():
            return False
        try:
            fh = open_regular(t.path)
        except InputError:
            return False
        st = os.fstat(fh.fileno())
        if (st.st_dev, st.st_ino) != key:  # renamed since the scan: the next one finds it
            fh.close()
            return False
        self.n_open += 1
        t.fh = fh
        return True

    def _close(self, t: Tracked) -> None:
        if t.fh is not None:
            self.n_open -= 1
        t.close()

    def _retire(self, key: tuple[int, int], t: Tracked) -> None:
        self.files.pop(key, None)
        self._close(t)
        if t.head_len:
            self.known.add(t)

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
            if t.fh is None:
                if key not in self._changed:
                    continue
                if not self._reopen(key, t):
                    self.more = True  # no descriptor free now: read on at once
                    continue
            first = t.line + 1
            try:
                lines = self._read_gz(t) if t.gz else self._read_plain(t, now)
            except OSError as exc:
                self.events.unreadable += 1
                self.events.note(f"{shown(t.path)}: unreadable at byte {t.offset}: {exc}")
                lines, t.done = [], True
            if lines:
                out.append(Batch(t.path, first, lines))
            if t.done:
                self._close(t)
                if t.rotated_at is not None:
                    self._retire(key, t)
        return out

    def _read_plain(self, t: Tracked, now: float) -> list[bytes]:
        assert t.fh is not None
        fd = t.fh.fileno()
        st = os.fstat(fd)
        size, before = st.st_size, t.size
        if size > t.size:
            t.grown_at = now
        t.size, t.mtime_ns = size, st.st_mtime_ns
        if size < t.offset or (t.head_len and t.offset and self._head_changed(t, fd)):
            self._truncated(t, fd, before)
        elif t.head_len < HEAD_BYTES and size > t.head_len:
            t.head, t.head_len = plain_head(fd)
        final = t.rotated_at is not None and now - t.grown_at >= ROTATE_GRACE_S
        lines, budget = plain_lines(t, fd, size, self.batch_bytes, self.max_line, final)
        if budget > 0:
            t.caught_up_at = now
        else:
            self.more = True
        if final and budget > 0:
            finish(t, fd, size, self.max_line, lines)
        return lines

    def _truncated(self, t: Tracked, fd: int, before: int) -> None:
        """``copytruncate`` (or a shorter rewrite): start over at 0 with the new head as
        the fingerprint (kept, the old head would call every later poll a truncation); the
        point reached before is remembered by the old head, where the copy resumes."""
        self.events.truncations += 1
        if t.offset and t.head_len:
            ghost = Tracked(t.path, t.dev, t.ino, t.offset, t.line, t.head, t.head_len,
                            size=t.offset, done=True, matched=True)  # fmt: skip
            self.known.add(ghost)
            self._find_copy(t, ghost, before)
        t.offset, t.line, t.skipping = 0, 0, False
        t.head, t.head_len = plain_head(fd)

    def _find_copy(self, t: Tracked, ghost: Tracked, before: int) -> None:
        """The copy ``copytruncate`` made holds the lines not read yet. Followed already (a
        folder's ``app.log.1``), it resumes by head; else it is looked for among the file's
        rotated names (a FILE target) and read from the point reached, to its end. Only a
        file that starts with the old head is taken (never an older roll). Not found, the
        bytes known unread are a counted loss."""
        if any(o is not t and o.head == ghost.head for o in self.files.values()):
            return
        for sib in rolled_siblings(t.path):
            ident = identity(sib)
            if ident is None or (ident[0], ident[1]) in self.files:
                continue
            if head_at(sib, ghost.head_len) != ghost.head:
                continue
            key = (ident[0], ident[1])
            self._open_new(sib, key, ident[2], ident[3])
            c = self.files.get(key)
            if c is not None and not c.done and c.offset < ghost.offset:
                c.offset, c.line = ghost.offset, ghost.line  # not read yet: a .gz seeks there
            if c is not None:
                c.rotated_at = c.grown_at = time.monotonic()  # no followed name: to its end
            return
        if before > ghost.offset:
            self._lost(ghost, "emptied by copytruncate, its copy not found")

    def _head_changed(self, t: Tracked, fd: int) -> bool:
        """``copytruncate`` then new lines past the old offset: the same inode, a new head."""
        return plain_head(fd, t.head_len)[0] != t.head

    def _read_gz(self, t: Tracked) -> list[bytes]:
        """Up to ``batch_bytes`` of a complete ``.gz``'s lines (past its offset)."""
        lines, more, broken = gz_lines(t, self.batch_bytes, self.max_line)
        self.more = self.more or more
        if broken is not None:
            self.events.unreadable += 1
            self.events.note(f"{shown(t.path)}: unreadable after line {t.line}: {broken}")
        return lines

    # --- state ------------------------------------------------------------------------
    def lag_bytes(self) -> dict[str, int]:
        """Bytes behind each followed plain file's end (a ``.gz`` reports its compressed
        rest), by the file's name as text (``files.shown``)."""
        out: dict[str, int] = {}
        for t in self.files.values():
            if t.done:
                continue
            if t.gz:
                rest = 0 if t.lines_iter is None or t.fh is None else t.size - t.fh.tell()
                out[shown(t.path)] = max(0, rest)
            else:
                out[shown(t.path)] = max(0, t.size - t.offset)
        return out

    def lag_seconds(self, now: float) -> dict[str, float]:
        """Seconds since each followed file's reader last reached its end (0: it did now,
        or the file is closed with nothing unread)."""
        return {
            shown(t.path): 0.0
            if t.fh is None and t.offset >= t.size
            else max(0.0, now - t.caught_up_at)
            for t in self.files.values()
            if not t.done
        }

    def saved(self) -> list[dict[str, Any]]:
        """What a restart resumes from: the records of files gone (the most recent
        ``RETIRED_MAX``), then every followed file."""
        rows = [t.to_json() for t in self.known.rows.values() if t.head_len]
        rows += [t.to_json() for t in self.files.values() if t.head_len]
        return rows  # a followed file's row last: where a record shares its key, it wins

    def close(self) -> None:
        for t in self.files.values():
            self._close(t)
