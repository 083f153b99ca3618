"""Does the registry fit the engine's grammar cache? Its compiled footprint against the cap.

A registry whose compiled grammars exceed vLLM's xgrammar LRU (``VLLM_XGRAMMAR_CACHE_MB``,
512 MiB by default) evicts itself in a loop: every request compiles again, after a warm run
that reported every schema warmed. So the footprint is measured, not guessed: each schema is
compiled by xgrammar on the served tokenizer and its ``CompiledGrammar.memory_size_bytes``
(what xgrammar's cache counts against ``cache_limit_bytes``) is summed. The other backends
report no size: their footprint is ``unknown``, said as such.

The compiles run in a child process with a deadline (a hostile schema cannot hang the
caller); what was not measured in time is ``unknown`` with the reason, and an unknown part
makes the verdict ``None`` (unproven), never a pass.
"""

from __future__ import annotations

import json
import math
import os
import selectors
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from schemaops.engines.base import CachePolicy

MIB = 1024 * 1024
# A fix leaves this much room above the measured footprint (traffic's other grammars,
# regex/EBNF requests, growth of the registry).
HEADROOM = 1.25
# The child's answer for a schema xgrammar refuses: the engine caches nothing for it.
UNCOMPILED = "does not compile"


@dataclass
class Footprint:
    """The compiled size of each schema on one backend (``unknown``: name -> why not
    measured; ``uncached``: name -> why it takes no room, e.g. it does not compile, so the
    engine answers an error and caches nothing)."""

    backend: str
    tokenizer: str
    bytes_by_schema: dict[str, int] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)
    uncached: dict[str, str] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes_by_schema.values())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"total_bytes": self.total_bytes}


def _child() -> None:
    """``python -m schemaops.engines.capacity``: read ``{"tokenizer", "texts": [[name,
    text], ...]}`` on stdin, compile each with xgrammar (cache off) and print one JSON line
    ``[name, bytes | error]`` per schema as soon as it is measured."""
    job = json.loads(sys.stdin.read())

    def say(name: str, value: int | str) -> None:
        sys.stdout.write(json.dumps([name, value]) + "\n")
        sys.stdout.flush()

    try:
        from schemaops.compare.core import make_backend

        backend: Any = make_backend("xgrammar", job["tokenizer"])
    except Exception as exc:  # noqa: BLE001 - reported as unknown, never raised
        say("*", f"xgrammar unavailable: {str(exc)[:200]}")
        return
    for name, text in job["texts"]:
        try:
            compiled = backend.compiler.compile_json_schema(text, any_whitespace=True)
            say(name, int(compiled.memory_size_bytes))
        except Exception as exc:  # noqa: BLE001
            say(name, f"{UNCOMPILED}: {(str(exc).splitlines() or [''])[0][:200]}")


