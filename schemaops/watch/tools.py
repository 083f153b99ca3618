"""Tool calls in ``watch``: per-tool counters with label values a model cannot make up.

Why its own module: the audit names each call's row ``SET/FUNCTION`` (``verdict/
toolcalls.py``), and every row becomes a label value of the watch's series. A function name
the model invented is free text from the model: kept as a label, a model that makes up a new
name on every call would grow the series without bound (each one a Prometheus time series
held for good). So before a batch is counted (``collapse``), every row of an invented name
becomes ``SET/(unknown tool)``: its count is kept whole, and the names themselves are kept as
a bounded sample (the first ``SAMPLE_NAMES`` distinct names with their counts, and the count of
all others). A request's own tool set not in the registry is named ``offered-<hash>``; the
first ``MAX_OFFERED_SETS`` are kept, later ones are counted as ``offered-(other)``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from schemaops.audit.tally.stats import Tally

UNKNOWN_LABEL = "(unknown tool)"
OTHER_SET = "offered-(other)"
OTHER_TOOL = "(other)"
OFFERED = "offered-"
SEP = "/"
#: distinct invented names kept with their counts (the rest are counted, not named)
SAMPLE_NAMES = 20
#: distinct request-offered tool sets kept as label values
MAX_OFFERED_SETS = 16


def tool_label(set_label: str, fn: str, invented: bool) -> tuple[str, str]:
    """The (tool set, tool) label values of one call row once its set's label is known
    (``set_label``: the set's own name, or ``OTHER_SET`` past the cap): every row of a capped
    set is one series, a function the set does not offer is ``UNKNOWN_LABEL``, an offered one
    keeps its name. The one rule both ``watch`` (``ToolLabels.collapse``) and ``audit
    --prometheus`` (``metrics.tool_labels``) bound tool label values by; which sets are capped
    is each one's own (a stream keeps the first sets it sees, a file the first by name)."""
    if set_label == OTHER_SET:
        return OTHER_SET, OTHER_TOOL
    return set_label, UNKNOWN_LABEL if invented else fn


class ToolLabels:
    """The bounded label state of one watch: the invented-name sample, the offered sets kept."""

    def __init__(self, saved: dict[str, Any] | None = None) -> None:
        saved = saved or {}
        self.sample: Counter = Counter(saved.get("unknown_tools") or {})
        self.unsampled = int(saved.get("unknown_tools_unsampled", 0))
        self.offered: set[str] = set(saved.get("offered_sets") or [])

    def to_json(self) -> dict[str, Any]:
        return {
            "unknown_tools": dict(self.sample),
            "unknown_tools_unsampled": self.unsampled,
            "offered_sets": sorted(self.offered),
        }

    def _set_label(self, name: str) -> str:
        if not name.startswith(OFFERED) or name in self.offered:
            return name
        if len(self.offered) < MAX_OFFERED_SETS:
            self.offered.add(name)
            return name
        return OTHER_SET

    def _note_invented(self, fn: str, n: int) -> None:
        if fn in self.sample or len(self.sample) < SAMPLE_NAMES:
            self.sample[fn] += n
        else:
            self.unsampled += n

    def collapse(self, tally: Tally, judges: Any) -> None:
        """Rename ``tally``'s tool rows to bounded label values, in place (see the module
        docstring). ``judges``: the resolver's ``ToolJudges`` (which functions each set
        offers)."""
        if judges is None or not tally.by_schema:
            return
        renamed: dict[str, str] = {}
        for name in list(tally.by_schema):
            offered = judges.offers(name)
            if offered is None:
                continue
            head, _, fn = name.partition(SEP)
            label_set = self._set_label(head)
            if offered and label_set != OTHER_SET:
                continue  # an offered function of a kept set: its own label values
            new = SEP.join(tool_label(label_set, fn, not offered))
            if not offered:
                self._note_invented(fn, sum(tally.by_schema[name].values()))
            renamed[name] = new
        for old, new in renamed.items():
            tally.by_schema.setdefault(new, Counter()).update(tally.by_schema.pop(old))
            tally.fail_runs.pop(old, None)  # a run of an invented name is no schema's poison
        if renamed:
            paths: Counter = Counter()
            for (s, c, p), k in tally.paths.items():
                paths[(renamed.get(s, s), c, p)] += k
            tally.paths = paths
            for exs in tally.examples.values():
                for e in exs:
                    e["schema"] = renamed.get(e["schema"], e["schema"])
        for name in list(tally.tool_steps):
            self._steps_label(tally, name)

    def _steps_label(self, tally: Tally, name: str) -> None:
        label = self._set_label(name)
        if label != name:
            n, good = tally.tool_steps.pop(name)
            cur = tally.tool_steps.setdefault(label, [0, 0])
            cur[0] += n
            cur[1] += good


def tool_rows(by_schema: dict[str, dict], tool_sets: list[str]) -> dict[str, dict[str, dict]]:
    """set -> tool -> {outputs, ok, p, categories} from the watch's ``by_schema`` counters."""
    out: dict[str, dict[str, dict]] = {}
    for name, cats in by_schema.items():
        head, sep, fn = name.partition(SEP)
        if not sep or head not in tool_sets:
            continue
        n = sum(cats.values())
        ok = cats.get("ok", 0)
        out.setdefault(head, {})[fn] = {
            "outputs": n,
            "ok": ok,
            "p": ok / n if n else None,
            "categories": dict(cats),
        }
    return out
