#!/usr/bin/env bash
# Run the whole test suite: the fast tier, the corpus tier (JSONSchemaBench and the
# JSON-Schema-Test-Suite, found or fetched by scripts/get_corpora.py) and the integration
# tests against real SGLang and vLLM dev servers (their environments are installed on first use
# and cached). Installs what the tests need into .venv first (scripts/install.sh --all).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SCHEMAOPS_VENV:-.venv}"
# everything the tests need (a base `install.sh --audit` venv is completed, not replaced)
"$VENV/bin/python" -c "import schemaops, pytest, xdist, xgrammar, llguidance, outlines_core, ray" \
  2>/dev/null || bash scripts/install.sh --all
# The dev-server environments (SGLang and vLLM, ~10 GB, ~15 min each on a fresh machine) are
# installed in the background while the tests that do not need them run: tests/conftest.py
# waits for these installers before the first test needing them (in the second session below);
# a run that needs neither stops them at its end (pip resumes next time). Once installed they
# are found in the cache in a second.
mkdir -p .test-logs
echo "[test] preparing the SGLang and vLLM dev-server environments in the background" \
  "(cached after the first run; logs in .test-logs/)" >&2
# setsid: each installer leads its own process group, so conftest.py can stop it with its pip
setsid "$VENV/bin/schemaops" dev-server --install-only >.test-logs/devserver-sglang.log 2>&1 &
SGLANG_PID=$!
setsid "$VENV/bin/schemaops" dev-server --install-only --engine vllm \
  >.test-logs/devserver-vllm.log 2>&1 &
INSTALLERS="sglang:$SGLANG_PID:.test-logs/devserver-sglang.log vllm:$!:.test-logs/devserver-vllm.log"
echo "[test] the corpus tier's corpora (found, or fetched at pinned checksums into the cache)" >&2
"$VENV/bin/python" scripts/get_corpora.py \
  || echo "[test] some corpora could not be fetched: their tests are not run (CI=true: they fail)" >&2
# Two pytest sessions over the same arguments: first every test that does not need a dev-server
# environment, on every core (pytest-xdist; SCHEMAOPS_TEST_WORKERS sets how many; the Ray tests
# in one group, so one worker starts one cluster), while the environments install; then those
# tests in one process (one server per session), after waiting for the installers
# (tests/conftest.py _select_phase).
# A session left with no test (exit 5: the arguments picked only the other kind) is no failure.
status=0
SCHEMAOPS_TEST_PHASE=parallel SCHEMAOPS_TEST_INSTALLERS="" "$VENV/bin/python" -m pytest \
  -n "${SCHEMAOPS_TEST_WORKERS:-auto}" --dist loadgroup "$@" || status=$?
serial=0
SCHEMAOPS_TEST_PHASE=serial SCHEMAOPS_TEST_INSTALLERS="$INSTALLERS" "$VENV/bin/python" -m pytest \
  "$@" || serial=$?
if [ "$status" -eq 5 ] || { [ "$status" -eq 0 ] && [ "$serial" -ne 5 ]; }; then
  status=$serial
fi
exit "$status"
