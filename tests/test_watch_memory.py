"""What ``watch`` holds is bounded in bytes, whatever the size of what it reads: the
request-log name memo (``json_schema`` string -> registry name) and the queue of ``watch -``.

Measured structurally: the bytes Python still holds (``tracemalloc``) after the input went
through, not the process's RSS and never a timing.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import pytest
from watch_support import ITEM, registry

from schemaops.audit.read.extract import MAX_LINE_BYTES
from schemaops.audit.read.sglang_log import SchemaNames
from schemaops.watch import run as watch_run

MIB = 1 << 20


def test_the_name_memo_holds_no_whole_schema_strings(tmp_path: Path) -> None:
    """40 distinct 1 MiB schemas: the memo keeps their names, not their text (it kept up to
    4,096 whole strings: 600 distinct 1 MB schemas held 1.26 GB)."""
    names = SchemaNames(str(registry(tmp_path)))
    assert names.name(json.dumps(ITEM)) == "item"  # the registry is read before measuring
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for i in range(40):
            text = json.dumps({"type": "object", "description": f"{i}:" + "x" * MIB})
            assert names.name(text).startswith("unregistered:")
            assert names.name(text) == names.name(text[:])  # memoised: same answer
            del text
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert held < 2 * MIB, f"the memo holds {held / MIB:.1f} MiB after 40 MiB of schemas"
    assert names.name(json.dumps(ITEM)) == "item"


def test_stdin_queue_is_bounded_in_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """48 lines of 1 MiB on stdin that nobody takes yet: the reader stops at the byte bound
    (it took up to 200,000 lines: 1,200 lines of 1 MiB held 512 MB); then every line
    arrives, in order."""
    r, w = os.pipe()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(os.fdopen(r, "rb")))
    count = 48
    lines = [b"%d " % i + b"x" * MIB + b"\n" for i in range(count)]
    written = threading.Event()

    def write() -> None:
        with os.fdopen(w, "wb") as fh:
            for line in lines:
                fh.write(line)
        written.set()

    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        stdin = watch_run.StdinLines(MAX_LINE_BYTES)
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        full = getattr(stdin, "full", None)  # set by the reader when it waits at its bound
        deadline = time.monotonic() + 120
        while not (written.is_set() or (full is not None and full.is_set())):
            assert time.monotonic() < deadline, "the reader neither read all nor stopped"
            time.sleep(0.01)
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert held < 24 * MIB, f"stdin's queue holds {held / MIB:.1f} MiB of 48 MiB unread"
    got: list[bytes] = []
    deadline = time.monotonic() + 120
    while not stdin.ended:
        assert time.monotonic() < deadline, f"only {len(got)} of {count} lines arrived"
        b = stdin.batch()
        if b is None:
            time.sleep(0.01)
            continue
        assert b.first_line == len(got) + 1
        got += b.lines
    assert [x.split(b" ", 1)[0] for x in got] == [b"%d" % i for i in range(count)]
    writer.join(10)
