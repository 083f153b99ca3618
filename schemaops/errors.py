"""Errors that carry an exit code, so the CLI can map them without tracebacks.

Exit codes are part of the interface: 0 ok, 1 a gate/check failed, 2 usage or unreadable input.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_GATE = 1
EXIT_USAGE = 2


class SchemaopsError(Exception):
    """Base error: its message is printed as is, and the process exits with ``exit_code``."""

    exit_code = EXIT_USAGE
    #: the registry problems behind the error, when there are any (``--json`` lists them)
    problems: list[dict] | None = None


class InputError(SchemaopsError):
    """Input that cannot be read (missing file, not JSON, bad option): exit 2."""

    exit_code = EXIT_USAGE


class GateFailed(SchemaopsError):
    """A check or gate did not pass: exit 1."""

    exit_code = EXIT_GATE
