"""``schemaops warm`` as one library call: check the settings, plan, warm, report.

The CLI (``schemaops.commands.warm``) parses options into a ``WarmSettings`` and calls
``run_warm``; everything that decides something lives here, callable from Python too.
Settings that cannot work raise ``InputError`` (exit 2) before any request is sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemaops.errors import InputError
from schemaops.warm.engine import MAX_DP, WarmOptions, warm
from schemaops.warm.plan import ToolsMode, WarmItem, plan_from_registry
from schemaops.warm.progress import progress_bar
from schemaops.warm.report import document, exit_code
from schemaops.warm.urls import check_server_url

Notify = Callable[[str], None]


@dataclass
class WarmSettings:
    """What to warm (a registry or a request log) and how (``options``)."""

    options: WarmOptions
    registry: Path
    from_log: Path | None = None
    tools: ToolsMode = "off"
    tools_file: Path | None = None
    parallel_tool_calls: bool | None = None
    require_proof: bool = False


def check(settings: WarmSettings) -> None:
    """Raise ``InputError`` for settings that cannot work (bad URL, contradictory options)."""
    opts = settings.options
    for url in opts.servers:
        why = check_server_url(url)
        if why:
            raise InputError(why)
    if settings.tools != "off" and opts.api != "openai":
        raise InputError("--tools needs --api openai (tool calling is an OpenAI API path)")
    if opts.dp is not None and not 1 <= opts.dp <= MAX_DP:
        raise InputError(f"--dp must be 1..{MAX_DP} (one request per schema and replica)")
    if settings.require_proof and not opts.probe:
        raise InputError("--require-proof needs the probes: drop --no-probe")


def load_tools(path: Path | None) -> list[dict[str, Any]] | None:
    """The application's tool definitions: a JSON array, or an object with ``tools``."""
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"--tools-file {path}: {exc}") from None
    tools = data.get("tools") if isinstance(data, dict) else data
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise InputError(f"--tools-file {path}: expected a JSON array of tool definitions")
    return tools


def plan(settings: WarmSettings, notify: Notify) -> list[WarmItem]:
    """The items to warm; ``notify`` gets a line about unusable log lines, if any."""
    from schemaops.registry import load_registry

    if settings.from_log is not None:
        from schemaops.warm.drift import registry_index
        from schemaops.warm.fromlog import plan_from_log

        names = (
            registry_index(load_registry(settings.registry)) if settings.registry.is_dir() else None
        )
        items, scan = plan_from_log(settings.from_log, names)
        if scan.input_errors:
            notify(
                f"{settings.from_log}: {len(scan.input_errors)} unusable line(s), "
                f"first: {scan.input_errors[0]}"
            )
        if not items:
            raise InputError(f"no grammar found in {settings.from_log} ({scan.records} records)")
        return items
    reg = load_registry(settings.registry)
    items = plan_from_registry(
        reg,
        settings.options.api,
        settings.tools,
        load_tools(settings.tools_file),
        settings.parallel_tool_calls,
    )
    if not items:
        raise InputError(f"registry {settings.registry} has no schemas")
    return items


def run_warm(
    settings: WarmSettings, *, show_progress: bool = False, notify: Notify = print
) -> tuple[dict[str, Any], int]:
    """Check, plan, warm (with a progress bar on a terminal's stderr when asked) and report:
    the ``--json`` document and the exit code."""
    check(settings)
    items = plan(settings, notify)
    with progress_bar(show_progress) as progress:
        runs, wall = warm(items, settings.options, progress)
    doc = document(items, runs, settings.options, wall)
    return doc, exit_code(doc, settings.require_proof)
