"""``AuditOptions``: everything that changes what an audit computes (its own module so that
the line loop, the parallel runner and the pipeline can all import it without a cycle)."""

from __future__ import annotations

from dataclasses import dataclass

from schemaops.errors import InputError


@dataclass
class AuditOptions:
    """Everything that changes what an audit computes (the CLI maps its options here).

    ``episode_field``/``step_field`` are read only when a record has them, so the defaults
    cost nothing on logs without episodes. ``timeout`` bounds one record's validation when
    its schema has regexes, and the naming of a parse failure (main thread only).
    """

    schema: str | None = None
    registry: str = "schemas"
    field: str | None = None
    schema_field: str = "schema"
    episode_field: str | None = "episode_id"
    step_field: str | None = "step"
    steps: list[int] | None = None
    target: float | None = None
    assert_format: bool = True
    all_errors: bool = False
    records: str | None = None
    #: worker processes; 0 = automatic: every core for an input large enough to pay for them
    #: (``pipeline.auto_jobs``), else one
    jobs: int = 0
    timeout: float = 1.0
    #: ``--open-timeout``: seconds each object-store call opening a shard may take
    #: (``shards.within``), so a URI without network is an exit 2, never a hang
    open_timeout: float = 30.0
    max_failure_rate: float | None = None
    min_compound: float | None = None
    #: ``--max-input-errors``: the gate on lines that were no usable record (p leaves them
    #: out); None = 0 when another gate is set, else no such gate (``result.gates``)
    max_input_errors: int | None = None
    #: schema facts cache (``audit/verdict/cache.py``): None = the user cache folder; off if
    #: not cache
    cache_dir: str | None = None
    cache: bool = True
    #: ``--ray [ADDRESS]``: audit the shards as Ray tasks on this cluster (``auto`` = the
    #: running one, ``local`` = start one in this process); None = no Ray
    ray: str | None = None
    #: ``--tools NAME``: judge every tool call against that registry tool set
    #: (``verdict/toolcalls.py``): a function not in it is ``unknown_tool``, a model failure
    tools: str | None = None
    #: the record field naming a registry tool set (``toolset`` when None), used where
    #: ``--tools`` is not given
    tools_field: str | None = None
    #: ``--tool-choice required | named[:FUNCTION] | auto``: the tool choice of records whose
    #: request does not say (a log of responses only)
    tool_choice: str | None = None

    @property
    def tool_choice_mode(self) -> tuple[str, str | None] | None:
        """``tool_choice`` read (``read/toolrequest.parse_choice_option``)."""
        from schemaops.audit.read.toolrequest import parse_choice_option

        return parse_choice_option(self.tool_choice)

    def __post_init__(self) -> None:
        if self.steps is None:
            self.steps = [1, 5, 10, 20]
        if any(n < 1 for n in self.steps):
            raise InputError("--steps must be positive integers")
        for flag, value in (
            ("--target-compound", self.target),
            ("--min-compound", self.min_compound),
            ("--max-failure-rate", self.max_failure_rate),
        ):
            if value is not None and not 0 <= value <= 1:
                raise InputError(f"{flag} must be between 0 and 1, got {value}")
        if self.max_input_errors is not None and self.max_input_errors < 0:
            raise InputError(f"--max-input-errors must be 0 or more, got {self.max_input_errors}")
        if not self.open_timeout > 0:  # also NaN
            raise InputError(f"--open-timeout must be above 0, got {self.open_timeout}")
        if self.tools is not None and self.schema is not None:
            raise InputError(
                "--tools and --schema cannot be combined: --schema judges every output,"
                " tool calls included, against one schema"
            )
        if self.tool_choice is not None:
            try:
                self.tool_choice_mode  # noqa: B018 (checked here: exit 2 before reading)
            except ValueError as exc:
                raise InputError(str(exc)) from None
        if self.tools is not None and not self.tools.strip():
            raise InputError("--tools needs a tool set name (a NAME.tools.json in --registry)")
        if self.target == 0:
            raise InputError("--target-compound must be above 0")
        if self.records is not None and self.records.strip() in ("", "-"):
            # not stdout: the rows would interleave with the report printed there
            raise InputError(
                f"--records needs a file path, got {self.records!r} (stdout carries the report)"
            )
