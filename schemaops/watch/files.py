"""What ``follow.py`` follows: one file's saved position (``Tracked``), the records of files
not followed now (``Known``), a batch of new lines, the events met, the files behind an
argument (with their rotated names), and head fingerprints.

A file is known by its (device, inode), the bytes consumed (``offset``; of the decompressed
stream for a ``.gz``), the lines consumed, and the sha256 of its first ``HEAD_BYTES`` bytes
(or of all of it while shorter): what a restart, a rotation or a ``.gz`` roll is matched by.
The fingerprint stands beside the inode, never behind it: an inode is reused as soon as a file
is removed (logrotate's ``create`` + ``compress``), so a record matches a file only when both
agree, or by the fingerprint alone for a copy or a roll (as Vector's file source checksums a
file's first bytes: vectordotdev/vector ``lib/file-source/src/fingerprinter.rs``).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from schemaops.audit.read.shardlist import local_glob
from schemaops.audit.read.shards import GLOB_CHARS
from schemaops.errors import InputError
from schemaops.jsonl import open_regular

HEAD_BYTES = 256
#: file names a folder or glob contributes (and the rotated names of these: ``ROLLED``)
SUFFIXES = (".jsonl", ".ndjson", ".json", ".log", ".gz")
#: a rotated file's name: a followed name, then a rotation suffix, then maybe ``.gz``.
#: logrotate: ``app.log.1`` and, with ``dateext``, ``app.log-20261203`` (default dateformat
#: ``-%Y%m%d``, logrotate(8)); Python's logging.handlers (docs.python.org/3/library/
#: logging.handlers.html): RotatingFileHandler ``app.log.1``, TimedRotatingFileHandler
#: ``app.log.2026-12-03_13`` (``when='H'``; ``%Y-%m-%d`` to ``%Y-%m-%d_%H-%M-%S``), the hourly
#: rename of SGLang's JSON request log (``HOSTNAME_RANK.log.2026-12-03_13``: SGLang 0.5.23
#: ``python/sglang/srt/utils/log_utils.py``, ``TimedRotatingFileHandler(filename, when="H",
#: backupCount=0)``, read in the dev server's wheel).
ROLLED = re.compile(
    r"(?P<base>.+?(?:\.jsonl|\.ndjson|\.json|\.log))[.-]"
    r"(?:\d{1,12}|\d{4}-\d{2}-\d{2}(?:[_T]\d{2}(?:-\d{2}){0,2})?)(?:\.gz)?",
    re.IGNORECASE,
)


def followed_name(name: str) -> bool:
    """Whether a folder's entry is followed: a log name, or the rotated name of one."""
    if name.startswith((".", "_")):
        return False
    return name.lower().endswith(SUFFIXES) or ROLLED.fullmatch(name) is not None


def rolled_name(path: str) -> bool:
    """Whether ``path`` names a rotated file (``app.log.1``): one no writer appends to."""
    return ROLLED.fullmatch(os.path.basename(path)) is not None


def shown(path: str) -> str:
    """``path`` as text any output takes (JSON, a Prometheus label, a log line): a name
    that is not UTF-8 (``os.listdir`` gives its bytes as lone surrogates) is written with
    ``\\xNN`` escapes; the path itself is kept to open the file."""
    try:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return path.encode("utf-8", "backslashreplace").decode("utf-8")


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
    #: the file's size when last looked at (``stat`` in a scan, ``fstat`` in a read)
    size: int = 0
    fh: BinaryIO | None = field(default=None, repr=False)
    gzs: Any = field(default=None, repr=False)
    lines_iter: Any = field(default=None, repr=False)
    skipping: bool = False
    #: when the file left the followed names (renamed away or removed)
    rotated_at: float | None = None
    done: bool = False
    #: when a read last reached the file's end (``lag_seconds``)
    caught_up_at: float = field(default_factory=time.monotonic)
    #: the file's mtime when last looked at (a closed file changed: ``scan``)
    mtime_ns: int = 0
    #: when the file was last seen growing (a rotated file is done once it stops)
    grown_at: float = field(default_factory=time.monotonic)
    #: a saved record that a file was found for (or whose loss was counted)
    matched: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "path": shown(self.path),
            "dev": self.dev,
            "ino": self.ino,
            "offset": self.offset,
            "line": self.line,
            "head": self.head,
            "head_len": self.head_len,
            "gz": self.gz,
            "done": self.done,
            "size": self.size,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Tracked:
        t = cls(
            str(d["path"]),
            int(d["dev"]),
            int(d["ino"]),
            int(d["offset"]),
            int(d.get("line", 0)),
            str(d.get("head", "")),
            int(d.get("head_len", 0)),
            bool(d.get("gz", False)),
            size=int(d.get("size", 0)),
            done=bool(d.get("done", False)),
        )
        if min(t.offset, t.line, t.head_len, t.size) < 0 or t.head_len > HEAD_BYTES:
            raise ValueError("negative offset, line, size or head length")
        return t

    def close(self) -> None:
        for h in (self.gzs, self.fh):
            if h is not None:
                try:
                    h.close()
                except OSError:
                    pass
        self.fh = self.gzs = self.lines_iter = None

    def fingerprint(self) -> tuple[int, int, str, int, bool]:
        return self.dev, self.ino, self.head, self.head_len, self.gz


