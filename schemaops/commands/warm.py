"""CLI commands for the warm area (placeholder until that area lands)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this area's commands to the root app."""
    return None
