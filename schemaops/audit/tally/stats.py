"""category -> statistics: streaming counters, Wilson intervals and compound success.

Memory stays flat in the number of lines: the tally keeps counters, a bounded counter of
failing locations, the first few examples per category and the first input-error lines.
Only episode tracking (``--episode-field``) keeps one small entry per episode.
Tallies from parallel chunks merge by addition (``Tally.merge``).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from schemaops.audit.tally import budget
from schemaops.audit.tally.diagnose import merge_runs

Z95 = 1.959963984540054
EXAMPLES_PER_CATEGORY = 3
INPUT_ERROR_LINES = 100
PATHS_CAP = 10_000
TIMEOUT_LINES = 100


def safe_text(text: Any) -> Any:
    """Strings that can be written as UTF-8 (lone surrogates from a bad log become U+FFFD)."""
    if isinstance(text, str):
        if text.isascii():  # a flag read in O(1): no surrogate can be in it
            return text
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
    return text


def trimmed(paths: Counter) -> Counter:
    """The table of failing locations cut back to at most ``PATHS_CAP // 2`` entries when it
    outgrows ``PATHS_CAP`` (memory stays flat in the line count; the report shows the top
    ``TOP_PATHS``): locations seen once go first, all of them, and only when more than half
    the cap were seen twice or more does ``most_common`` choose among those. On a platform
    registry most locations are seen once (an array index, a property name), and picking half
    of 10,000 by count on every such overflow cost 0.8 s of a 26 s audit of issue 36's (b);
    dropping the ones seen once keeps the same repeated locations, with their counts, and
    leaves more room before the next cut."""
    repeated = {k: v for k, v in paths.items() if v > 1}
    if len(repeated) <= PATHS_CAP // 2:
        return Counter(repeated)
    # ``Counter.most_common(n)`` is ``heapq.nlargest``, whose documented equal is this sort
    # (stable: ties keep their order); nlargest's Python-level heap over 5,000 of 10,000
    # entries cost 18 ms a cut, the sort in C about a tenth (issue 36's (b): 41 cuts)
    top = sorted(repeated.items(), key=itemgetter(1), reverse=True)[: PATHS_CAP // 2]
    return Counter(dict(top))


def wilson(ok: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval for a binomial proportion (good near 0 and 1, unlike Wald)."""
    if n <= 0:
        return None
    p = ok / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # at the ends the bound is exact: with no success ``half == centre`` (lower 0), with no
    # failure ``centre + half == 1``; in floating point they miss by ~1e-17 for about a
    # third of all n, which put 0.0 outside its own interval (and ``--html``'s error bar
    # refused a negative length)
    lower = 0.0 if ok <= 0 else max(0.0, centre - half)
    upper = 1.0 if ok >= n else min(1.0, centre + half)
    return lower, upper


def compound(p: float | None, ci: tuple[float, float] | None, steps: list[int]) -> dict:
    """p^n per step count, with the interval carried through (x -> x^n is monotone)."""
    if p is None or ci is None:
        return {"compound": {str(n): None for n in steps}, "ci": {str(n): None for n in steps}}
    return {
        "compound": {str(n): p**n for n in steps},
        "ci": {str(n): [ci[0] ** n, ci[1] ** n] for n in steps},
    }


def required_p(target: float, n: int) -> float:
    """Per-step success needed so that p^n reaches ``target``."""
    return target ** (1.0 / n)


