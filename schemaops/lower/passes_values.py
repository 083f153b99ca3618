"""The lowering passes over value keywords: ``required`` of unlisted properties, ``enum``
filtering, the relaxation ladder, integer ranges to enums, ``format`` to a pattern, patterns
and lengths, keywords dropped or moved to the residual, any-value subschemas.

A mixin of ``passes._Lowerer`` (the walk, the residual and the rewrite log live there); split
from it so that each family of passes reads on its own.
"""

from __future__ import annotations

import copy
from typing import Any

from schemaops.compare.instances import validator
from schemaops.lower.keywords import (
    LISTS,
    MAPS,
    MAX_ENUM,
    NUMERIC,
    PROBE_OF,
    SINGLE,
    VERB,
    capability,
)
from schemaops.lower.merge import ANNOTATIONS, VOCABULARY
from schemaops.lower.patterns import JSON_ANY_NARROWS, anchored_search, format_pattern, is_anchored
from schemaops.lower.relax import LADDER
from schemaops.lower.values import (
    ANY_VALUE,
    PLAIN_DOLLAR,
    integer_bounds,
    pattern_matches,
)

#: the ladder steps the ``relaxed`` pass applies (formats and integer ranges have their own)
_PLAIN_STEPS = tuple(s for s in LADDER if s.key in ("string.length", "array.bounds", "pattern"))


