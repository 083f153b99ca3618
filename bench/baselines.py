"""What both audit benches share (issue 24): texts that do not repeat, and the two baselines
timed as whole processes in the same run as the audit.

Why distinct texts: the audit remembers the verdict of an exact text per schema (the memo),
and real logs rarely repeat a text, so a workload that repeats texts measures the memo, not
the audit. ``distinct`` makes every text of a workload unique by inserting a whitespace
signature (the line's index in base 4 over the four JSON whitespace bytes) after the first
``{`` or ``[`` (or at the end of a text without one): the value parsed, the verdict and the
category stay what they were, the text is new. Parse failures keep their shape (the
signature goes after the opening brace, inside what the failure is about). The values still
repeat: this is honest only while the audit keeps no cache keyed by the parsed value (it keeps
none); a change that adds one must make the values distinct too.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
_WS = " \t\n\r"


def signature(i: int) -> str:
    """A whitespace string unique to ``i``."""
    out = []
    while True:
        out.append(_WS[i & 3])
        i >>= 2
        if not i:
            return "".join(out)


def distinct(text: str, i: int) -> str:
    """``text`` made unique by ``signature(i)``, without changing what it parses to."""
    at = min((k for k in (text.find("{"), text.find("[")) if k >= 0), default=-1)
    if at < 0:
        return text + signature(i)
    return text[: at + 1] + signature(i) + text[at + 1 :]


def byte_compile() -> None:
    """Byte-compile the checkout's ``schemaops`` (into its git-ignored ``__pycache__``) before
    timing whole processes: an installed schemaops has its ``.pyc`` files, and a shell with
    ``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile some 70 modules from source in every
    audit process (0.05-0.1 s) while the baselines import only compiled extensions."""
    import compileall

    if not compileall.compile_dir(HERE.parent / "schemaops", quiet=1):
        raise SystemExit("cannot byte-compile schemaops")


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, str]:
    """Wall seconds of one whole process (start-up included) and its stdout."""
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return time.perf_counter() - t0, out


def rs_loop_cmd(path: Path, *, registry: Path | None = None, schemas: Path | None = None) -> list:
    """The jsonschema-rs loop (``rs_loop.py``) over ``path``."""
    cmd = [sys.executable, str(HERE / "rs_loop.py"), str(path)]
    if registry is not None:
        cmd += ["--registry", str(registry)]
    if schemas is not None:
        cmd += ["--schemas", str(schemas)]
    return cmd


def parse_only_cmd(path: Path) -> list:
    """The orjson parse-only loop (``parse_only.py``) over ``path``."""
    return [sys.executable, str(HERE / "parse_only.py"), str(path)]


def audit_cmd(path: Path, registry: Path, *extra: str) -> list:
    """``schemaops audit`` with default options (``--json`` so the output is read back)."""
    code = "from schemaops.cli import main; main()"
    return [
        sys.executable,
        "-c",
        code,
        "audit",
        str(path),
        "--registry",
        str(registry),
        "--json",
        *extra,
    ]
