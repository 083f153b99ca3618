"""Helpers shared by tests/test_watch_*.py: a small registry, records, one watch pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schemaops.audit import AuditOptions, run_audit
from schemaops.watch import WatchOptions, run_watch

ITEM = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
NAME = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}}}


def registry(tmp: Path) -> Path:
    reg = tmp / "schemas"
    reg.mkdir(exist_ok=True)
    (reg / "item.json").write_text(json.dumps(ITEM))
    (reg / "name.json").write_text(json.dumps(NAME))
    return reg


def record(i: int, schema: str = "item", ok: bool = True) -> bytes:
    """One SGLang-shaped record (``text`` + ``meta_info``) naming ``schema``."""
    if schema == "item":
        text = json.dumps({"n": i}) if ok else json.dumps({"n": f"x{i}"})
    else:
        text = json.dumps({"name": "ab"}) if ok else json.dumps({"name": "x" * 20})
    rec = {"schema": schema, "text": text, "meta_info": {"finish_reason": {"type": "stop"}}}
    return json.dumps(rec).encode() + b"\n"


def mixed(start: int, count: int) -> bytes:
    """``count`` records, item and name alternating, every 7th one failing."""
    return b"".join(
        record(i, "item" if i % 2 else "name", ok=i % 7 != 0) for i in range(start, start + count)
    )


def watch_once(targets: list[str], reg: Path, state: Path | None = None, **kw: Any) -> dict:
    opts = WatchOptions(
        targets=targets,
        audit=AuditOptions(registry=str(reg), cache=False),
        listen=None,
        state_dir=str(state) if state else None,
        interval=0.05,
        once=True,
        **kw,
    )
    return run_watch(opts)


def audit_doc(path: Path, reg: Path) -> dict:
    return run_audit(str(path), AuditOptions(registry=str(reg), cache=False)).to_json()


def by_schema(doc: dict) -> dict[str, dict[str, int]]:
    """Categories per schema, from an audit document or a watch summary."""
    rows = doc["by_schema"]
    return {s: dict(r.get("categories", r)) for s, r in rows.items()}
