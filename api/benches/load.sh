#!/usr/bin/env bash
# Loopback load test: POST /demo/profile (10-turn trace, free cap lifted) against a bare warp
# handler that hashes the same body, with the same load tool (wrk), in the same run.
# Usage: api/benches/load.sh [seconds] [connections]
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
conns=${2:-32}
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
cargo build --release --quiet --bin conduct --example bare_hash
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

python3 api/benches/body.py > "$work/body.json"
python3 - "$work/body.json" "$work/post.lua" <<'PY'
import json, sys
body = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(
    'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
    f'wrk.body = {json.dumps(body)}\n'
    'shown = false\n'
    'response = function(status, headers, body)\n'
    '  if status ~= 200 and not shown then print("first non-200: " .. status .. " " .. body); shown = true end\n'
    'end\n')
PY

target/release/conduct serve --listen 127.0.0.1:0 --data "$work/data" --site "$work/site" \
  --demo-daily-cap 0 > "$work/conduct.out" 2>/dev/null &
target/release/examples/bare_hash 127.0.0.1:0 > "$work/bare.out" 2>/dev/null &
for _ in $(seq 100); do
  grep -q listening "$work/conduct.out" && grep -q listening "$work/bare.out" && break
  sleep 0.1
done
conduct_url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/conduct.out")
bare_url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/bare.out")
curl -sf -o /dev/null -X POST -H 'content-type: application/json' --data @"$work/body.json" \
  "$conduct_url/demo/profile" || { echo "conduct did not answer"; exit 1; }

run() { wrk -t2 -c"$conns" -d"${secs}s" --latency -s "$work/post.lua" "$1"; }
echo "== warm-up"; wrk -t2 -c"$conns" -d2s -s "$work/post.lua" "$bare_url/" >/dev/null
wrk -t2 -c"$conns" -d2s -s "$work/post.lua" "$conduct_url/demo/profile" >/dev/null
echo "== bare warp handler (sha256 of the body)"; run "$bare_url/" | tee "$work/bare.txt"
echo "== conduct POST /demo/profile"; run "$conduct_url/demo/profile" | tee "$work/conduct.txt"
rps() { awk '/^Requests\/sec/ {print $2}' "$1"; }
errs() { awk '/Non-2xx/ {n=$NF} /Socket errors/ {e=$0} END {print (n?n:0) (e?" / "e:"")}' "$1"; }
b=$(rps "$work/bare.txt"); c=$(rps "$work/conduct.txt")
echo
echo "| server | requests/s | non-2xx |"
echo "|---|---:|---:|"
echo "| bare warp handler (sha256) | $b | $(errs "$work/bare.txt") |"
echo "| conduct /demo/profile (10 turns) | $c | $(errs "$work/conduct.txt") |"
python3 -c "print('ratio: %.1f%% of the bare handler' % (100 * $c / $b))"
