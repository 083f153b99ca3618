#!/usr/bin/env bash
# `schemaops watch --on-poisoned` hook: a schema is poisoned (its grammar is cached as invalid
# on the server: every request with it fails until the cache is emptied), so empty the
# server's grammar cache (/flush_cache, which SGLang performs only when no request is running:
# it waits up to 30 s for that) and warm the whole registry again, since the flush emptied
# every schema's compiled grammar. Exit 0 when the flush and the warm-up succeeded.
#
# Usage: watch-on-poisoned.sh SCHEMA   (watch passes the schema name as the last argument;
#        it is logged with control characters escaped, never evaluated)
# Environment: SGLANG_URL (default http://127.0.0.1:30000), SCHEMAOPS_REGISTRY (default
# /etc/schemaops/schemas), SCHEMAOPS (default: schemaops), SCHEMAOPS_API_KEY (sent by both
# the flush and warm; keep it in the environment, never on a command line).
#
#   schemaops watch LOG --on-poisoned /usr/local/share/schemaops/watch-on-poisoned.sh
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 SCHEMA" >&2
    exit 2
fi
url=${SGLANG_URL:-http://127.0.0.1:30000}
registry=${SCHEMAOPS_REGISTRY:-/etc/schemaops/schemas}
read -r -a schemaops <<< "${SCHEMAOPS:-schemaops}"

printf 'watch-on-poisoned: schema %q is poisoned on %s: flushing the grammar cache\n' \
    "$1" "$url" >&2
python3 - "$url" <<'PY'
import os, sys, time, urllib.error, urllib.request

url = sys.argv[1].rstrip("/") + "/flush_cache?timeout=30"
key = os.environ.get("SCHEMAOPS_API_KEY")
headers = {"Authorization": f"Bearer {key}"} if key else {}
for attempt in range(5):
    try:
        req = urllib.request.Request(url, method="POST", headers=headers)
        with urllib.request.urlopen(req, timeout=60) as r:
            sys.exit(0 if r.status == 200 else 1)
    except urllib.error.HTTPError as exc:  # 400: requests still running; try again
        print(f"flush_cache: HTTP {exc.code}", file=sys.stderr)
    except OSError as exc:
        print(f"flush_cache: {exc}", file=sys.stderr)
    time.sleep(attempt + 1)
sys.exit(1)
PY
exec "${schemaops[@]}" warm --server "$url" --registry "$registry" --timeout 600 --no-progress
