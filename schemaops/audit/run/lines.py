"""Lines -> ``Tally``: the audit loop over one stream of raw JSONL lines.

line -> record -> text -> parse -> validate -> category -> counters. Written for throughput:
most outputs are valid, so the ok path is a parse, one compiled yes/no check and two counter
increments; everything else (classification of parse failures, ``best_match``, examples,
``--records`` rows) happens only for failures or when asked. Used by ``pipeline.run_audit``
for one process and by each ``parallel`` worker for its byte range.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import IO, Any

import orjson

from schemaops.audit.options import AuditOptions
from schemaops.audit.read.extract import RecordError, find_outputs, parse_record, record_id
from schemaops.audit.read.output import Output
from schemaops.audit.read.sglang_log import LogLines
from schemaops.audit.run.rows import count_failure, input_error, unusable_schema, write_record
from schemaops.audit.tally.budget import note as note_length
from schemaops.audit.tally.budget import note_counted as note_lengths
from schemaops.audit.tally.diagnose import close_runs, note_run
from schemaops.audit.tally.stats import Tally, step_key
from schemaops.audit.tally.toolsummary import note_steps
from schemaops.audit.verdict.classify import (
    MAX_DEPTH,
    OK,
    OUTCOME_OK,
    REFUSAL,
    Classification,
    parse_output,
)
from schemaops.audit.verdict.repeats import duplicate_keys, plain_key_count
from schemaops.audit.verdict.resolver import SchemaResolver
from schemaops.audit.verdict.toolcalls import SKIP
from schemaops.errors import InputError
from schemaops.exactjson import may_have_long_int
from schemaops.strings import truncate

NO_SCHEMA = "(none)"
# ``classify.parse_output``'s tests, inlined in the lean path. A text this long may nest deeper
# than MAX_DEPTH. An integer orjson reads as a float (from 2^64, below -2^63) is one of at
# least 19 digits, and orjson writes such a float back with an exponent of at least 18
# ("1.8446744073709552e+19"): where the value's orjson text has no "e+", no digit run needs
# looking for (a one-sided test; the run itself decides). Before writing the value back, a text
# with exactly as many colons as its value has names, and no float, has no repeated name and no
# long integer (``repeats.plain_key_count``): the write-back is then not needed.
_DEEP_TEXT = 2 * MAX_DEPTH
# The verdict memo pays when texts repeat and costs a lookup and an entry when they do not
# (real logs rarely repeat a text; on a distinct-text log of 64 % failures it made the audit
# 1.3x slower): it is asked for MEMO_PROBE outputs, kept while at least 1 in MEMO_MIN_HIT_RATE
# of them was a hit, else not asked for a pause, then probed again. The pause starts at
# MEMO_PAUSE outputs and doubles after each probe that found no repeats, up to
# MEMO_PAUSE_MAX (a probe cost 4 % of a distinct-text log's ok lines at one in 17, measured
# on (a) of issue 36), and is short again once a probe pays.
MEMO_PROBE = 4096
MEMO_MIN_HIT_RATE = 100
MEMO_PAUSE = 65536
MEMO_PAUSE_MAX = 1 << 20
#: ``handed``'s value when orjson refused the text (the strict decoder decides it next)
_UNPARSED: Any = object()


def memo_plan(seen: int, on: bool, hits: int, pause: int) -> tuple[int, bool, int, int]:
    """The memo's next decision after ``seen`` lookups (``on``: asked until now; ``hits``:
    its hits since the last decision; ``pause``: the next pause's length): when to decide
    next, whether it is asked until then, the hits reset, and the pause after that."""
    if on and hits * MEMO_MIN_HIT_RATE < MEMO_PROBE:
        return seen + pause, False, 0, min(2 * pause, MEMO_PAUSE_MAX)
    return seen + MEMO_PROBE, True, 0, MEMO_PAUSE if on else pause


def tool_schema_picker(resolver: SchemaResolver) -> Any:
    """A tool call's checker name: the record's tool set's (``--tools``, a tool set field, the
    request's own tools: ``toolcalls.py``), else the record's schema, else the registry
    schema named like the function."""

    def pick(record_schema: str | None, name: Any) -> str | None:
        if record_schema is not None:
            return record_schema
        if isinstance(name, str) and resolver.has(name):
            return name
        return None

    judges = resolver.toolcalls  # a record's own tool set, when it has one (toolcalls.py)
    return pick if judges is None else judges.picker(pick)


def audit_lines(
    lines: Iterable[bytes],
    opts: AuditOptions,
    resolver: SchemaResolver,
    first_line: int = 1,
    records_out: IO[bytes] | None = None,
    shard: str | None = None,
    route: Any = None,
) -> Tally:
    """Audit an iterable of raw JSONL lines into a fresh Tally (one process, one stream).

    ``shard``: the name of the input file these lines are, when the audit reads several
    (``multi.py``); each ``--records`` row then says it and its line in it (``shard_line``).

    ``route``: a ``routing.Route`` when this is one of several workers that each own some
    schemas; the outputs it does not own are skipped after the record is parsed, and
    ``records_out`` is then a ``routing.KeyedRows`` (each row keyed by line and position).

    The ok path is kept to local variables and plain dict operations on purpose: it runs for
    ~96% of lines, and each attribute or method call there costs a measurable share.
    """
    tally = Tally()
    fixed = resolver.fixed
    field_, schema_field = opts.field, opts.schema_field
    ep_field, step_field = opts.episode_field, opts.step_field
    tool_schema = tool_schema_picker(resolver)
    checkers: dict[str, Any] = {}
    ok_counts: dict[str, int] = {}
    episodes, by_step = tally.episodes, tally.by_step
    loads = orjson.loads
    n_fail = 0  # ok outputs are counted per schema alone (``ok_counts``), summed at the end
    # Outputs per source field, other than the usual "text" (counted once at the end, to keep
    # the ok path at one string comparison); failures per source are counted in _failure.
    sources: Counter = Counter()
    # Verdicts by (checker, exact text), kept by the resolver across this process's chunks;
    # off for --all-errors, which needs every parsed value (``SchemaResolver.remember``).
    memo = resolver.verdicts if not opts.all_errors else None
    lineno = first_line - 1
    in_range = True
    mine = False  # a routed worker's line known to be its own by the schema it names
    ranged = 0  # lines of route's range (a routed worker counts only those)
    # a routed worker skips a line another worker owns from two lookups, when the record has
    # the usual shape (a string ``text`` and schema name: what ``find_outputs`` answers
    # first, with that one output); half of every line it reads is such a line
    owns = route.owns if route is not None and field_ is None and "." not in schema_field else None
    # The lean path (``_lean_ok``'s conditions, inlined): a plain record whose one output
    # parses with orjson and that jsonschema-rs accepts is counted here and nothing else is
    # asked of it; anything else falls through to the general path below, which decides it.
    # ... and no tool set judges the records (``--tools``; else a record that names one, or
    # carries its request, is the general path's: ``toolcalls.ToolJudges.untooled``)
    tools = resolver.toolcalls
    lean = (
        records_out is None and field_ is None and "." not in schema_field and tools.fixed is None
    )
    tools_field = tools.field
    # schema name -> its checker's ``quick`` (None: not lean; False: another worker's schema)
    quicks: dict[str, Any] = {}
    routed = route is not None
    hot = route.hot if routed else frozenset()  # schemas split by line range
    floats_alike: set[str] = set()  # schema names whose checker's ``numbers_plain`` holds
    memo_ok = [OUTCOME_OK, None, None]  # the memo entry of every lean ok (never mutated)
    # memo lookups (either path) and hits since the last decision, when to decide next,
    # whether it is asked until then, the next pause: one schedule per resolver (a worker's
    # slices continue it)
    if memo is None:
        asked, memo_hits, memo_next, memo_on, memo_pause = 0, 0, -1, False, MEMO_PAUSE
    else:
        if resolver.memo_schedule is None:
            resolver.memo_schedule = [0, 0, MEMO_PROBE, True, MEMO_PAUSE]
        asked, memo_hits, memo_next, memo_on, memo_pause = resolver.memo_schedule
    pending_lengths: dict[tuple, int] = {}  # (schema, finish reason, tokens) -> outputs
    dumps = orjson.dumps
    key_count = plain_key_count
    remember = resolver.remember
    fixed_name = fixed.name if fixed is not None else None
    log_lines = LogLines(str(resolver.registry_path), fixed_name)
    if lean and fixed is not None:
        fixed.fast  # noqa: B018 (compiles jsonschema-rs's check: sets quick)
        quicks[fixed.name] = fixed.quick
        if fixed.numbers_plain:
            floats_alike.add(fixed.name)
    # A lean output that failed is handed to the general path with what the lean test found
    # out, so that nothing is asked twice: ``handed`` is its text (the very object the general
    # path finds again), ``handed_value`` the value jsonschema-rs refused, or ``_UNPARSED``
    # when orjson refused the text (the memo was asked already, and missed).
    handed: Any = None
    handed_value: Any = None
    # without a tool set, ``find_outputs`` of such a record is its one text (``_find_outputs``'
    # first case); a tool set may judge a record's text otherwise (``toolcalls.py``)
    untooled = tools.untooled
    for lineno, raw in enumerate(lines, first_line):  # noqa: B007
        if route is not None:
            mine = False  # (set below for a line this worker owns by its schema)
            in_range = route.lo <= lineno < route.hi
            ranged += in_range
            tally.order = 0
            if records_out is not None:
                records_out.key = b"%d 0 " % lineno  # type: ignore[attr-defined]
        try:
            try:
                rec = loads(raw)
            except orjson.JSONDecodeError:
                logged = log_lines.record(raw)  # SGLang's own request log, read as records
                if logged is None:  # an event with no structured output: read, not counted
                    tally.log_events += in_range
                    continue
                if logged:
                    raw = logged
                    error = log_lines.registry_error()
                    if error is not None and in_range:
                        input_error(tally, records_out, lineno, None, error, shard, first_line)
                rec = parse_record(raw)
            handed = None  # what the lean test hands over lives for its own line only
            if lean and rec.__class__ is dict and tools_field not in rec and "request" not in rec:
                text = rec.get("text")
                name = rec.get(schema_field)
                if fixed is not None:
                    # a schema field that is not a name is the general path's input error
                    name = fixed_name if name is None or name.__class__ is str else None
                try:
                    quick = quicks.get(name) if text.__class__ is str else None
                except TypeError:  # a name that is a list or an object (unhashable): the
                    quick = None  # general path's input error
                if routed and quick is not None:
                    if quick is False:
                        continue  # another worker's schema (``routing.Route``), known so
                    if hot and name in hot and not in_range:
                        continue  # a hot schema's line outside this worker's range
                if quick is not None:
                    asked += 1
                    if asked == memo_next:  # the memo's hit rate decides whether to ask it
                        memo_next, memo_on, memo_hits, memo_pause = memo_plan(
                            asked, memo_on, memo_hits, memo_pause
                        )
                    if memo_on:
                        key = (checkers[name] if fixed is None else fixed, text)
                        hit = memo.get(key)
                    else:
                        hit = None
                    if hit is None:
                        try:
                            value = loads(text)
                        except orjson.JSONDecodeError:
                            quick = None
                            handed, handed_value = text, _UNPARSED
                        else:
                            shape = value.__class__
                            if shape is dict or shape is list:
                                if (
                                    len(text) > _DEEP_TEXT
                                    and text.count("[") + text.count("{") > MAX_DEPTH
                                ):
                                    quick = None  # maybe too deep (orjson writes 255 levels)
                                elif (colons := text.count(":")) == (
                                    len(value) if shape is dict else 0
                                ) and name in floats_alike:
                                    # every name is followed by a colon and names a key of
                                    # the value at least once: as many colons as the root
                                    # has keys leaves no colon for a repeat or a nested key,
                                    # and a long integer read as a float is judged alike
                                    pass
                                elif colons != key_count(value):  # else: no repeat
                                    # a colon in a string, a float, or a repeated name
                                    back = dumps(value)
                                    if (
                                        colons != back.count(b":")
                                        or "\\u" in text
                                        or b"e+" in back
                                        and may_have_long_int(text)
                                    ):
                                        quick = None
                            elif may_have_long_int(text):
                                quick = None
                            if quick is not None:
                                if quick(value) is True:
                                    if memo_on:
                                        remember(key, memo_ok)
                                else:  # refused: no repeated name
                                    quick = None
                                    # a long integer the colon shortcut let through reads as
                                    # a float here: the general path parses it exactly (the
                                    # verdict is alike, the message names the exact number)
                                    handed, handed_value = (
                                        text,
                                        (_UNPARSED if may_have_long_int(text) else value),
                                    )
                    elif hit[0] is not OUTCOME_OK or hit[1] is not None:
                        quick = None
                    else:
                        memo_hits += 1
                if quick is not None:  # ok: counted as the general path below counts it
                    ok_counts[name] = ok_counts.get(name, 0) + 1
                    meta = rec.get("meta_info")
                    if meta.__class__ is dict:  # SGLang's lengths: tallied once per kind
                        fr = meta.get("finish_reason")
                        if fr.__class__ is dict:
                            fr = fr.get("type")
                        tokens = meta.get("completion_tokens")
                        if fr.__class__ is str and tokens.__class__ is int:
                            kind = (name, fr, tokens)
                            pending_lengths[kind] = pending_lengths.get(kind, 0) + 1
                        else:
                            note_length(tally.lengths, name, rec, False)
                    elif "usage" in rec or "choices" in rec or "finish_reason" in rec:
                        note_length(tally.lengths, name, rec, False)
                    if ep_field is not None:
                        ep = rec.get(ep_field)
                        if ep is not None:
                            if ep.__class__ is list or ep.__class__ is dict:
                                ep = str(ep)
                            e = episodes.get(ep)
                            if e is None:
                                e = episodes[ep] = [0, 0]
                            e[0] += 1
                            step = rec.get(step_field) if step_field else None
                            if step is not None and step.__class__ is not int:
                                step = step_key(step)
                            if step is not None:
                                st = by_step.get(step)
                                if st is None:
                                    st = by_step[step] = [0, 0]
                                st[0] += 1
                    continue
                if handed is not None and (ep_field is None or rec.get(ep_field) is None):
                    # The lean failure branch: a plain record's one output that the lean
                    # test refused, counted here as the general path below counts it (its
                    # ``find_outputs``, memo and per-output tests answer the same for such a
                    # record: ``tests/test_audit_lean_handoff.py``).
                    checker = fixed if fixed is not None else checkers[name]
                    if handed_value is _UNPARSED:
                        value, outcome = parse_output(text, orjson_failed=True)
                    else:
                        value = handed_value
                        try:
                            outcome = checker.refused(value)
                        except Exception as exc:  # the schema, not the output (as below)
                            msg = unusable_schema(name, exc)
                            input_error(
                                tally, None, lineno, record_id(rec), msg[:300], shard, first_line
                            )
                            continue
                    if outcome is not None:
                        handed = None
                        if memo_on and (outcome is OUTCOME_OK or not outcome.timed_out):
                            hit = [outcome.settled(), None, None]
                            remember(key, hit)
                        else:
                            hit = None
                        plain = not (
                            "meta_info" in rec
                            or "usage" in rec
                            or "choices" in rec
                            or "finish_reason" in rec
                        )
                        if not plain:
                            note_length(tally.lengths, name, rec, False)
                        if outcome is OUTCOME_OK:  # jsonschema-rs stricter than the authority
                            ok_counts[name] = ok_counts.get(name, 0) + 1
                            continue
                        n_fail += 1
                        count_failure(
                            tally,
                            lineno,
                            rec,
                            name,
                            outcome,
                            Output(text, name),
                            checker,
                            value,
                            opts,
                            hit if plain else None,
                        )
                        note_run(tally.fail_runs, name, lineno, ok_counts.get(name, 0))
                        continue
            # ``mine``: known to be this worker's line (its one output, then); reset per line
            # with the route's range above, so that a record error before here reads it too
            if handed is not None and routed:
                # the lean test compiled this schema here, or it is hot and the line in this
                # worker's range: this worker's line (``owns`` would say so)
                mine = True
            elif owns is not None and type(rec) is dict:
                name = rec.get(schema_field)
                if type(name) is str and type(rec.get("text")) is str:
                    if not owns(name, in_range):
                        if lean and name not in hot:  # the lean test skips it from now on
                            quicks[name] = False
                        continue
                    mine = True
            if handed is not None and untooled(rec):
                # what ``find_outputs`` answers for a record the lean test read: its one text
                outs = [Output(handed, rec.get(schema_field))]
            else:
                outs = find_outputs(rec, field_, schema_field, tool_schema, raw)
        except RecordError as exc:
            # the worker whose range holds the line, or the one its schema's name sent it to
            # (the others skipped it by that name: ``mine``), a tool set it names unknown
            if in_range or mine:
                input_error(tally, records_out, lineno, None, str(exc), shard, first_line)
            continue
        batch = type(rec) is list
        steps = None  # (tool set, response) -> every call good (agent steps, toolcalls.py)
        for ordinal, out in enumerate(outs):
            if out.record is not None:  # a batch element, or one choice of several
                rec = out.record
            name = out.schema
            if out.step is not None:
                if steps is None:
                    steps = {}
                if out.verdict is SKIP:  # a text answer under auto: a step, not an output
                    if in_range:
                        steps.setdefault(out.step, True)
                    continue
            if route is not None:
                # a response's tool calls stay in one worker (its line range): its step is exact
                if not mine and not (
                    in_range if out.step is not None else route.owns(name, in_range)
                ):
                    continue
                tally.order = ordinal
                if records_out is not None:
                    records_out.key = b"%d %d " % (lineno, ordinal)  # type: ignore[attr-defined]
            if fixed is not None:
                checker = fixed
                name = fixed.name
            elif name is not None:
                checker = checkers.get(name)
                if checker is None:
                    try:
                        checker = checkers[name] = resolver.get(name)
                        checker.fast  # noqa: B018 (compiles jsonschema-rs's check: sets quick)
                        if lean and fixed is None:
                            quicks[name] = checker.quick
                            if checker.numbers_plain:
                                floats_alike.add(name)
                    except InputError as exc:
                        input_error(
                            tally, records_out, lineno, record_id(rec), str(exc), shard, first_line
                        )
                        continue
            else:
                checker = None
                name = NO_SCHEMA
            key = (checker, out.text)
            hit = None
            said: Any = None  # what the lean test found out about this very text, if anything
            if handed is not None:
                if (
                    out.text is handed
                    and checker is not None
                    and out.refusal is None
                    and out.verdict is None
                ):
                    said = handed_value  # the memo was asked for it, and missed
                handed = None
            if said is None and memo is not None and out.refusal is None:
                asked += 1
                if asked == memo_next:
                    memo_next, memo_on, memo_hits, memo_pause = memo_plan(
                        asked, memo_on, memo_hits, memo_pause
                    )
                if memo_on:
                    hit = memo.get(key)
                    memo_hits += hit is not None
            if out.refusal is not None:  # the provider's refusal: its own category
                value, dups = None, None
                outcome = Classification(REFUSAL, None, None, truncate(out.refusal, 300))
            elif out.verdict is not None:  # known without the text: no_tool_call
                value, dups = None, None
                outcome = out.verdict
            elif hit is not None:  # this schema has seen this exact text: the same verdict
                outcome, dups = hit[0], hit[1]
                value = None  # only --all-errors reads it, and that turns the memo off
                if dups is not None:
                    tally.add_duplicate_keys(lineno)
            else:
                refused = said is not None and said is not _UNPARSED
                if refused:  # jsonschema-rs said no to this value; no name repeats in it
                    value, outcome = said, None
                else:
                    value, outcome = parse_output(out.text, orjson_failed=said is _UNPARSED)
                dups = None
                if outcome is None:
                    if not refused and type(value) in (dict, list):
                        dups = duplicate_keys(out.text, value) or None
                        if dups is not None:
                            tally.add_duplicate_keys(lineno)
                    try:
                        if checker is None:
                            outcome = OUTCOME_OK
                        else:
                            outcome = checker.refused(value) if refused else checker.check(value)
                    except Exception as exc:  # the schema, not the output: an unresolvable $ref
                        msg = unusable_schema(name, exc)
                        input_error(
                            tally, records_out, lineno, record_id(rec), msg[:300], shard, first_line
                        )
                        continue
                if memo_on and (outcome is OUTCOME_OK or not outcome.timed_out):
                    # written out: a message written later would keep the parsed value alive
                    hit = [outcome.settled(), dups, None]
                    resolver.remember(key, hit)
            ok = outcome is OUTCOME_OK
            if steps is not None and out.step is not None:
                steps[out.step] = steps.get(out.step, True) and ok
            plain = not (
                "meta_info" in rec or "usage" in rec or "choices" in rec or "finish_reason" in rec
            )
            if not plain:
                # a hosted body's own usage counts for this output alone (budget.py)
                note_length(tally.lengths, name, rec, out.record is not None and not out.own_usage)
            if out.source != "text":
                sources[out.source] += 1
            found: Any = ()
            if ok:
                ok_counts[name] = ok_counts.get(name, 0) + 1
            else:
                n_fail += 1
                # a plain record's diagnoses depend on the text and verdict only: memoised
                entry = hit if plain else None
                found = count_failure(
                    tally, lineno, rec, name, outcome, out, checker, value, opts, entry
                )
                note_run(tally.fail_runs, name, lineno, ok_counts.get(name, 0))
            # Episode and step counters, written out twice on purpose: a shared helper would
            # cost a call per line on the hot path (see the docstring).
            if ep_field is not None:
                ep = rec.get(ep_field)
                if ep is not None:
                    if isinstance(ep, (list, dict)):
                        ep = str(ep)
                    e = episodes.get(ep)
                    if e is None:
                        e = episodes[ep] = [0, 0]
                    e[0] += 1
                    if not ok:
                        e[1] += 1
                    step = rec.get(step_field) if step_field else None
                    if step is not None and step.__class__ is not int:
                        step = step_key(step)
                    if step is not None:
                        st = by_step.get(step)
                        if st is None:
                            st = by_step[step] = [0, 0]
                        st[0] += 1
                        if not ok:
                            st[1] += 1
            if records_out is not None:
                write_record(
                    records_out,
                    lineno,
                    rec,
                    out,
                    name,
                    outcome,
                    batch,
                    dups,
                    shard,
                    first_line,
                    found,
                )
        if steps:
            note_steps(tally.tool_steps, steps)
    if memo is not None:
        resolver.memo_schedule = [asked, memo_hits, memo_next, memo_on, memo_pause]
    for (name, fr, tokens), n in pending_lengths.items():
        note_lengths(tally.lengths, name, fr, tokens, n)
    tally.lines = lineno - first_line + 1 if route is None else ranged
    tally.order = None
    n_ok = sum(ok_counts.values())
    texts = n_ok + n_fail - sum(sources.values())
    if texts:
        sources["text"] = texts
    tally.sources.update(sources)
    tally.ok += n_ok
    tally.outputs += n_ok  # failures were counted by add_failure
    for name, n in ok_counts.items():
        tally.by_schema.setdefault(name, Counter())[OK] += n
    close_runs(tally.fail_runs, ok_counts)
    for name, c in checkers.items():  # reported from here: --jobs workers compile their own
        tally.fast_path[name] = c.fast_path
    if fixed is not None:
        tally.fast_path[fixed.name] = fixed.fast_path
    return tally