class Known:
    """Records of files not followed now: finished and gone, saved and not found yet, and the
    point a file reached before ``copytruncate`` emptied it. Keyed by inode *and* head
    fingerprint (an inode is reused; a head is shared by a file, its copy and its ``.gz``),
    found by either, at most ``cap`` kept (the oldest forgotten first) once ``trim`` is
    called: files still in a followed folder are ``Follower.files``, never forgotten."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.rows: dict[tuple[int, int, str, int, bool], Tracked] = {}
        self._by_ino: dict[tuple[int, int], set[tuple[int, int, str, int, bool]]] = {}
        self._by_head: dict[str, set[tuple[int, int, str, int, bool]]] = {}

    def add(self, t: Tracked) -> None:
        self.remove(t)
        fp = t.fingerprint()
        self.rows[fp] = t
        self._by_ino.setdefault((t.dev, t.ino), set()).add(fp)
        if t.head_len == HEAD_BYTES:
            self._by_head.setdefault(t.head, set()).add(fp)

    def remove(self, t: Tracked) -> None:
        fp = t.fingerprint()
        if self.rows.pop(fp, None) is None:
            return
        _discard(self._by_ino, (t.dev, t.ino), fp)
        _discard(self._by_head, t.head, fp)

    def by_inode(self, dev: int, ino: int) -> list[Tracked]:
        return [self.rows[fp] for fp in self._by_ino.get((dev, ino), ())]

    def by_head(self, head: str) -> list[Tracked]:
        return [self.rows[fp] for fp in self._by_head.get(head, ())]

    def trim(self) -> None:
        while len(self.rows) > self.cap:
            self.remove(next(iter(self.rows.values())))


def _discard(index: dict[Any, set[Any]], k: Any, fp: Any) -> None:
    keys = index.get(k)
    if keys is not None:
        keys.discard(fp)
        if not keys:
            del index[k]


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
        return [os.path.join(target, n) for n in names if followed_name(n)]
    if any(c in target for c in GLOB_CHARS) and not os.path.exists(target):
        return sorted(p for p in set(local_glob(target)) if not os.path.isdir(p))
    return [target]


def identity(path: str) -> tuple[int, int, int, int] | None:
    """(device, inode, size, mtime in ns) of what ``path`` names now, or None."""
    try:
        st = os.stat(path)  # follows a symlink; a loop is ELOOP, an OSError: no file
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def rolled_siblings(path: str) -> list[str]:
    """The rotated names of ``path`` in its folder (``app.log.1``, ``app.log-20261203``):
    where a file that was renamed while nobody read it is looked for."""
    folder, name = os.path.split(path)
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return []
    out = []
    for n in names:
        m = ROLLED.fullmatch(n)
        if m is not None and m.group("base") == name:
            out.append(os.path.join(folder, n))
    return sorted(out)


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


def head_at(path: str, n: int) -> str | None:
    """The fingerprint of the first ``n`` bytes of ``path`` (decompressed, for a gzip
    file), or None when it cannot be read."""
    try:
        with open_regular(path) as raw:
            if os.pread(raw.fileno(), 2, 0) != b"\x1f\x8b":
                return head_of(os.pread(raw.fileno(), n, 0))[0]
            with gzip.GzipFile(fileobj=raw) as gz:
                return head_of(gz.read(n))[0]
    except (InputError, OSError, EOFError, zlib.error):
        return None


def plain_head(fd: int, n: int = HEAD_BYTES) -> tuple[str, int]:
    return head_of(os.pread(fd, n, 0))
