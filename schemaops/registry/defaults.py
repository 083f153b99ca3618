"""The registry's defaults, in a module that imports nothing heavy: command modules declare
their options with them at import time, and every ``schemaops`` process imports every command
module (``schemaops.registry.loader`` re-exports both)."""

from __future__ import annotations

from pathlib import Path

#: the registry folder a command reads when ``--registry`` is not given
DEFAULT_REGISTRY = Path("schemas")
#: seconds one schema's sidecar example check may take (a pattern can backtrack forever)
EXAMPLE_TIMEOUT = 1.0
