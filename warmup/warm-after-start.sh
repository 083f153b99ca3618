#!/usr/bin/env bash
# Warm SGLang's grammar cache right after the server starts, then exit with warm's verdict.
#
#   python -m sglang.launch_server --port 30000 ... &
#   warmup/warm-after-start.sh http://127.0.0.1:30000 [http://worker-2:30000 ...]
#
# Pass every worker (or every host) URL, never only a router's: a router sends each
# request to one worker, so warming through it warms one cache. DP replicas inside one
# server are found from /server_info and warmed each by routed_dp_rank.
#
# Exit status: 0 all schemas warmed on every server, 1 some schema not warmed (the report
# says which and why; gate readiness on it), 2 usage error.
#
# Environment (all optional):
#   SCHEMAOPS          command to run schemaops   (default: schemaops)
#   WARM_REGISTRY      registry folder            (default: schemas)
#   WARM_WAIT_READY    seconds to wait for readiness (default: 600; the server loads a model)
#   WARM_TIMEOUT       per-request timeout, s      (default: 600; must exceed the slowest compile)
#   WARM_CONCURRENCY   requests in flight per server (default: 2)
#   WARM_REPORT        also write the --json report to this file (default: none)
#   WARM_ARGS          extra arguments for `schemaops warm`, e.g. "--api openai"
set -euo pipefail

if [ "$#" -eq 0 ]; then
  echo "usage: $0 SERVER_URL [SERVER_URL ...]" >&2
  exit 2
fi

read -r -a cmd <<< "${SCHEMAOPS:-schemaops}"
read -r -a extra <<< "${WARM_ARGS:-}"
args=(warm --registry "${WARM_REGISTRY:-schemas}" --wait-ready "${WARM_WAIT_READY:-600}"
      --timeout "${WARM_TIMEOUT:-600}" --concurrency "${WARM_CONCURRENCY:-2}" --no-progress)
for url in "$@"; do
  args+=(--server "$url")
done

if [ -n "${WARM_REPORT:-}" ]; then
  # One run: the JSON goes to the file, the exit status is warm's.
  set +e
  "${cmd[@]}" "${args[@]}" ${extra[@]+"${extra[@]}"} --json > "$WARM_REPORT"
  rc=$?
  set -e
  python3 - "$WARM_REPORT" <<'PY' >&2 || true
import json, sys
d = json.load(open(sys.argv[1]))["summary"]
print(f"schemaops warm: {d['warmed']}/{d['rows']} warmed, {d['invalid']} invalid, "
      f"{d['failed']} failed, {d['timeout']} timeout in {d['wall_s']} s")
PY
  exit "$rc"
fi
exec "${cmd[@]}" "${args[@]}" ${extra[@]+"${extra[@]}"}
