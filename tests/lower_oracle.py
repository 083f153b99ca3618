"""The oracle the lower differential tests share: does a lowering agree with its original on
one instance? ``(served accepts AND residual passes) == (original accepts)``, every ``exact``
claim holds exactly, and a valid instance the served schema refuses is excused only where a
narrowing rewrite wrote the refusing keyword."""

from __future__ import annotations

import json
from typing import Any

from schemaops.compare.instances import validator
from schemaops.lower import Lowered, check_residual
from schemaops.lower.prove import narrowing_marks, refused_only_by


class Oracle:
    """One lowering's judge; validators built once."""

    def __init__(self, lw: Lowered) -> None:
        self.lw = lw
        self.orig = validator(lw.original)
        self.served = validator(lw.served)
        self.marks = narrowing_marks(lw)

    def problem(self, x: Any) -> str | None:
        """Why the lowering disagrees with the original on ``x`` (None when it agrees)."""
        lw = self.lw
        orig, served = self.orig.is_valid(x), self.served.is_valid(x)
        shown = json.dumps(x)[:120]
        if lw.exact and orig != served:
            return f"claimed exact, original {orig}, served {served}: {shown}"
        if orig and not served and not refused_only_by(self.served, x, self.marks):
            return f"valid, refused by the served schema (no narrowing there): {shown}"
        if served and not orig:
            res = check_residual(lw.original, lw.residual, x)
            if res.uncovered or not res.flagged:
                where = ", ".join(f"{u.keyword} at {u.schema_pointer}" for u in res.uncovered[:2])
                return f"invalid, accepted by served, residual misses it ({where}): {shown}"
        return None
