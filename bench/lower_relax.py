"""What each step of ``lower``'s relaxation ladder saves: compile time and memory of one served
schema on one backend, as served and with each ladder step taken (cumulative, and alone).

Usage::

    python bench/lower_relax.py                                  # tool_call on outlines
    python bench/lower_relax.py --name update_profile --no-alone
    python bench/lower_relax.py --registry DIR --name NAME --backend xgrammar

Per variant, two measurements, one compile at a time:

- ``status``/``compile ms``: compare's own isolated worker (``measure_items``, the cap and
  timeout ``lower`` uses: ``--mem-mb``, ``--timeout``), no instances walked;
- ``peak MiB``: a fresh child process built like that worker (``make_backend``, then
  ``RLIMIT_AS`` at its start-up size + ``--mem-mb``), compiling once: the growth of its
  resident high-water mark (``VmHWM``) and of its virtual peak (``VmPeak``, what the cap
  limits) over the size at the cap.

The first row (``served``) is the baseline of the same run; the ratios are against it. The
ladder's order (``schemaops.lower.relax.LADDER``) is the order these figures gave on outlines.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from schemaops.compare.run import Item, measure_items  # noqa: E402
from schemaops.lower import lower_schema, probe_backend  # noqa: E402
from schemaops.lower.relax import LADDER, reason  # noqa: E402
from schemaops.registry import load_registry  # noqa: E402

_CHILD = r"""
import json, resource, sys, time
from schemaops.compare.core import make_backend
from schemaops.compare.isolate import _vm_size
backend, tokenizer, mem_mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = sys.stdin.read()
b = make_backend(backend, tokenizer)
def status():
    with open("/proc/self/status") as f:
        return {l.split(":")[0]: int(l.split()[1]) // 1024 for l in f if l.startswith("Vm")}
start = status()
resource.setrlimit(resource.RLIMIT_AS, (_vm_size() + mem_mb * 2**20,) * 2)
t = time.perf_counter()
try:
    b.compile(text)
    ok = "ok"
except MemoryError:
    ok = "oom"
end = status()
grew = {"hwm_mib": end["VmHWM"] - start["VmRSS"], "vm_mib": end["VmPeak"] - start["VmSize"]}
print(json.dumps({"status": ok, "s": time.perf_counter() - t, **grew}))
"""


def variants(schema: Any, caps: dict[str, str], backend: str, alone: bool) -> list[tuple[str, Any]]:
    """(label, Lowered): as served, each ladder prefix, and (``alone``) each step by itself."""
    why = {s.key: reason(s, backend, {"status": "bench"}) for s in LADDER}
    out = [("served", lower_schema(schema, caps, backend))]
    for n in range(1, len(LADDER) + 1):
        keys = [s.key for s in LADDER[:n]]
        out.append(
            (f"ladder {n}: +{keys[-1]}", lower_schema(schema, caps, backend, why_of(why, keys)))
        )
    if alone:
        for s in LADDER[1:]:
            out.append((f"only {s.key}", lower_schema(schema, caps, backend, why_of(why, [s.key]))))
    return out


def why_of(why: dict[str, str], keys: list[str]) -> dict[str, str]:
    return {k: why[k] for k in keys}


def peak(text: str, backend: str, tokenizer: str, mem_mb: int, timeout: float) -> dict[str, Any]:
    """One compile in a fresh capped child: status, seconds, memory growth (see module doc)."""
    try:
        res = subprocess.run(
            [sys.executable, "-c", _CHILD, backend, tokenizer, str(mem_mb)],
            input=text,
            capture_output=True,
            text=True,
            timeout=timeout + 120,  # + start-up
            cwd=REPO,
        )
    except subprocess.TimeoutExpired:
        return {"status": "timeout"}
    lines = res.stdout.strip().splitlines()
    if res.returncode != 0 or not lines:
        oom = "memory allocation of" in res.stderr or "MemoryError" in res.stderr
        return {"status": "oom" if oom else f"crash (rc {res.returncode})"}
    return json.loads(lines[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--registry", default=str(REPO / "schemas"))
    ap.add_argument("--name", default="tool_call")
    ap.add_argument("--backend", default="outlines")
    ap.add_argument("--tokenizer", default="qwen2.5")
    ap.add_argument("--mem-mb", type=int, default=4096)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--no-alone", action="store_true", help="skip the single-step variants")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    schema = load_registry(args.registry).get(args.name).bundled()
    caps = probe_backend(args.backend, args.tokenizer)
    rows = []
    for label, lw in variants(schema, caps, args.backend, not args.no_alone):
        t = time.perf_counter()
        (r,) = measure_items(
            [Item(label, lw.wire, [], [])],
            [args.backend],
            args.tokenizer,
            timeout_s=args.timeout,
            mem_mb=args.mem_mb,
        )
        p = peak(lw.wire, args.backend, args.tokenizer, args.mem_mb, args.timeout)
        rows.append(
            {
                "variant": label,
                "residual": len(lw.residual),
                "wire_chars": len(lw.wire),
                "status": r.get("status"),
                "compile_ms": r.get("compile_ms"),
                "peak_status": p.get("status"),
                "hwm_mib": p.get("hwm_mib"),
                "vm_mib": p.get("vm_mib"),
                "wall_s": round(time.perf_counter() - t, 1),
            }
        )
        print(f"  measured {label}: {r.get('status')} {r.get('compile_ms')}", file=sys.stderr)
    base = rows[0]["compile_ms"] or None
    if args.json:
        print(json.dumps({"schema": args.name, "backend": args.backend, "rows": rows}, indent=1))
        return 0
    print(f"{args.name} on {args.backend} (cap {args.mem_mb} MiB, timeout {args.timeout:g} s)")
    print(
        f"{'variant':28} {'resid':>5} {'status':>8} {'compile ms':>11} {'x served':>8} "
        f"{'RSS+ MiB':>9} {'VM+ MiB':>8}"
    )
    for r in rows:
        ms = r["compile_ms"]
        ratio = f"{ms / base:.2f}" if isinstance(ms, (int, float)) and base else "-"
        print(
            f"{r['variant']:28} {r['residual']:5} {r['status']:>8} "
            f"{ms if ms is not None else '-':>11} {ratio:>8} "
            f"{r['hwm_mib'] if r['hwm_mib'] is not None else r['peak_status']:>9} "
            f"{r['vm_mib'] if r['vm_mib'] is not None else '-':>8}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
