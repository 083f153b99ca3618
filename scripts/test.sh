#!/usr/bin/env bash
# Run the whole test suite: the fast tier, the corpus tier (JSONSchemaBench and the
# JSON-Schema-Test-Suite, found or fetched by scripts/get_corpora.py) and the integration
# tests against real SGLang and vLLM dev servers (their environments are installed on first use
# and cached). Installs what the tests need into .venv first (scripts/install.sh --all).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SCHEMAOPS_VENV:-.venv}"
# everything the tests need (a base `install.sh --audit` venv is completed, not replaced)
"$VENV/bin/python" -c "import schemaops, pytest, xgrammar, llguidance, outlines_core, ray" \
  2>/dev/null || bash scripts/install.sh --all
echo "[test] preparing the SGLang dev server environment (cached after the first run)" >&2
"$VENV/bin/schemaops" dev-server --install-only
echo "[test] preparing the vLLM dev server environment (cached after the first run)" >&2
"$VENV/bin/schemaops" dev-server --install-only --engine vllm
echo "[test] the corpus tier's corpora (found, or fetched at pinned checksums into the cache)" >&2
"$VENV/bin/python" scripts/get_corpora.py \
  || echo "[test] some corpora could not be fetched: their tests are not run (CI=true: they fail)" >&2
exec "$VENV/bin/python" -m pytest "$@"
