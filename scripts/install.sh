#!/usr/bin/env bash
# Install schemaops into ./.venv (or $SCHEMAOPS_VENV).
#
#   bash scripts/install.sh --audit   the base package only: registry, audit, watch, warm, probe
#                                     (no torch, no grammar library; tens of MB, a minute)
#   bash scripts/install.sh [--all]   everything the tests need: a CPU torch, then
#                                     -e ".[all,ray,dev]" (grammar backends, tokenizers, Ray)
#
# torch is installed before the extras: xgrammar imports torch, and a plain `pip install torch`
# on Linux pulls the multi-GB CUDA build from PyPI. The CPU build is the `+cpu` local version on
# PyTorch's CPU index (https://pytorch.org/get-started/locally/: "pip3 install torch
# --index-url https://download.pytorch.org/whl/cpu"). The index is added as an *extra* index
# only when it answers, so a machine whose pip config already holds a local CPU wheel (a
# find-links folder, a mirror) installs offline; pinning `+cpu` means no route can fall back
# to a CUDA build: without a CPU wheel the install stops with a message instead.
set -euo pipefail
cd "$(dirname "$0")/.."
WHAT=all
for arg in "$@"; do
  case "$arg" in
    --audit) WHAT=audit ;;
    --all) WHAT=all ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option $arg (use --audit or --all)" >&2; exit 2 ;;
  esac
done
VENV="${SCHEMAOPS_VENV:-.venv}"
PY="${PYTHON:-python3}"
CPU_INDEX="${SCHEMAOPS_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "[install] creating virtual environment $VENV" >&2
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip || true  # an offline mirror may lack pip

if [ "$WHAT" = audit ]; then
  echo "[install] schemaops (base: registry, audit, watch, warm, probe)" >&2
  "$VENV/bin/python" -m pip install -q -e .
  "$VENV/bin/schemaops" --version
  exit 0
fi

if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  TORCH="torch==${SCHEMAOPS_TORCH:-2.13.0}"
  # PyTorch publishes `+cpu` builds for Linux x86_64; elsewhere (macOS) PyPI's torch is CPU-only.
  if [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ]; then TORCH="$TORCH+cpu"; fi
  EXTRA=()
  if "$VENV/bin/python" - "$CPU_INDEX" <<'EOF' 2>/dev/null; then
import sys, urllib.request
urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=8).close()
EOF
    EXTRA=(--extra-index-url "$CPU_INDEX")
    echo "[install] $TORCH (CPU) from $CPU_INDEX" >&2
  else
    echo "[install] $TORCH (CPU) from pip's configured sources ($CPU_INDEX not reachable)" >&2
  fi
  if ! "$VENV/bin/python" -m pip install -q "$TORCH" ${EXTRA[@]+"${EXTRA[@]}"}; then
    echo "[install] no CPU torch ($TORCH) found: reach $CPU_INDEX, or put a CPU torch wheel" \
      "where pip finds it (PIP_FIND_LINKS), or install one into $VENV first" >&2
    exit 1
  fi
fi
echo "[install] schemaops[all,ray,dev]" >&2
"$VENV/bin/python" -m pip install -q -e ".[all,ray,dev]"
"$VENV/bin/schemaops" --version
