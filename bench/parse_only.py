"""The parse-only floor (issue 24): orjson reads each record and its ``text``, nothing else.

    python bench/parse_only.py FILE

Run as its own process by the benches (start-up included, as for the audit).
"""

from __future__ import annotations

import sys

import orjson


def main() -> int:
    n = 0
    loads = orjson.loads
    with open(sys.argv[1], "rb") as fh:
        for line in fh:
            rec = loads(line)
            try:
                loads(rec["text"])
            except (orjson.JSONDecodeError, KeyError, TypeError):
                pass
            n += 1
    print(n)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
