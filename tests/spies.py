"""``calls_to``: count (and read back) the calls a piece of code makes to one function, for
tests that hold a cost by how often something runs (a walk done once, a sort done once per
registry, a regex compiled once), never by how long it takes."""

from __future__ import annotations

from typing import Any

import pytest


def calls_to(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[tuple]:
    """Replace ``owner.name`` (a module's function, or a class's method: ``self`` is then the
    first argument recorded) with a wrapper that records each call's positional arguments
    and calls the real one; returns the list the calls are appended to."""
    real = getattr(owner, name)
    seen: list[tuple] = []

    def recorded(*args: Any, **kwargs: Any) -> Any:
        seen.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, recorded)
    return seen
