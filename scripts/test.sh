#!/usr/bin/env bash
# Run the whole test suite: the fast tier and the integration tests against a real SGLang
# dev server (its separate environment is installed on first use and cached).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SCHEMAOPS_VENV:-.venv}"
[ -x "$VENV/bin/schemaops" ] || bash scripts/install.sh
echo "[test] preparing the SGLang dev server environment (cached after the first run)" >&2
"$VENV/bin/schemaops" dev-server --install-only
echo "[test] preparing the vLLM dev server environment (cached after the first run)" >&2
"$VENV/bin/schemaops" dev-server --install-only --engine vllm
exec "$VENV/bin/python" -m pytest "$@"
