"""What ``follow.py`` follows: one file's saved position (``Tracked``), a batch of its new
lines, the events met, the files behind an argument, head fingerprints, and stdin.

A file is known by its (device, inode), the bytes consumed (``offset``; of the decompressed
stream for a ``.gz``), the lines consumed, and the sha256 of its first ``HEAD_BYTES`` bytes
(or of all of it while shorter): what a restart, a rotation or a ``.gz`` roll is matched by.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import queue
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from schemaops.audit.read.shardlist import local_glob
from schemaops.audit.read.shards import GLOB_CHARS
from schemaops.errors import InputError
from schemaops.jsonl import bounded_lines, open_regular

HEAD_BYTES = 256
#: file names a folder or glob contributes (a rotated ``app.jsonl.1`` is followed by inode)
SUFFIXES = (".jsonl", ".ndjson", ".json", ".log", ".gz")


def head_of(data: bytes) -> tuple[str, int]:
    """The fingerprint of a file's first bytes: (sha256 hex, how many bytes it covers)."""
    cut = data[:HEAD_BYTES]
    return hashlib.sha256(cut).hexdigest(), len(cut)


@dataclass
class Tracked:
    """One followed file (what is saved of it: ``to_json``)."""

    path: str
    dev: int
    ino: int
    offset: int = 0
    line: int = 0
    head: str = ""
    head_len: int = 0
    gz: bool = False
    size: int = 0
    fh: BinaryIO | None = field(default=None, repr=False)
    gzs: Any = field(default=None, repr=False)
    lines_iter: Any = field(default=None, repr=False)
    skipping: bool = False
    rotated_at: float | None = None
    done: bool = False
    #: when a read last reached the file's end (``lag_seconds``)
    caught_up_at: float = field(default_factory=time.monotonic)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "dev": self.dev,
            "ino": self.ino,
            "offset": self.offset,
            "line": self.line,
            "head": self.head,
            "head_len": self.head_len,
            "gz": self.gz,
            "done": self.done,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Tracked:
        return cls(
            str(d["path"]),
            int(d["dev"]),
            int(d["ino"]),
            int(d["offset"]),
            int(d.get("line", 0)),
            str(d.get("head", "")),
            int(d.get("head_len", 0)),
            bool(d.get("gz", False)),
            done=bool(d.get("done", False)),
        )

    def close(self) -> None:
        for h in (self.gzs, self.fh):
            if h is not None:
                try:
                    h.close()
                except OSError:
                    pass
        self.fh = self.gzs = self.lines_iter = None


@dataclass
class Batch:
    """New complete lines of one file: ``first_line`` is the number of the first."""

    path: str
    first_line: int
    lines: list[bytes]


@dataclass
class Events:
    """What the follower met, counted (exposed as ``..._total`` series)."""

    rotations: int = 0
    truncations: int = 0
    unreadable: int = 0
    lost_rotations: int = 0
    messages: list[str] = field(default_factory=list)

    def note(self, msg: str) -> None:
        if len(self.messages) < 100:
            self.messages.append(msg)


def expand(target: str) -> list[str]:
    """The files behind one argument now: a file, a folder (one level), or a glob."""
    if os.path.isdir(target):
        try:
            names = sorted(os.listdir(target))
        except OSError:
            return []
        return [
            os.path.join(target, n)
            for n in names
            if not n.startswith((".", "_")) and n.lower().endswith(SUFFIXES)
        ]
    if any(c in target for c in GLOB_CHARS) and not os.path.exists(target):
        return sorted(p for p in set(local_glob(target)) if not os.path.isdir(p))
    return [target]


def identity(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)  # follows a symlink; a loop is ELOOP, an OSError: no file
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino, st.st_size


def is_gz(path: str, fh: BinaryIO) -> bool:
    try:
        head = os.pread(fh.fileno(), 2, 0)
    except OSError:
        return False
    return head == b"\x1f\x8b" or path.endswith(".gz")


def gz_head(path: str) -> tuple[str, int] | None:
    try:
        with open_regular(path) as raw, gzip.GzipFile(fileobj=raw) as gz:
            return head_of(gz.read(HEAD_BYTES))
    except (InputError, OSError, EOFError, zlib.error):
        return None


def plain_head(fd: int, n: int = HEAD_BYTES) -> tuple[str, int]:
    return head_of(os.pread(fd, n, 0))


#: lines taken from stdin per batch
STDIN_BATCH = 50_000


class StdinLines:
    """Lines of stdin read by a thread into a bounded queue (the loop never blocks on it)."""

    def __init__(self, max_line: int) -> None:
        self.q: queue.Queue[bytes | None] = queue.Queue(STDIN_BATCH * 4)
        self.line = 0
        self.ended = False
        self.thread = threading.Thread(target=self._read, args=(max_line,), daemon=True)
        self.thread.start()

    def _read(self, max_line: int) -> None:
        try:
            for line in bounded_lines(sys.stdin.buffer, max_line):
                self.q.put(line)
        except OSError:
            pass
        self.q.put(None)

    def batch(self) -> Batch | None:
        lines: list[bytes] = []
        while len(lines) < STDIN_BATCH:
            try:
                item = self.q.get_nowait()
            except queue.Empty:
                break
            if item is None:
                self.ended = True
                break
            lines.append(item)
        if not lines:
            return None
        first = self.line + 1
        self.line += len(lines)
        return Batch("-", first, lines)
