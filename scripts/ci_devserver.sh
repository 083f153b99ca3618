#!/usr/bin/env bash
# Pre-install the SGLang dev-server environment for CI, then prove a server starts and stops.
#
# What CI needs before the integration tests (scripts/test.sh already runs step 1):
#   1. schemaops dev-server --install-only   # venv + torch 2.14.1 (local wheels) + sglang 0.5.23
#                                            # + tiny model; ~1.5 min warm pip cache, ~6.5 GB;
#                                            # idempotent: a second call returns at once
#   2. (optional smoke) start one server, check /health, stop it: fails with the log tail
# The cache lives in $SCHEMAOPS_DEVSERVER_DIR (default ~/.cache/schemaops/devserver); keep it
# between CI runs if the CI system can, and the install step costs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SCHEMAOPS_VENV:-.venv}"
SO="$VENV/bin/schemaops"
[ -x "$SO" ] || SO="schemaops"

t0=$(date +%s)
"$SO" dev-server --install-only
t1=$(date +%s)
echo "[ci_devserver] environment ready in $((t1 - t0))s" >&2

if [ "${1:-}" = "--smoke" ]; then
  doc=$("$SO" dev-server --json --timeout 600)  # compact JSON whitespace is the default
  port=$(printf '%s' "$doc" | "$VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["servers"][0]["port"])')
  trap '"$SO" dev-server --stop --port "$port" >&2' EXIT
  t2=$(date +%s)
  echo "[ci_devserver] server on port $port started in $((t2 - t1))s" >&2
  curl -fsS "http://127.0.0.1:$port/health" >/dev/null
  curl -fsS "http://127.0.0.1:$port/generate" -H 'content-type: application/json' \
    -d '{"text": "x", "sampling_params": {"max_new_tokens": 16, "temperature": 0, "json_schema": "{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"}},\"required\":[\"ok\"]}"}}' >&2
  echo >&2
fi
