"""The baseline a user would write today: a loop over jsonschema-rs (issue 24).

    python bench/rs_loop.py FILE --registry DIR      # one NAME.json per schema
    python bench/rs_loop.py FILE --schemas FILE.json  # {name: schema}, already self-contained

Per line: the record parsed with orjson, its schema's validator compiled once
(``jsonschema_rs.validator_for(schema, validate_formats=True)``), the text parsed with orjson,
``is_valid``, and on a failure the first error's keyword and path from ``iter_errors``. Prints
one JSON line of counts. Run as its own process by the benches, so its start-up counts as the
audit's does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jsonschema_rs
import orjson


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--registry", type=Path)
    ap.add_argument("--schemas", type=Path)
    ap.add_argument("--schema-field", default="schema")
    args = ap.parse_args()
    inline = orjson.loads(args.schemas.read_bytes()) if args.schemas else None
    validators: dict = {}
    counts = {"lines": 0, "ok": 0, "parse_failure": 0, "violation": 0, "refused": 0}
    with open(args.file, "rb") as fh:
        for line in fh:
            counts["lines"] += 1
            rec = orjson.loads(line)
            name = rec.get(args.schema_field)
            v = validators.get(name, False)
            if v is False:
                try:
                    if inline is not None:
                        schema = inline[name]
                    else:
                        schema = orjson.loads((args.registry / f"{name}.json").read_bytes())
                    v = jsonschema_rs.validator_for(schema, validate_formats=True)
                except Exception:
                    v = None
                validators[name] = v
            if v is None:
                counts["refused"] += 1
                continue
            try:
                inst = orjson.loads(rec["text"])
            except orjson.JSONDecodeError:
                counts["parse_failure"] += 1
                continue
            if v.is_valid(inst):
                counts["ok"] += 1
            else:
                err = next(v.iter_errors(inst))
                _ = (type(err.kind).__name__, list(err.instance_path))
                counts["violation"] += 1
    sys.stdout.write(orjson.dumps(counts).decode() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
