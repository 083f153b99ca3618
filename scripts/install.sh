#!/usr/bin/env bash
# Install schemaops with every extra (Ray included: the tests start a local cluster) into ./.venv (or $SCHEMAOPS_VENV).
#
# torch is pinned before xgrammar: xgrammar imports torch, and an unpinned torch makes pip
# pull a multi-GB CUDA build. On these machines `torch==2.13.0` is a local CPU wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SCHEMAOPS_VENV:-.venv}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "[install] creating virtual environment $VENV" >&2
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  echo "[install] torch==${SCHEMAOPS_TORCH:-2.13.0} (CPU)" >&2
  "$VENV/bin/python" -m pip install -q "torch==${SCHEMAOPS_TORCH:-2.13.0}"
fi
echo "[install] schemaops[all,ray,dev]" >&2
"$VENV/bin/python" -m pip install -q -e ".[all,ray,dev]"
"$VENV/bin/schemaops" --version
