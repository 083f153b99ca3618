"""One audit workload, two source trees, the loops beside them: same-run ratios (issue 36).

    git worktree add /tmp/oldtree OLD_COMMIT
    python bench/audit_before_after.py --old /tmp/oldtree FILE --registry DIR [--jobs 1]

Each round runs, as separate processes and in turn: ``schemaops audit FILE --registry DIR
--json`` from the old tree (``PYTHONPATH`` set to it, so its ``schemaops`` is imported), the
same from this tree, the jsonschema-rs loop (``rs_loop.py``) and the orjson parse-only loop
(``parse_only.py``). The audit gets an empty ``--cache-dir`` each run (cold) unless
``--warm``, where each tree keeps its own cache folder, filled by one untimed run first.
Printed: best wall time of each, and the ratios the issue asks for (loop time / audit time,
parse-only time / audit time), old and new, from the same rounds.

The two trees' ``--json`` reports are then compared field by field (``elapsed_s`` and
``jobs`` left out) and, with ``--records``, their ``--records`` files byte for byte (one
untimed run each): any other difference is printed, and the exit code is 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from baselines import parse_only_cmd, rs_loop_cmd  # noqa: E402

CODE = "from schemaops.cli import main; main()"


def audit(root: Path, path: Path, registry: Path, cache: Path, jobs: int, *extra: str) -> tuple:
    """(wall seconds, stdout) of one ``schemaops audit`` from the tree at ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    cmd = [sys.executable, "-c", CODE, "audit", str(path), "--registry", str(registry)]
    cmd += ["--json", "--cache-dir", str(cache), "--jobs", str(jobs), *extra]
    t = time.perf_counter()
    out = subprocess.run(cmd, cwd=root, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - t
    if out.returncode not in (0, 1):
        raise SystemExit(f"audit from {root} exited {out.returncode}: {out.stderr[-800:]!r}")
    return wall, out.stdout


def timed(cmd: list) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=True)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("file", type=Path)
    ap.add_argument("--registry", type=Path, required=True)
    ap.add_argument("--old", type=Path, required=True, help="the old source tree")
    ap.add_argument("--new", type=Path, default=REPO, help="the new source tree (this one)")
    ap.add_argument("--jobs", type=int, default=0, help="the audit's --jobs (0: automatic)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warm", action="store_true", help="a warm facts cache (one run first)")
    ap.add_argument("--records", action="store_true", help="also compare --records files")
    args = ap.parse_args()
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    scratch = Path(tempfile.mkdtemp(prefix="before-after-"))
    best: dict[str, float] = {}
    reports: dict[str, dict] = {}
    try:
        caches = {k: scratch / f"cache-{k}" for k in trees}
        if args.warm:
            for k, root in trees.items():
                audit(root, args.file, args.registry, caches[k], args.jobs)
        timed(parse_only_cmd(args.file))  # the page cache
        for r in range(args.rounds):
            for k, root in trees.items():
                cache = caches[k] if args.warm else scratch / f"cold-{k}-{r}"
                wall, out = audit(root, args.file, args.registry, cache, args.jobs)
                best[k] = min(best.get(k, wall), wall)
                reports[k] = json.loads(out)
                if not args.warm:
                    shutil.rmtree(cache, ignore_errors=True)
            for k, cmd in (
                ("loop", rs_loop_cmd(args.file, registry=args.registry)),
                ("parse", parse_only_cmd(args.file)),
            ):
                wall = timed(cmd)
                best[k] = min(best.get(k, wall), wall)
            print(f"round {r + 1}: " + ", ".join(f"{k} {v:.3f}s" for k, v in best.items()))
        lines = reports["new"].get("lines")
        state = "warm" if args.warm else "cold"
        print(f"\n{args.file} ({lines:,} lines), --jobs {args.jobs}, {state}")
        print(f"best of {args.rounds}: " + ", ".join(f"{k} {v:.3f} s" for k, v in best.items()))
        for k in trees:
            print(
                f"{k}: {best['loop'] / best[k]:.3f}x the jsonschema-rs loop, "
                f"{best['parse'] / best[k]:.3f}x parse-only"
            )
        print(f"new vs old: {best['old'] / best['new']:.3f}x")
        differ = _differences(reports["old"], reports["new"])
        if args.records:
            rec = {}
            for k, root in trees.items():
                out = scratch / f"records-{k}.jsonl"
                audit(root, args.file, args.registry, scratch / f"rc-{k}", args.jobs,
                      "--records", str(out))  # fmt: skip
                rec[k] = out.read_bytes()
            same = rec["old"] == rec["new"]
            print(f"--records byte-identical: {same} ({len(rec['new']):,} bytes)")
            if not same:
                differ.append("--records")
        print("reports equal but for elapsed_s and jobs" if not differ else f"differ: {differ}")
        return 1 if differ else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _differences(old: dict, new: dict) -> list[str]:
    """Fields that differ; ``schemas`` entries that differ only in ``fast_path`` (jsonschema-rs
    answering for more schemas) are counted and said, not counted as a difference."""
    keys = (set(old) | set(new)) - {"elapsed_s", "jobs"}
    out = sorted(k for k in keys if old.get(k) != new.get(k))
    if "schemas" in out:
        a, b = old.get("schemas") or {}, new.get("schemas") or {}
        strip = {n: {k: v for k, v in e.items() if k != "fast_path"} for n, e in a.items()}
        if a.keys() == b.keys() and strip == {
            n: {k: v for k, v in e.items() if k != "fast_path"} for n, e in b.items()
        }:
            moved = [n for n in a if a[n].get("fast_path") != b[n].get("fast_path")]
            became = sum(bool(b[n].get("fast_path")) for n in moved)
            print(f"schemas.fast_path: {len(moved)} changed ({became} now on jsonschema-rs)")
            out.remove("schemas")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