class ValuePasses:
    """Passes over value keywords (see the module doc)."""

    def required_unlisted(self, out: dict, parts: list) -> None:
        """List required properties that ``properties`` does not, with the schema that
        applies to them anyway (``additionalProperties``, else ``{}``): exact, and a
        backend that only produces listed properties (xgrammar) can then write them."""
        req = out.get("required")
        props = out.get("properties")
        if not isinstance(req, list) or self.enforced("object.required_unlisted"):
            return
        if props is not None and not isinstance(props, dict):
            return
        ap = out.get("additionalProperties", True)
        patterns = out.get("patternProperties") or {}
        missing = [k for k in req if isinstance(k, str) and k not in (props or {})]
        if not missing or ap is False:
            return
        added = []
        new_props = dict(props or {})
        for k in missing:
            if any(pattern_matches(p, k) for p in patterns):
                sub: Any = {}  # patternProperties still apply to a listed property
            elif isinstance(ap, dict):
                sub = copy.deepcopy(ap)
            else:
                sub = {}
            new_props[k] = sub
            added.append(k)
        if props is None:
            rebuilt: dict[str, Any] = {}
            for key, v in out.items():
                if key == "required":
                    rebuilt["properties"] = new_props
                rebuilt[key] = v
            out.clear()
            out.update(rebuilt)
        else:
            out["properties"] = new_props
        self.note(parts, "list required properties", f"added {', '.join(added)}")

    def enum_filter(self, out: dict, parts: list) -> None:
        """``enum`` and ``const`` alike (a ``const`` is a one-value ``enum``): values the
        node's other keywords forbid are removed, then keywords every remaining value
        satisfies are implied and dropped. Implied only when checked: a ``const`` that fails
        its ``format`` keeps the format (a node that accepts nothing is left as it is)."""
        key = "enum" if isinstance(out.get("enum"), list) else "const" if "const" in out else None
        if key is None:
            return
        values = list(out["enum"]) if key == "enum" else [out["const"]]
        others = {
            k: v for k, v in out.items() if k not in ("enum", "const") and k not in ANNOTATIONS
        }
        if not others:
            return
        try:
            check = validator(others)
            kept = [v for v in values if check.is_valid(v)]
        except Exception:  # e.g. a $ref that only resolves from the root: leave it
            return
        if not kept:
            return  # accepts nothing: nothing is implied, the other passes decide
        if len(kept) != len(values):
            out["enum"] = kept
            self.note(parts, "filter enum", "values the other keywords forbid removed")
        implied = [
            k for k in others if k not in MAPS + SINGLE + LISTS and not self._enforced_kw(out, k)
        ]
        for kw in implied:
            if kw in ("type", "$ref", "$defs", "definitions"):
                continue
            out.pop(kw)
            self.note([*parts, kw], "implied by enum", f"every {key} value satisfies {kw}")

    def _enforced_kw(self, out: dict, kw: str) -> bool:
        probe = self._probe(out, kw)
        return probe is None or self.enforced(probe)

    def _probe(self, out: dict, kw: str) -> str | None:
        if kw in NUMERIC:
            t = out.get("type")
            if t == "integer":
                return f"integer.{kw}"
            if t == "number":
                return f"number.{kw}"
            ti, tn = f"integer.{kw}", f"number.{kw}"
            return ti if not self.enforced(ti) else tn
        if kw == "format":
            return f"format.{out.get('format')}"
        if kw in PROBE_OF:
            return PROBE_OF[kw]
        # a keyword the backend named in a compile error (see ``refine``)
        return f"keyword.{kw}" if f"keyword.{kw}" in self.caps else None

    def relaxed(self, out: dict, parts: list) -> None:
        """The ladder steps that move plain keywords (``relax``): string length bounds, array
        item bounds, patterns; each moved keyword is a residual rule with the step's reason."""
        for step in _PLAIN_STEPS:
            why = self.relax.get(step.key)
            if why is None:
                continue
            for kw in step.keywords:
                if kw in out and (kw != "pattern" or isinstance(out[kw], str)):
                    self.move(out, parts, kw, why)

    def integer_range(self, out: dict, parts: list) -> None:
        if out.get("type") != "integer" or "enum" in out or "const" in out:
            return
        present = [k for k in NUMERIC if k in out]
        if not present or all(self.enforced(f"integer.{k}") for k in present):
            return
        why = self.relax.get("integer.enum")
        if why is not None:  # ladder: the bounds the backend ignores go to the residual
            for k in present:
                if not self.enforced(f"integer.{k}"):
                    self.move(out, parts, k, why)
            return
        if not self.enforced("enum.integer"):
            return
        lo, hi = integer_bounds(out)
        if lo is None or hi is None:
            return  # open range: the drops pass moves the bounds to the residual
        mult = out.get("multipleOf")
        if hi - lo + 1 > MAX_ENUM * (int(mult) if isinstance(mult, int) and mult > 0 else 1):
            return
        check = validator({k: out[k] for k in present})
        values = [v for v in range(lo, hi + 1) if check.is_valid(v)]
        if len(values) > MAX_ENUM:
            return
        first = next(k for k in out if k in present)
        rebuilt: dict[str, Any] = {}
        for k, v in out.items():
            if k == first:
                rebuilt["enum"] = values
            elif k not in present:
                rebuilt[k] = v
        out.clear()
        out.update(rebuilt)
        self.note(parts, "integer range -> enum", f"{len(values)} integers from {lo} to {hi}")

    def format(self, out: dict, parts: list) -> None:
        fmt = out.get("format")
        if not isinstance(fmt, str) or self.enforced(f"format.{fmt}"):
            return
        found = format_pattern(fmt, self.json_safe)
        ptr = [*parts, "format"]
        if found is None:
            reason = (
                f"format {fmt!r}: no probe shows {self.backend} enforces it at "
                "schemaops.formats' strictness, and lower has no equivalent pattern"
            )
            self.move(out, parts, "format", reason)
            return
        pat, narrower = found
        if not self.enforced("pattern.anchored"):
            self.move(
                out,
                parts,
                "format",
                f"{self.why('format.' + fmt, 'format')}; "
                f"and {self.why('pattern.anchored', 'pattern')}",
            )
            return
        why = self.relax.get("format.pattern") or self.relax.get("pattern")
        if why is not None:  # ladder: the format is the application's to check
            self.move(out, parts, "format", why)
            return
        if "pattern" in out:
            reason = f"{self.why('format.' + fmt, 'format')}; the node already has a pattern"
            self.move(out, parts, "format", reason)
            return
        rebuilt = {
            ("pattern" if k == "format" else k): (pat if k == "format" else v)
            for k, v in out.items()
        }
        out.clear()
        out.update(rebuilt)
        detail = f"format {fmt!r} -> pattern ({self.why('format.' + fmt, 'format')})"
        if narrower:
            detail += f"; narrower than schemaops.formats: {narrower}"
        self.note(ptr, "format -> pattern", detail, {"pattern": pat} if narrower else None)

    def pattern(self, out: dict, parts: list) -> None:
        pat = out.get("pattern")
        if not isinstance(pat, str) or self.enforced("pattern.unanchored") or is_anchored(pat):
            return
        new = anchored_search(pat, self.json_safe)
        if new is None:
            self.move(
                out,
                parts,
                "pattern",
                f"{self.why('pattern.unanchored', 'pattern')}; "
                "the pattern cannot be anchored (unbalanced, or it opens with global inline"
                " flags such as (?i))",
            )
            return
        out["pattern"] = new
        if self.json_safe and new != pat:
            detail = f"search semantics kept, narrower: {JSON_ANY_NARROWS}: {new}"
            self.note([*parts, "pattern"], "anchor pattern", detail, {"pattern": new})
        else:
            self.note([*parts, "pattern"], "anchor pattern", "search semantics kept: " + new)

    def length_with_pattern(self, out: dict, parts: list) -> None:
        """A backend that keeps either the pattern or the length of a string (outlines):
        the length moves to the residual, the pattern (often a format) is served."""
        for key, probe in (("pattern", "pattern.with_length"), ("format", "format.with_length")):
            if key not in out or self.enforced(probe):
                continue
            for kw in ("minLength", "maxLength"):
                if kw in out:
                    self.move(out, parts, kw, self.why(probe, f"{kw} next to a {key}"))

    def drops(self, out: dict, parts: list) -> None:
        for kw in list(out):
            probe = self._probe(out, kw)
            if probe is None or self.enforced(probe):
                continue
            if kw == "format":
                continue  # handled by the format pass
            self.move(out, parts, kw, self.why(probe, kw))

    def any_value(self, out: dict, parts: list) -> None:
        if not parts:
            return
        if out:
            if self.enforced("schema.annotations_only"):
                return
            if any(k in VOCABULARY or (k.startswith("$") and k not in PLAIN_DOLLAR) for k in out):
                return
            why = (
                f"{self.backend} refuses a subschema without a validation keyword; JSON Schema "
                f"reads {', '.join(out)} as annotations: any value is valid"
            )
        elif self.enforced("schema.empty"):
            return
        else:
            why = f"{self.backend} {VERB.get(capability(self.caps, 'schema.empty'), '')}: {{}}"
        out.clear()
        out.update(copy.deepcopy(ANY_VALUE))
        self.note(parts, "any value -> union of the JSON types", why)
