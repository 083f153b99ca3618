"""``watch -``: the lines of stdin, read by a thread into a queue bounded in bytes.

The loop never blocks on stdin: a thread reads the lines (none longer than ``--max-line``
in memory, ``jsonl.bounded_lines``) and the loop takes what is there at each poll. The queue
is bounded by the bytes it holds (``QUEUE_BYTES``), not by a count of lines: a bound of
200,000 lines let 1,200 lines of 1 MiB hold 512 MB. When the bound is reached the reader
waits (and so, through the pipe, does the writer); one line is always taken, so a line
longer than the bound still passes.
"""

from __future__ import annotations

import sys
import threading
from collections import deque

from schemaops.jsonl import bounded_lines
from schemaops.watch.files import Batch

#: bytes of unread lines held at most (one line more when a single line is longer)
QUEUE_BYTES = 16 << 20
#: what a held line costs beside its bytes (the bytes object's header, the deque's slot)
LINE_OVERHEAD = 64
#: lines taken from the queue per batch at most
STDIN_BATCH = 50_000


class StdinLines:
    """Lines of stdin read by a thread into a queue bounded in bytes."""

    def __init__(self, max_line: int, max_bytes: int = QUEUE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.cond = threading.Condition()
        self.lines: deque[bytes] = deque()
        #: bytes the queue holds now (``LINE_OVERHEAD`` per line included)
        self.held = 0
        #: set once the reader had to wait at the bound
        self.full = threading.Event()
        self.eof = False
        #: every line of stdin was read and taken
        self.ended = False
        self.line = 0
        self.thread = threading.Thread(target=self._read, args=(max_line,), daemon=True)
        self.thread.start()

    def _read(self, max_line: int) -> None:
        try:
            for line in bounded_lines(sys.stdin.buffer, max_line):
                cost = len(line) + LINE_OVERHEAD
                with self.cond:
                    while self.lines and self.held + cost > self.max_bytes:
                        self.full.set()
                        self.cond.wait()
                    self.lines.append(line)
                    self.held += cost
        except (OSError, ValueError, AttributeError):  # closed, or no stdin at all (None)
            pass
        with self.cond:
            self.eof = True

    def batch(self) -> Batch | None:
        """The lines read since the last call (at most ``STDIN_BATCH``); None if none."""
        with self.cond:
            n = min(len(self.lines), STDIN_BATCH)
            lines = [self.lines.popleft() for _ in range(n)]
            self.held -= sum(len(x) for x in lines) + LINE_OVERHEAD * n
            if self.eof and not self.lines:
                self.ended = True
            self.cond.notify_all()
        if not lines:
            return None
        first = self.line + 1
        self.line += len(lines)
        return Batch("-", first, lines)
