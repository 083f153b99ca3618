#!/usr/bin/env bash
# Warm SGLang's grammar cache right after the server starts, then exit with warm's verdict.
#
#   python -m sglang.launch_server --port 30000 ... &
#   warmup/warm-after-start.sh http://127.0.0.1:30000 [http://worker-2:30000 ...] [-- WARM_ARG ...]
#
# Pass every worker (or every host) URL, never only a router's: a router sends each
# request to one worker, so warming through it warms one cache. DP replicas inside one
# server are found from /server_info and warmed each by routed_dp_rank. Arguments after
# `--` go to `schemaops warm` unchanged (one argument each, spaces kept).
#
# Exit status: 0 all schemas warmed on every server, 1 some schema not warmed (the report
# says which and why; gate readiness on it), 2 usage error (bad arguments, an unparsable
# SCHEMAOPS/WARM_ARGS, a WARM_REPORT that cannot be written).
#
# Environment (all optional):
#   SCHEMAOPS          command to run schemaops   (default: schemaops). An existing file is
#                      taken whole ("/opt/my tools/schemaops"); otherwise it is split with
#                      shell quoting rules, never expanded ("python3 -m schemaops",
#                      "'/opt/my tools/py' -m schemaops")
#   WARM_REGISTRY      registry folder            (default: schemas)
#   WARM_WAIT_READY    seconds to wait for readiness (default: 600; the server loads a model)
#   WARM_TIMEOUT       per-request timeout, s      (default: 600; must exceed the slowest compile)
#   WARM_CONCURRENCY   requests in flight per server (default: 2)
#   WARM_REPORT        also write the --json report to this file (default: none); checked
#                      writable before warming
#   WARM_ARGS          extra arguments for `schemaops warm`, split with shell quoting rules
#                      (never expanded), e.g. "--api openai --model 'my model'"
#   SCHEMAOPS_API_KEY  the server's API key (SGLang/vLLM --api-key, a gateway): schemaops reads
#                      it from the environment and sends 'Authorization: Bearer KEY'. Set it
#                      from a secret (an EnvironmentFile, a Kubernetes Secret), never on a
#                      command line: `ps` and /proc/PID/cmdline show every argument to every
#                      user. So `--api-key KEY` in WARM_ARGS or after `--` is refused (exit 2;
#                      `--api-key ""`, which sends no key, is allowed).
set -euo pipefail

usage() {
  echo "usage: $0 SERVER_URL [SERVER_URL ...] [-- WARM_ARG ...]" >&2
  exit 2
}

# split_words NAME VALUE LABEL: set the array NAME to VALUE's words, quotes honoured, nothing
# expanded (no $VAR, no $(...), no globbing: the text never reaches a shell).
split_words() {
  local -n words_out=$1
  local tmp word why
  tmp=$(mktemp)
  if ! why=$(python3 -c 'import os, shlex, sys
sys.stdout.buffer.write(b"".join(os.fsencode(w) + b"\0" for w in shlex.split(sys.argv[1])))' \
      "$2" 2>&1 > "$tmp"); then
    rm -f "$tmp"
    echo "error: cannot split $3 into words (${why##*: }): $2" >&2
    exit 2
  fi
  words_out=()
  while IFS= read -r -d '' word; do words_out+=("$word"); done < "$tmp"
  rm -f "$tmp"
}

servers=()
passthrough=()
while [ "$#" -gt 0 ]; do
  if [ "$1" = "--" ]; then
    shift
    passthrough=("$@")
    break
  fi
  servers+=("$1")
  shift
done
[ "${#servers[@]}" -gt 0 ] || usage

cmd=()
if [ -f "${SCHEMAOPS:-}" ]; then
  cmd=("$SCHEMAOPS")
else
  split_words cmd "${SCHEMAOPS:-schemaops}" SCHEMAOPS
fi
[ "${#cmd[@]}" -gt 0 ] || { echo "error: SCHEMAOPS is empty" >&2; exit 2; }
extra=()
split_words extra "${WARM_ARGS:-}" WARM_ARGS

# refuse_api_key ARG...: a key on the command line is readable by every local user (ps).
refuse_api_key() {
  local prev="" a
  for a in "$@"; do
    if { [ "$prev" = "--api-key" ] && [ -n "$a" ]; } ||
       { [ "${a#--api-key=}" != "$a" ] && [ -n "${a#--api-key=}" ]; }; then
      echo "error: --api-key on the command line is visible to every local user (ps);" \
        "set SCHEMAOPS_API_KEY in the environment instead (from a secret)" >&2
      exit 2
    fi
    prev=$a
  done
}
refuse_api_key ${extra[@]+"${extra[@]}"} ${passthrough[@]+"${passthrough[@]}"}

args=(warm --registry "${WARM_REGISTRY:-schemas}" --wait-ready "${WARM_WAIT_READY:-600}"
      --timeout "${WARM_TIMEOUT:-600}" --concurrency "${WARM_CONCURRENCY:-2}" --no-progress)
for url in "${servers[@]}"; do
  args+=(--server "$url")
done
args+=(${extra[@]+"${extra[@]}"} ${passthrough[@]+"${passthrough[@]}"})

if [ -n "${WARM_REPORT:-}" ]; then
  # A report that cannot be written is a usage error, said as such: checked before warming,
  # so it is never mistaken for "schema not warmed".
  if ! { : >> "$WARM_REPORT"; } 2>/dev/null || [ -d "$WARM_REPORT" ]; then
    echo "error: WARM_REPORT=$WARM_REPORT cannot be written (no schema was warmed)" >&2
    exit 2
  fi
  # One run: the JSON goes to the file, the exit status is warm's.
  set +e
  "${cmd[@]}" "${args[@]}" --json > "$WARM_REPORT"
  rc=$?
  set -e
  python3 - "$WARM_REPORT" "$rc" <<'PY' >&2 2>/dev/null || true
import json, sys
try:
    d = json.load(open(sys.argv[1]))["summary"]
except (OSError, ValueError, KeyError, TypeError):
    print(f"schemaops warm: exit {sys.argv[2]}, no report in {sys.argv[1]} (see above)")
else:
    print(f"schemaops warm: {d['warmed']}/{d['rows']} warmed, {d['invalid']} invalid, "
          f"{d['failed']} failed, {d['timeout']} timeout in {d['wall_s']} s")
PY
  exit "$rc"
fi
exec "${cmd[@]}" "${args[@]}"
