"""``schemaops registry drift``: the extension module ``commands/registry.py`` looks for.

The command lives with the warm area (``schemaops.commands.warm.drift_cmd``, library
``schemaops.warm.drift.run_drift``) because key drift is a cache-warming concern.
"""

from __future__ import annotations

import typer

from schemaops.commands.warm import register_drift


def register(registry_app: typer.Typer) -> None:
    """Add ``drift`` to the ``registry`` sub-app."""
    register_drift(registry_app)