def xgrammar_footprint(
    texts: dict[str, str], tokenizer: str = "qwen2.5", timeout_s: float = 300.0
) -> Footprint:
    """The xgrammar footprint of ``texts`` (name -> schema text) on ``tokenizer``, measured in
    a child process stopped after ``timeout_s`` seconds (the rest is ``unknown``)."""
    fp = Footprint("xgrammar", tokenizer)
    if not texts:
        return fp
    job = json.dumps({"tokenizer": tokenizer, "texts": list(texts.items())})
    deadline = time.monotonic() + timeout_s
    with subprocess.Popen(
        [sys.executable, "-m", "schemaops.engines.capacity"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_child_env(),
    ) as proc:
        try:
            assert proc.stdin is not None and proc.stdout is not None
            writer = threading.Thread(target=_feed, args=(proc.stdin, job), daemon=True)
            writer.start()
            sel = selectors.DefaultSelector()
            sel.register(proc.stdout, selectors.EVENT_READ)
            fd, pending = proc.stdout.fileno(), b""
            while len(fp.bytes_by_schema) + len(fp.unknown) + len(fp.uncached) < len(texts):
                if b"\n" not in pending:
                    left = deadline - time.monotonic()
                    if left <= 0 or not sel.select(left):
                        break
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        break
                    pending += chunk
                    continue
                line, pending = pending.split(b"\n", 1)
                try:
                    name, value = json.loads(line)
                except ValueError:
                    continue  # not ours (a library printing to stdout)
                if name == "*":
                    fp.unknown = dict.fromkeys(texts, str(value))
                    break
                if isinstance(value, int) and name in texts:
                    fp.bytes_by_schema[name] = value
                elif name in texts and str(value).startswith(UNCOMPILED):
                    fp.uncached[name] = str(value)
                elif name in texts:
                    fp.unknown[name] = str(value)
        except (OSError, ValueError) as exc:
            fp.unknown.setdefault("*", f"the measuring process failed: {exc}")
        finally:
            proc.kill()
    fp.unknown.pop("*", None)
    for name in texts:
        if name not in fp.bytes_by_schema and name not in fp.unknown and name not in fp.uncached:
            fp.unknown[name] = (
                f"not measured within {timeout_s:g} s (or the measuring process died)"
            )
    return fp


def _child_env() -> dict[str, str]:
    """This environment with this ``schemaops`` first on the child's path."""
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def _feed(stream: Any, data: str) -> None:
    """Write the job to the child's stdin (a thread: a big registry fills the pipe)."""
    try:
        stream.write(data.encode("utf-8", "surrogatepass"))
        stream.close()
    except OSError:
        pass


@dataclass
class Fit:
    """The verdict of a footprint against a cache policy.

    ``fits``: True, False, or None (unknown: a part of the footprint could not be measured,
    or the backend reports no size). ``fix`` names the setting that makes it fit.
    """

    policy: CachePolicy
    schemas: int
    footprint_bytes: int | None
    fits: bool | None
    reason: str
    fix: str | None = None
    footprint: Footprint | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy.to_dict(),
            "schemas": self.schemas,
            "footprint_bytes": self.footprint_bytes,
            "fits": self.fits,
            "reason": self.reason,
            "fix": self.fix,
            "footprint": self.footprint.to_dict() if self.footprint else None,
        }


def needed_mb(total_bytes: int) -> int:
    """The cache size in MiB that holds ``total_bytes`` with ``HEADROOM``."""
    return max(1, math.ceil(total_bytes * HEADROOM / MIB))


def fit(policy: CachePolicy, schemas: int, footprint: Footprint | None) -> Fit:
    """Does a registry of ``schemas`` cached grammars (``footprint``: their sizes) fit?"""
    verdict = _fit(policy, schemas, footprint)
    verdict.footprint = footprint
    return verdict


def _fit(policy: CachePolicy, schemas: int, footprint: Footprint | None) -> Fit:
    measured = footprint.total_bytes if footprint is not None else None
    if policy.kind == "none":
        return Fit(policy, schemas, measured, True, "no grammar cache: every request compiles")
    if policy.kind == "unbounded":
        size = f"{measured / MIB:.1f} MiB measured" if measured is not None else "size unknown"
        return Fit(
            policy,
            schemas,
            measured,
            True,
            f"kept forever, never evicted ({size}; the server's memory grows with every "
            "distinct schema)",
        )
    if policy.kind == "lru_entries" and policy.cap_entries is not None:
        if schemas <= policy.cap_entries:
            return Fit(
                policy, schemas, measured, True, f"{schemas} <= {policy.cap_entries} entries"
            )
        return Fit(
            policy,
            schemas,
            measured,
            False,
            f"{schemas} grammars for an LRU of {policy.cap_entries}: they evict each other",
            f"set {policy.setting}" if policy.setting else None,
        )
    cap = policy.cap_bytes or 0
    over = footprint is not None and footprint.total_bytes > cap
    if not over and (footprint is None or footprint.unknown):
        n = len(footprint.unknown) if footprint else schemas
        return Fit(
            policy,
            schemas,
            measured,
            None,
            f"footprint unknown for {n} schema(s): cannot say whether it fits {cap / MIB:g} MiB",
        )
    assert footprint is not None
    if not over:
        return Fit(
            policy,
            schemas,
            measured,
            True,
            f"{footprint.total_bytes / MIB:.1f} MiB of {cap / MIB:g} MiB",
        )
    return Fit(
        policy,
        schemas,
        measured,
        False,
        f"the registry's compiled grammars take {footprint.total_bytes / MIB:.1f} MiB on "
        f"{footprint.tokenizer}, over the {cap / MIB:g} MiB LRU ({policy.setting}): they "
        "evict each other, so requests compile again after warm-up",
        f"start the server with {policy.setting}={needed_mb(footprint.total_bytes)} (the "
        f"footprint plus {round((HEADROOM - 1) * 100)}% headroom), or serve fewer schemas",
    )


if __name__ == "__main__":
    _child()