# Counters as dataclass fields: the shape of lower/prove.Differential and budget.Lengths.
@dataclass
class Tally:
    """Everything the reports need, accumulated one output at a time."""

    lines: int = 0
    outputs: int = 0
    ok: int = 0
    input_errors: int = 0
    input_error_lines: list[dict] = field(default_factory=list)
    categories: Counter = field(default_factory=Counter)
    parse_failures: Counter = field(default_factory=Counter)
    by_schema: dict[str, Counter] = field(default_factory=dict)
    paths: Counter = field(default_factory=Counter)
    examples: dict[str, list[dict]] = field(default_factory=dict)
    all_errors: Counter = field(default_factory=Counter)
    #: outputs whose --all-errors count stopped part way (timeout or recursion limit)
    all_errors_cut: int = 0
    timeouts: list[int] = field(default_factory=list)
    timeout_count: int = 0
    #: SGLang request-log events with no structured output to check (``sglang_log``)
    log_events: int = 0
    duplicate_keys: int = 0  # outputs with a name repeated in one object
    duplicate_key_lines: list[int] = field(default_factory=list)
    episodes: dict[Any, list[int]] = field(default_factory=dict)
    by_step: dict[Any, list[int]] = field(default_factory=dict)
    #: schema -> whether its compiled fast check was in use (reported per schema)
    fast_path: dict[str, bool] = field(default_factory=dict)
    #: diagnosis -> failed outputs it was found in (``diagnose.py``; failures only)
    diagnoses: Counter = field(default_factory=Counter)
    #: schema -> its run of failures at the end of the input (``diagnose.note_run``)
    fail_runs: dict[str, list[int]] = field(default_factory=dict)
    #: source field (``extract.Output.source``) -> outputs, and -> failed outputs
    sources: Counter = field(default_factory=Counter)
    source_failures: Counter = field(default_factory=Counter)
    #: schema -> its outputs' token counts by finish reason (``budget.note``; bounded, exact
    #: merge), for the recommended ``max_tokens`` of schemas whose outputs were cut
    lengths: dict[str, budget.Lengths] = field(default_factory=dict)
    #: tool set -> [agent steps, good steps]: responses judged against a tool set, good when
    #: every call in them is (``toolsummary.note_steps``)
    tool_steps: dict[str, list[int]] = field(default_factory=dict)
    #: the position in its line of the output being counted, set only by a routed worker
    #: (``routing.py``): its examples and input errors then carry it as ``_ord``, so that the
    #: merge can order two outputs of one line that different workers audited
    order: int | None = None

    def add_input_error(self, line: int, message: str) -> None:
        self.input_errors += 1
        if len(self.input_error_lines) < INPUT_ERROR_LINES:
            e: dict[str, Any] = {"line": line, "message": message}
            if self.order is not None:
                e["_ord"] = self.order
            self.input_error_lines.append(e)

    def add_failure(self, schema: str, outcome: Any) -> list[dict] | None:
        """Count one failed output (the ok path is counted inline by the pipeline); returns
        its category's example list when that has room for it (``add_example``), else None:
        most failures are only counted, and their record's id is then never looked up.
        ``outcome``: its ``classify.Classification``, whose message is read only for an
        example (it may be written only when read: ``classify.WordedLater``)."""
        category, subtype, path = outcome.category, outcome.subtype, outcome.path
        self.outputs += 1
        categories = self.categories
        categories[category] = categories.get(category, 0) + 1
        if subtype is not None:
            self.parse_failures[subtype] += 1
        per = self.by_schema.get(schema)
        if per is None:
            per = self.by_schema[schema] = Counter()
        per[category] += 1
        if path is not None:
            self.paths[(schema, category, safe_text(path))] += 1
            if len(self.paths) > PATHS_CAP:
                self.paths = trimmed(self.paths)
        key = category if subtype is None else f"{category}/{subtype}"
        ex = self.examples.get(key)
        if ex is None:
            ex = self.examples[key] = []
        return ex if len(ex) < EXAMPLES_PER_CATEGORY else None

    def add_example(
        self, examples: list[dict], line: int, rid: Any, schema: str, outcome: Any, text: str
    ) -> None:
        """Keep a failed output as an example of its category (``examples``: what
        ``add_failure`` returned for it)."""
        snippet = text if len(text) <= 240 else text[:237] + "..."
        examples.append(
            {
                "line": line,
                "id": safe_text(rid),
                "schema": schema,
                "path": safe_text(outcome.path),
                "message": safe_text(outcome.message),
                "text": safe_text(snippet),
            }
        )
        if self.order is not None:
            examples[-1]["_ord"] = self.order

    def add_timeout(self, line: int) -> None:
        self.timeout_count += 1
        if len(self.timeouts) < TIMEOUT_LINES:
            self.timeouts.append(line)

    def add_duplicate_keys(self, line: int) -> None:
        self.duplicate_keys += 1
        if len(self.duplicate_key_lines) < TIMEOUT_LINES:
            self.duplicate_key_lines.append(line)

    def merge(self, other: Tally, line_offset: int = 0) -> None:
        """Add a later chunk's tally (its line numbers shifted by ``line_offset``)."""
        self.lines += other.lines
        self.outputs += other.outputs
        self.ok += other.ok
        self.input_errors += other.input_errors
        for e in other.input_error_lines:
            if len(self.input_error_lines) < INPUT_ERROR_LINES:
                self.input_error_lines.append({**e, "line": e["line"] + line_offset})
        self.categories.update(other.categories)
        self.parse_failures.update(other.parse_failures)
        merge_runs(self.fail_runs, other.fail_runs, self.by_schema, other.by_schema, line_offset)
        for name, c in other.by_schema.items():
            self.by_schema.setdefault(name, Counter()).update(c)
        self.paths.update(other.paths)
        if len(self.paths) > PATHS_CAP:
            self.paths = trimmed(self.paths)
        for key, exs in other.examples.items():
            mine = self.examples.setdefault(key, [])
            for e in exs:
                if len(mine) < EXAMPLES_PER_CATEGORY:
                    mine.append({**e, "line": e["line"] + line_offset})
        self.all_errors.update(other.all_errors)
        self.all_errors_cut += other.all_errors_cut
        self.diagnoses.update(other.diagnoses)
        self.sources.update(other.sources)
        self.source_failures.update(other.source_failures)
        budget.merge(self.lengths, other.lengths)
        self.timeout_count += other.timeout_count
        for t in other.timeouts:
            if len(self.timeouts) < TIMEOUT_LINES:
                self.timeouts.append(t + line_offset)
        self.duplicate_keys += other.duplicate_keys
        self.log_events += other.log_events
        for d in other.duplicate_key_lines:
            if len(self.duplicate_key_lines) < TIMEOUT_LINES:
                self.duplicate_key_lines.append(d + line_offset)
        for name, used in other.fast_path.items():
            self.fast_path[name] = self.fast_path.get(name, False) or used
        for name, (n, good) in other.tool_steps.items():
            cur = self.tool_steps.setdefault(name, [0, 0])
            cur[0] += n
            cur[1] += good
        for src, dst in ((other.episodes, self.episodes), (other.by_step, self.by_step)):
            for k, (n, f) in src.items():
                cur = dst.setdefault(k, [0, 0])
                cur[0] += n
                cur[1] += f


