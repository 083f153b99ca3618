"""Start-up counts (issue 24): a ``schemaops`` process imports only what its command uses.

Every process imports ``schemaops.cli``, which imports every command module to build the
typer app; so a command module imports its library code (rich, the registry, jsonschema,
HTTP clients) inside the command's body. These tests run the real command line in a fresh
process and read the module set it ended with (``sys.modules`` at exit), so they assert what
was imported, never how long it took (``bench/startup.py`` times it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: writes ``sorted(sys.modules)`` to argv[1] at exit, then runs the console entry point on
#: the rest of argv (as the ``schemaops`` script does)
PROBE = (
    "import atexit, sys\n"
    "out = sys.argv.pop(1)\n"
    "def dump():\n"
    "    with open(out, 'w') as fh:\n"
    "        fh.write('\\n'.join(sorted(sys.modules)))\n"
    "atexit.register(dump)\n"
    "from schemaops.cli import main\n"
    "main()\n"
)

#: what neither building the app nor an audit needs. Imported by the command modules at the
#: top before issue 24: rich (terminal output; ``--json`` prints none), the registry's diff
#: and loader (jsonschema, referencing), urllib.request (http.client, email, ssl: a file
#: ``$ref`` path only), multiprocessing (``--jobs`` > 1 only). Never on the audit path, kept
#: out by these tests: the HTTP client, the grammar backends, Ray, Prometheus, Parquet.
NOT_FOR_AUDIT = {
    "rich",
    "rich.console",
    "schemaops.audit.report.terminal",
    "schemaops.registry.diff",
    "schemaops.registry.diffpaths",
    "urllib.request",
    "http.client",
    "email.parser",
    "ssl",
    "multiprocessing",
    "concurrent.futures",
    "httpx",
    "schemaops.http.client",
    "xgrammar",
    "llguidance",
    "outlines",
    "torch",
    "ray",
    "prometheus_client",
    "pyarrow",
}

#: and what building the app (``import schemaops.cli``, ``--version``) needs even less
NOT_FOR_THE_APP = NOT_FOR_AUDIT | {
    "jsonschema",
    "referencing",
    "schemaops.registry.loader",
    "schemaops.registry.lazy",
    "schemaops.audit",
    "schemaops.warm",
    "schemaops.compare",
    "schemaops.lower",
    "schemaops.probe",
}


def modules_after(tmp_path: Path, *args: str) -> tuple[set[str], subprocess.CompletedProcess]:
    """Run ``schemaops ARGS`` in a fresh interpreter; the modules it had imported at exit."""
    out = tmp_path / "modules.txt"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.exists(), proc.stderr
    return set(out.read_text().split("\n")), proc


@pytest.fixture
def one_line(tmp_path: Path) -> Path:
    """The shipped example's first output (a ``create_ticket`` call), as a one-line file."""
    with open(REPO / "audits" / "example-outputs.jsonl", "rb") as fh:
        first = fh.readline()
    path = tmp_path / "one.jsonl"
    path.write_bytes(first)
    return path


def test_version_builds_the_app_without_library_code(tmp_path: Path) -> None:
    mods, proc = modules_after(tmp_path, "--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("schemaops ")
    assert "schemaops.commands.registry" in mods  # the whole app was built
    assert "schemaops.commands.drift" in mods
    assert sorted(NOT_FOR_THE_APP & mods) == []


@pytest.mark.parametrize("cache", ["cold", "warm", "off"])
def test_audit_json_imports_only_what_the_audit_uses(
    tmp_path: Path, one_line: Path, cache: str
) -> None:
    """``schemaops audit FILE --registry DIR --json``: the facts cache cold (first run),
    warm (second run, schemas answered from it) or off (``--no-cache``)."""
    store = ["--cache-dir", str(tmp_path / "cache")] if cache != "off" else ["--no-cache"]
    args = ["audit", str(one_line), "--registry", "schemas", "--json", *store]
    if cache == "warm":
        first, proc = modules_after(tmp_path, *args)
        assert proc.returncode == 0, proc.stderr
    mods, proc = modules_after(tmp_path, *args)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["outputs"] == 1 and doc["ok"] == 1, doc
    assert {"jsonschema_rs", "schemaops.audit", "schemaops.registry.lazy"} <= mods
    assert sorted(NOT_FOR_AUDIT & mods) == []


def test_audit_terminal_report_still_imports_rich(tmp_path: Path, one_line: Path) -> None:
    """The deferred import is the one the terminal report makes: without ``--json`` rich
    prints it (the negative above is not a module that could never load)."""
    args = ["audit", str(one_line), "--registry", "schemas", "--no-cache"]
    mods, proc = modules_after(tmp_path, *args)
    assert proc.returncode == 0, proc.stderr
    assert {"rich.console", "schemaops.audit.report.terminal"} <= mods
    assert "1 total: 1 outputs" in proc.stdout
