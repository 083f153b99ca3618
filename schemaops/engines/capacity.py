"""Does the registry fit the engine's grammar cache? Its compiled footprint against the cap.

A registry whose compiled grammars exceed vLLM's xgrammar LRU (``VLLM_XGRAMMAR_CACHE_MB``,
512 MiB by default) evicts itself in a loop: every request compiles again, after a warm run
that reported every schema warmed. So the footprint is measured, not guessed: each schema is
compiled by xgrammar on the served tokenizer with a cache-enabled ``GrammarCompiler``, as vLLM
builds it (``cache_enabled=True``, vllm/v1/structured_output/backend_xgrammar.py
``XgrammarBackend.__post_init__``), and a schema's size is what the compiler's own
``get_cache_size_bytes()`` grew by when it was compiled: the number xgrammar's LRU compares
with ``cache_limit_bytes``. That is not ``CompiledGrammar.memory_size_bytes``: xgrammar
0.2.9's cache also holds a rule-level cache shared by grammars (measured on qwen2.5: a
patterned string's grammar has ``memory_size_bytes`` 552,548 and grows the cache by 2,097,544
bytes the first time, 560,568 for each later schema with the same pattern), so the first
schema that uses a construct carries the shared part. The other backends report no size:
their footprint is ``unknown``, said as such.

The LRU is shared with live traffic (a schema not in the registry, regex/EBNF requests), so
a registry ``fits`` only when it leaves ``headroom_pct`` of the cap free (below). The
footprint names the xgrammar version and tokenizer it was measured with; the engine's may
differ (``version_notes``).

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
from schemaops.errors import InputError

MIB = 1024 * 1024
# The share of the cap a registry must leave free to "fit": vLLM's xgrammar LRU is one cache
# per engine for every structured request, so grammars outside the registry (a schema not
# registered yet, regex/choice/EBNF requests, the JSON-object grammar) take room and evict the
# least recently used registry schema. 510 of 512 MiB is evicted by the first one of them. 20%
# is the margin the fix has always asked for (footprint x 1.25 = footprint / 0.8), so a server
# started with the suggested cap passes its own check; it also absorbs the size drift between
# xgrammar releases (the footprint is measured with this environment's xgrammar, not the
# engine's). ``--cache-headroom 0`` for a server whose traffic is exactly the registry.
DEFAULT_HEADROOM_PCT = 20.0
# The child's answer for a schema xgrammar refuses: the engine caches nothing for it.
UNCOMPILED = "does not compile"


@dataclass
class Footprint:
    """The compiled size of each schema on one backend, in the engine cache's own unit (for
    xgrammar: the bytes ``GrammarCompiler.get_cache_size_bytes()`` grew by, in the order the
    schemas were given). ``unknown``: name -> why not measured; ``uncached``: name -> why it
    takes no room (it does not compile, so the engine answers an error and caches nothing).
    ``library_version``: the grammar library that measured it (None: not installed)."""

    backend: str
    tokenizer: str
    bytes_by_schema: dict[str, int] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)
    uncached: dict[str, str] = field(default_factory=dict)
    library_version: str | None = None
    unit: str = "xgrammar GrammarCompiler.get_cache_size_bytes() growth per compile"

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes_by_schema.values())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"total_bytes": self.total_bytes}


def _child() -> None:
    """``python -m schemaops.engines.capacity``: read ``{"tokenizer", "texts": [[name,
    text], ...]}`` on stdin, compile each in order with one cache-enabled xgrammar compiler
    (no limit: nothing is evicted while measuring) and print one JSON line ``[name, bytes |
    error]`` per schema as soon as it is measured: what the cache grew by."""
    job = json.loads(sys.stdin.read())

    def say(name: str, value: int | str) -> None:
        sys.stdout.write(json.dumps([name, value]) + "\n")
        sys.stdout.flush()

    try:
        import xgrammar as xgr

        from schemaops.backends.xgrammar import ENGINE_MAX_THREADS
        from schemaops.compare.core import make_backend

        backend: Any = make_backend("xgrammar", job["tokenizer"])
        # vLLM's compiler: cache on, 8 threads (backend_xgrammar.py XgrammarBackend).
        compiler = xgr.GrammarCompiler(
            backend.info, max_threads=ENGINE_MAX_THREADS, cache_enabled=True, cache_limit_bytes=-1
        )
    except Exception as exc:  # noqa: BLE001 - reported as unknown, never raised
        say("*", f"xgrammar unavailable: {str(exc)[:200]}")
        return
    for name, text in job["texts"]:
        before = compiler.get_cache_size_bytes()
        try:
            compiler.compile_json_schema(text, any_whitespace=True)
            say(name, int(compiler.get_cache_size_bytes() - before))
        except Exception as exc:  # noqa: BLE001
            say(name, f"{UNCOMPILED}: {(str(exc).splitlines() or [''])[0][:200]}")


def library_version(name: str) -> str | None:
    """The installed version of ``name`` (the child runs this same interpreter)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def xgrammar_footprint(
    texts: dict[str, str], tokenizer: str = "qwen2.5", timeout_s: float = 300.0
) -> Footprint:
    """The xgrammar footprint of ``texts`` (name -> schema text, in send order) on
    ``tokenizer``, measured in a child process stopped after ``timeout_s`` seconds (the rest
    is ``unknown``)."""
    fp = Footprint("xgrammar", tokenizer, library_version=library_version("xgrammar"))
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
                    # epoll refuses a wait past ~35 minutes (OverflowError): wait in slices
                    if left <= 0 or not sel.select(min(left, 600.0)):
                        if left > 600.0:
                            continue
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
    ``headroom_pct``: the share of the cap kept free for traffic outside the registry.
    ``versions``: what the footprint was measured with against what the engine runs
    (``version_notes``).
    """

    policy: CachePolicy
    schemas: int
    footprint_bytes: int | None
    fits: bool | None
    reason: str
    fix: str | None = None
    footprint: Footprint | None = None
    headroom_pct: float = DEFAULT_HEADROOM_PCT
    versions: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        usable = usable_bytes(self.policy.cap_bytes, self.headroom_pct)
        return {
            "policy": self.policy.to_dict(),
            "schemas": self.schemas,
            "footprint_bytes": self.footprint_bytes,
            "fits": self.fits,
            "reason": self.reason,
            "fix": self.fix,
            "headroom_pct": self.headroom_pct,
            "usable_bytes": usable,
            "versions": self.versions,
            "footprint": self.footprint.to_dict() if self.footprint else None,
        }


def usable_bytes(cap_bytes: int | None, headroom_pct: float) -> int | None:
    """The part of a byte cap a registry may fill, ``headroom_pct`` left free."""
    return None if cap_bytes is None else int(cap_bytes * (100.0 - headroom_pct) / 100.0)


def check_headroom(headroom_pct: float) -> float:
    """``headroom_pct`` if it is a percentage a registry can fit under (0 <= h < 100)."""
    if not (isinstance(headroom_pct, int | float) and 0.0 <= float(headroom_pct) < 100.0):
        raise InputError(
            f"--cache-headroom must be a percentage from 0 to below 100, got {headroom_pct!r}"
        )
    return float(headroom_pct)


def needed_mb(total_bytes: int, headroom_pct: float = DEFAULT_HEADROOM_PCT) -> int:
    """The cache size in MiB that holds ``total_bytes`` with ``headroom_pct`` of it free."""
    return max(1, math.ceil(total_bytes * 100.0 / (100.0 - headroom_pct) / MIB))


def version_notes(
    footprint: Footprint | None, engine_xgrammar: str | None, engine_source: str
) -> dict[str, Any]:
    """What the footprint was measured with against the engine's own versions, and a note for
    each that differs or is unknown (sizes change between xgrammar releases and tokenizers).

    ``engine_xgrammar``: the engine's xgrammar version (None: unknown), ``engine_source``:
    where that came from. No engine reports its tokenizer by name: the served tokenizer is
    what ``--tokenizer`` says, and is said to be taken on trust."""
    if footprint is None or footprint.backend != "xgrammar":
        return {}
    measured = footprint.library_version
    notes = []
    if engine_xgrammar is None:
        notes.append(
            f"the engine's xgrammar version is unknown ({engine_source}); measured with "
            f"xgrammar {measured or 'not installed'}"
        )
    elif measured != engine_xgrammar:
        notes.append(
            f"measured with xgrammar {measured or 'not installed'}, the engine runs "
            f"{engine_xgrammar} ({engine_source}): compiled sizes can differ between releases"
        )
    notes.append(
        f"measured on tokenizer {footprint.tokenizer} (--tokenizer); the server does not report "
        "its tokenizer, so that it is the served one is taken on trust"
    )
    return {
        "measured_with": {"xgrammar": measured, "tokenizer": footprint.tokenizer},
        "engine": {"xgrammar": engine_xgrammar, "tokenizer": None, "source": engine_source},
        "notes": notes,
    }


def fit(
    policy: CachePolicy,
    schemas: int,
    footprint: Footprint | None,
    headroom_pct: float = DEFAULT_HEADROOM_PCT,
) -> Fit:
    """Does a registry of ``schemas`` cached grammars (``footprint``: their sizes) fit, with
    ``headroom_pct`` of a byte cap left free for the traffic outside it?"""
    verdict = _fit(policy, schemas, footprint, headroom_pct)
    verdict.footprint = footprint
    verdict.headroom_pct = headroom_pct
    return verdict


def _fit(
    policy: CachePolicy, schemas: int, footprint: Footprint | None, headroom_pct: float
) -> Fit:
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
    usable = usable_bytes(cap, headroom_pct) or 0
    room = f"{cap / MIB:g} MiB less {headroom_pct:g}% headroom = {usable / MIB:.1f} MiB"
    over = footprint is not None and footprint.total_bytes > usable
    if not over and (footprint is None or footprint.unknown):
        n = len(footprint.unknown) if footprint else schemas
        return Fit(
            policy,
            schemas,
            measured,
            None,
            f"footprint unknown for {n} schema(s): cannot say whether it fits {room}",
        )
    assert footprint is not None
    total = footprint.total_bytes
    if not over:
        return Fit(policy, schemas, measured, True, f"{total / MIB:.1f} MiB of {room}")
    fix = (
        f"start the server with {policy.setting}={needed_mb(total, headroom_pct)} (the "
        f"footprint with {headroom_pct:g}% of the cache left free), or serve fewer schemas"
    )
    if total <= cap:
        return Fit(
            policy,
            schemas,
            measured,
            False,
            f"the registry's compiled grammars take {total / MIB:.1f} MiB on "
            f"{footprint.tokenizer}: under the {cap / MIB:g} MiB LRU ({policy.setting}) but "
            f"over {room}, the share left once other traffic's grammars are cached: the first "
            "grammar outside the registry evicts a registry schema",
            fix + "; or --cache-headroom 0 if the server's only structured traffic is this "
            "registry",
        )
    return Fit(
        policy,
        schemas,
        measured,
        False,
        f"the registry's compiled grammars take {total / MIB:.1f} MiB on "
        f"{footprint.tokenizer}, over the {cap / MIB:g} MiB LRU ({policy.setting}): they "
        "evict each other, so requests compile again after warm-up",
        fix,
    )


if __name__ == "__main__":
    _child()
