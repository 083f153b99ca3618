"""Whole-process start-up of the ``schemaops`` CLI against a bare jsonschema-rs process.

Issue 24 ("audit at the speed of the fastest validator"): a short audit is dominated by
what the process imports before it reads a line. This times whole processes, best of N
(the least-disturbed run on a shared machine), each against a baseline measured in the
same run: ``python -c "import orjson, jsonschema_rs"``, what a bare validator loop starts
with. Ratios are of best times.

    python bench/startup.py                       # this checkout, best of 10
    python bench/startup.py --runs 20 --json
    python bench/startup.py --root /tmp/old-tree  # another checkout (e.g. git archive HEAD~3)

Cases: ``import schemaops.cli``; ``schemaops --help``; ``schemaops audit`` on a one-line
file and on the shipped example (``audits/example-outputs.jsonl``, registry ``schemas``),
both ``--json``. The CLI runs as its console script does (``schemaops.cli.main``), with
``PYTHONPATH`` set to the checkout. The audit's facts cache is the user's usual one, warmed
by a first untimed run, so the figures are those of a repeated audit. The checkout's
modules are byte-compiled first (``compileall``, into its git-ignored ``__pycache__``): an
installed schemaops has its ``.pyc`` files, and a shell with ``PYTHONDONTWRITEBYTECODE=1``
would otherwise compile some 70 modules from source in every timed process (0.05-0.1 s).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
MAIN = "from schemaops.cli import main; main()"


def cases(root: Path, one_line: Path) -> dict[str, list[str]]:
    """Name -> argv (after the interpreter)."""
    example = str(root / "audits" / "example-outputs.jsonl")
    registry = str(root / "schemas")
    return {
        "baseline: import orjson, jsonschema_rs": ["-c", "import orjson, jsonschema_rs"],
        "import schemaops.cli": ["-c", "import schemaops.cli"],
        "schemaops --help": ["-c", MAIN, "--help"],
        "schemaops audit (1 line) --json": [
            "-c",
            MAIN,
            "audit",
            str(one_line),
            "--registry",
            registry,
            "--json",
        ],
        "schemaops audit (example, 5,000 lines) --json": [
            "-c",
            MAIN,
            "audit",
            example,
            "--registry",
            registry,
            "--json",
        ],
    }


def time_once(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """Seconds one process takes from spawn to exit (its output discarded)."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, *argv],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{argv} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="processes per case (best of N)")
    ap.add_argument("--root", type=Path, default=HERE, help="the checkout to time")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()
    root = args.root.resolve()
    env = {**os.environ, "PYTHONPATH": str(root)}
    if not compileall.compile_dir(root / "schemaops", quiet=1):
        raise SystemExit(f"cannot byte-compile {root / 'schemaops'}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        one_line = Path(tmp) / "one.jsonl"
        with open(root / "audits" / "example-outputs.jsonl", "rb") as fh:
            one_line.write_bytes(fh.readline())
        todo = cases(root, one_line)
        for argv in todo.values():  # warm: page cache, .pyc files, the audit's facts cache
            time_once(argv, env, root)
        times: dict[str, list[float]] = {name: [] for name in todo}
        for _ in range(args.runs):  # interleaved: a busy spell hits every case alike
            for name, argv in todo.items():
                times[name].append(time_once(argv, env, root))
    base = min(next(iter(times.values())))
    for name, ts in times.items():
        rows.append(
            {
                "case": name,
                "best_s": round(min(ts), 4),
                "median_s": round(statistics.median(ts), 4),
                "best_over_baseline": round(min(ts) / base, 2),
            }
        )
    doc = {"root": str(root), "python": sys.version.split()[0], "runs": args.runs, "cases": rows}
    if args.json:
        print(json.dumps(doc, indent=2))
        return
    print(f"{root}  (python {doc['python']}, best of {args.runs})")
    print(f"{'case':48} {'best s':>8} {'median s':>9} {'x baseline':>11}")
    for r in rows:
        print(
            f"{r['case']:48} {r['best_s']:8.3f} {r['median_s']:9.3f} "
            f"{r['best_over_baseline']:11.2f}"
        )


if __name__ == "__main__":
    main()
