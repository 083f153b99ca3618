"""Valid instances generated with hypothesis-jsonschema, for schemas without examples.

Optional: the generator comes with ``schemaops[compare]`` (also in ``schemaops[all]``);
``generation_missing`` says when it is not installed, and every failure to generate is a
``GenerationError`` with the reason, so a result can say why it has no evidence.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from schemaops.compare.instances import validator

GENERATION_EXTRA = "schemaops[compare]"


class GenerationError(Exception):
    """Valid instances could not be generated; the message says why (a missing package, a
    schema hypothesis-jsonschema cannot handle, no instance within the time budget)."""


def generation_missing() -> str | None:
    """Why instance generation is impossible in this environment (None: it is possible).

    Checked by ``run_compare`` before any worker starts, so a normal install without the
    generator says so up front instead of walking nothing.
    """
    import importlib.util

    for mod, dist in (
        ("hypothesis", "hypothesis"),
        ("hypothesis_jsonschema", "hypothesis-jsonschema"),
    ):
        try:
            found = importlib.util.find_spec(mod) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return (
                f"generating valid instances needs {dist}, which is not installed: "
                f'pip install "{GENERATION_EXTRA}" (also in "schemaops[all]")'
            )
    return None


def generate_valid(schema: Any, n: int = 5, max_time_s: float = 10.0) -> list[Any]:
    """Up to ``n`` valid instances from hypothesis-jsonschema; raises ``GenerationError``
    with the reason when it finds none (so a caller can say why a verdict is unchecked).

    hypothesis-jsonschema 0.23.1 needs ``hypothesis==6.130.13`` and cannot follow recursive or
    remote ``$ref``s; it fills strings with control characters and rare Unicode, which the
    walk retries in other tokenizations when refused (see ``retokenize``). Deterministic
    (``derandomize``) and bounded by ``n``; call it inside a worker with a deadline: it can
    be slow on big schemas.
    Every instance is re-checked with jsonschema (format asserted) and dropped if invalid.
    Generation runs on ``close_objects(schema)``: left open, hypothesis pads objects with
    random undeclared keys, which xgrammar's strict mode and outlines refuse, so every
    schema would read ``rejects_valid`` from generator noise. Whether a backend refuses
    undeclared properties is shown by the registry's own examples instead.
    ``max_time_s`` bounds the generation (with ``SIGALRM``, so only in a main thread, as in a
    worker): a schema hypothesis-jsonschema chews on yields what it found so far.
    """
    if n <= 0:
        return []
    missing = generation_missing()
    if missing:
        raise GenerationError(missing)
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis_jsonschema import from_schema

    found: list[Any] = []
    failure: list[str] = []
    refused: list[str] = []

    def collect_from(strategy: Any) -> None:
        @settings(
            max_examples=n,
            database=None,
            deadline=None,
            derandomize=True,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def collect(value: Any) -> None:
            found.append(value)

        collect()

    # one budget for reading the schema and drawing from it: hypothesis-jsonschema's reading
    # (``canonicalish``/``merged``) is exponential in nested ``if``/``then``/``else`` (a
    # 126-level mutant of a real schema held it for 79 s when only the drawing was bounded)
    strategy = None
    with _time_budget(max_time_s) as budget:
        try:
            strategy = from_schema(close_objects(schema))
        except Exception as exc:  # the schema is beyond hypothesis-jsonschema
            refused.append(f"hypothesis-jsonschema cannot use this schema: {_why(exc)}")
        if strategy is not None:
            try:
                collect_from(strategy)
            except Exception as exc:  # e.g. Unsatisfiable: keep what was found, say why
                failure.append(_why(exc))
    if refused:
        raise GenerationError(refused[0])
    if strategy is None:  # the alarm went off while hypothesis-jsonschema read the schema
        raise GenerationError(
            f"hypothesis-jsonschema did not finish reading this schema in {max_time_s:g} s"
        )
    if budget.expired:
        failure.append(f"stopped after {max_time_s:g} s")
    check = validator(schema)
    out, seen, dropped = [], set(), 0
    for v in found:
        key = json.dumps(v, sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        try:
            ok = check.is_valid(v)
        except Exception as exc:  # jsonschema itself failed on the schema
            failure.append(f"jsonschema could not check an instance: {_why(exc)}")
            break
        if ok:
            out.append(v)
        else:
            dropped += 1
    if not out:
        if dropped:
            failure.append(f"{dropped} generated instance(s) were invalid for jsonschema")
        raise GenerationError(
            "no valid instance generated" + (f" ({'; '.join(failure)})" if failure else "")
        )
    return out[:n]


def _why(exc: BaseException) -> str:
    """One line naming an exception (its first message line, bounded)."""
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0][:300]}" if msg else type(exc).__name__


# Not registry/refs.py's lists (nor lower/passes.py's) on purpose: closing objects leaves
# allOf branches and unevaluatedProperties alone (see close_objects).
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_VALUES = (
    "items",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "additionalProperties",
    "unevaluatedItems",
)
_SCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems", "items")


def close_objects(schema: Any) -> Any:
    """A copy of ``schema`` where objects that list ``properties`` and say nothing about
    other keys get ``additionalProperties: false``: its instances are valid for ``schema``.

    ``allOf`` branches are left open (closing each would make the conjunction refuse the
    other branches' keys)."""
    if isinstance(schema, list):
        return [close_objects(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {k: close_objects(v) for k, v in out[key].items()}
    for key in _SCHEMA_VALUES:
        if isinstance(out.get(key), dict):
            out[key] = close_objects(out[key])
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [close_objects(v) for v in out[key]]
    open_keys = ("additionalProperties", "unevaluatedProperties", "patternProperties", "allOf")
    if isinstance(out.get("properties"), dict) and not any(k in out for k in open_keys):
        out["additionalProperties"] = False
    return out


class _OutOfTime(BaseException):
    """Raised by the generation alarm; a BaseException so hypothesis does not swallow it."""


class _Budget:
    """What ``_time_budget`` yields: whether the alarm went off."""

    expired = False
    stopping = False


_REFIRE_S = 0.05


@contextmanager
def _time_budget(seconds: float) -> Iterator[_Budget]:
    """Interrupt the body after ``seconds`` (no-op outside the main thread).

    The alarm repeats every ``_REFIRE_S`` after the first: a raise that lands inside a
    callback whose exceptions Python ignores (a ``gc`` callback of hypothesis) is raised
    again, so the budget holds. Python reports such an ignored raise through
    ``sys.unraisablehook`` ("Exception ignored in ..." and a traceback on stderr, which a user
    of ``lower`` read as a crash: found by a mutation run, 2026-12-05); while the budget runs,
    that hook drops this function's own ``_OutOfTime`` and passes anything else on. A signal
    that lands in this function's own clean-up is ignored (``stopping``).
    """
    budget = _Budget()
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield budget
        return

    def alarm(signum: int, frame: Any) -> None:
        if budget.stopping:
            return
        budget.expired = True
        raise _OutOfTime()

    before = sys.unraisablehook

    def unraisable(info: Any) -> None:
        if info.exc_type is not _OutOfTime:
            before(info)

    old = signal.signal(signal.SIGALRM, alarm)
    sys.unraisablehook = unraisable
    signal.setitimer(signal.ITIMER_REAL, seconds, _REFIRE_S)
    try:
        try:
            yield budget
        except _OutOfTime:
            pass
        finally:
            budget.stopping = True
    except _OutOfTime:  # a re-fire that landed before ``stopping`` was set
        budget.stopping = True
    finally:
        budget.stopping = True
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        sys.unraisablehook = before
