"""``tool_choice`` auto for ``toolset_compile.py``: the structural tag each engine builds,
compiled cold in a child process with a per-compile timeout.

Why a child process of its own: a structural tag is not a JSON schema, so ``compare``'s
isolated workers (which compile schemas) cannot take it; ``schemaops.check.tooltags``
compiles it in-process, with no bound. Here one child per backend builds the backend once
(``compare.core.make_backend``: xgrammar's cache off, ``max_threads`` as asked), then per
task derives the tag (``engines.structural_tags.derive_tag``: SGLang 0.5.23's legacy tag for
its qwen25 parser, vLLM 0.32.0's hermes tag), compiles it as the engine does
(``check.tooltags.compile_tag``) and walks one call to the last tool (``tag_result``). The
parent waits ``timeout`` seconds for each answer and kills the child past it (``timeout``;
the next task starts a fresh child).

Arguments are held to ``parameters`` (``strict_level`` 2: SGLang
``SGLANG_TOOL_STRICT_LEVEL=2``, vLLM ``--tool-strict-level parameter``): what makes the tag
compile the tools' schemas at all, so it is comparable with ``required``. Without it (the
engines' default) ``auto`` is unconstrained in both.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

STRICT_LEVEL = 2
HERE = Path(__file__).resolve()


class TagWorker:
    """The parent's handle on one child (one backend)."""

    def __init__(self, backend: str, tokenizer: str, threads: int) -> None:
        self.backend, self.tokenizer, self.threads = backend, tokenizer, threads
        self.proc: subprocess.Popen | None = None

    def _start(self) -> str | None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE), self.backend, self.tokenizer, str(self.threads)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        line = self._read(300.0)
        return None if line == "ready" else f"tag worker did not start: {line!r}"

    def _read(self, timeout: float) -> str | None:
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        return self.proc.stdout.readline().strip()

    def run(self, task: dict, timeout: float) -> dict[str, Any]:
        """One tag compiled and walked: ``{status, compile_ms, mask_us, mask_steps, error}``."""
        if self.proc is None or self.proc.poll() is not None:
            err = self._start()
            if err:
                self.close()
                return {"status": "error", "error": err}
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(task) + "\n")
        self.proc.stdin.flush()
        line = self._read(timeout)
        if not line:
            crashed = line == "" and self.proc.poll() is not None
            self.close()
            return {"status": "crash" if crashed else "timeout", "error": f"> {timeout:g} s"}
        return json.loads(line)

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(10)
            self.proc = None


def child(backend_name: str, tokenizer: str, threads: int) -> None:
    """The child's loop: answers one JSON line per task line on the original stdout (the
    libraries' own prints go to stderr)."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.path.insert(0, str(HERE.parents[1]))
    from schemaops.check.tooltags import call_text, tag_result
    from schemaops.compare.core import make_backend
    from schemaops.engines.structural_tags import derive_tag

    backend = make_backend(backend_name, tokenizer, compile_threads=threads)
    print("ready", file=out, flush=True)
    for line in sys.stdin:
        task = json.loads(line)
        tt = derive_tag(task["engine"], task["tools"], "auto", None, STRICT_LEVEL)
        if tt.tag is None:
            print(json.dumps({"status": "error", "error": tt.note}), file=out, flush=True)
            continue
        insts = []
        if task.get("args") is not None:
            text = call_text(tt, task["tools"][-1]["function"]["name"], task["args"])
            insts = [{"kind": "valid", "index": 0, "keyword": None, "text": text}]
        r = tag_result(backend, tt, insts, "tag")
        keep = ("status", "compile_ms", "mask_us", "mask_steps", "error")
        ans = {k: r.get(k) for k in keep}
        ans["tag_bytes"] = len(json.dumps(tt.tag).encode())
        print(json.dumps(ans), file=out, flush=True)


if __name__ == "__main__":
    child(sys.argv[1], sys.argv[2], int(sys.argv[3]))