def episode_summary(tally: Tally, p: float | None) -> dict | None:
    """Observed episode success beside what independent steps (p^n) would predict.

    Expected = mean over episodes of p^(steps in that episode). Observed above expected means
    failures cluster in some episodes; below means they spread out (each bad episode has
    exactly one failure more often than chance).
    """
    if not tally.episodes or p is None:
        return None
    n_ep = len(tally.episodes)
    succeeded = sum(1 for n, f in tally.episodes.values() if f == 0)
    lengths = [n for n, _ in tally.episodes.values()]
    expected = math.fsum(p**n for n in lengths) / n_ep  # exact: the same in any episode order
    ci = wilson(succeeded, n_ep)
    failures_per_failed = [f for _, f in tally.episodes.values() if f]
    by_step = {
        str(k): {"outputs": n, "failure_rate": f / n}
        for k, (n, f) in sorted(tally.by_step.items(), key=lambda kv: _sort_key(kv[0]))
    }
    return {
        "episodes": n_ep,
        "mean_steps": sum(lengths) / n_ep,
        "observed_success": succeeded / n_ep,
        "observed_ci95": list(ci) if ci else None,
        "expected_independent": expected,
        "gap": succeeded / n_ep - expected,
        "mean_failures_per_failed_episode": (
            sum(failures_per_failed) / len(failures_per_failed) if failures_per_failed else 0.0
        ),
        "by_step": by_step,
    }


def step_key(step: Any) -> Any:
    """The key a record's step is counted under (None: not counted), for a step that is not
    a plain ``int`` (the usual case, counted as it is).

    Why: ``by_step`` is a dict, and Python's dict takes ``True``, ``1`` and ``1.0`` for one
    key, keeping whichever came first: the key the report printed ("1", "1.0" or "True")
    depended on the order the records were counted in, which differs between one process
    and routed ``--jobs`` workers; and a step logged as ``"1"`` in some records and ``1`` in
    others was printed twice under one JSON key, one count overwriting the other. So: an
    integral number (within 2**53, where a double is exact) or a string of at most 15 ASCII
    digits without a leading zero is that integer, a boolean is its name (never step 1), a list or
    an object is not counted (as before)."""
    cls = step.__class__
    if cls is str:
        # at most 15 digits: exact as a double too, and far from int()'s digit limit
        if (
            len(step) <= 15
            and step.isascii()
            and step.isdigit()
            and (step == "0" or step[0] != "0")
        ):
            return int(step)
        return step
    if cls is float:
        if step.is_integer() and abs(step) <= 2**53:
            return int(step)
        return step if step == step else "NaN"  # NaN is never equal to itself: one key
    if cls is bool:
        return str(step)
    if cls is list or cls is dict:
        return None
    return step


def _sort_key(k: Any) -> tuple:
    return (0, k, "") if isinstance(k, (int, float)) and not isinstance(k, bool) else (1, 0, str(k))
