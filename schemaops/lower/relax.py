"""The relaxation ladder of ``lower``: what to give up when the served schema does not compile.

A served schema can be exact and still not compile on the backend within compare's cap
(``--timeout`` seconds, 4 GiB above the worker's start-up size): outlines builds a
token-level index whose size grows with the number of regex states, and some constraints
cost far more states than others. When the served schema's compile ends in ``timeout`` or
``oom`` (``triggered``), ``lower_registry`` climbs this ladder: each step moves one class of
constraints from the served schema into the residual (with the trigger in each rule's
reason), and the schema is lowered, compiled, walked and proven again; the climb stops at the
first step that compiles. Steps are cumulative and a step that finds nothing of its class in
the schema is passed without a compile. Every step taken is a ``Relaxation`` in the case's
report; nothing is dropped silently (the moved keywords are residual rules that
``check_residual`` checks, and ``audit`` still validates against the original).

The order is the measured compile cost on outlines (outlines_core 0.2.14, qwen2.5
vocabulary; ``python bench/lower_relax.py`` on the shipped ``tool_call`` envelope, 2 cores):
served 12.5 s and +591 MiB; without the string length bounds 5.5 s and +39 MiB (a
``maxLength`` of n costs n regex states over the whole vocabulary: about 2.2 MiB and 20 ms per
unit of n for one string); array item bounds alone 0.82x the time, then 4.3 s after both;
format patterns, integer enums and other patterns alone change nothing there (1.00x, 0.99x,
1.08x) and take the cumulative ladder to 4.0 s. A schema whose compile still fails after the
last step is not lowered (exit 1), with the steps tried in its problem.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from schemaops.compare.model import OOM, TIMEOUT

#: compile statuses that start the ladder (a refusal or an error is not a matter of size)
TRIGGERS = (TIMEOUT, OOM)


def triggered(result: dict[str, Any]) -> bool:
    """Whether a compare result starts (or continues) the ladder: out of memory, or out of
    time before the compile finished (a walk that times out after compiling is not a matter
    of the grammar's size)."""
    status = result.get("status")
    return status == OOM or (status == TIMEOUT and result.get("compile_ms") is None)


@dataclass(frozen=True)
class Step:
    """One rung: a class of constraints, the keywords it moves, and why it sits there."""

    key: str
    keywords: tuple[str, ...]
    what: str


LADDER: tuple[Step, ...] = (
    Step(
        "string.length",
        ("minLength", "maxLength"),
        "string length bounds (each unit of a bound is a regex state over the whole vocabulary)",
    ),
    Step(
        "array.bounds",
        ("minItems", "maxItems"),
        "array item bounds (a bound repeats the item's whole regex)",
    ),
    Step(
        "format.pattern",
        ("format",),
        "formats lower would serve as patterns (date, date-time, uuid, ...)",
    ),
    Step(
        "integer.enum",
        ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
        "integer ranges lower would serve as enums",
    ),
    Step("pattern", ("pattern",), "string patterns"),
)


@dataclass
class Relaxation:
    """One step of the ladder taken for one schema: what moved, and what made it necessary."""

    step: str
    what: str
    trigger: str  # the compile status before this step: timeout or oom
    detail: str  # that compile's error line
    moved: list[str] = field(default_factory=list)  # residual pointers this step added
    status: str | None = None  # the compile status after this step

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def reason(step: Step, backend: str, result: dict[str, Any]) -> str:
    """The residual reason of a keyword moved by ``step``, naming the failed compile."""
    err = str(result.get("error") or "").strip().splitlines()
    detail = f": {err[0][:120]}" if err else ""
    return (
        f"relaxed for compile: the served schema did not compile on {backend} within the cap "
        f"({result.get('status')}{detail}); ladder step {step.key}: {step.what}"
    )
