#!/usr/bin/env bash
# Restart time at N records: how soon `conduct serve` answers reads and writes, and how long
# the background catch-up takes, on a first start over a prefilled store (no vow pages on
# disk yet) and on a restart over the complete tree.
#
#   api/benches/restart.sh [N]        # default 1000000; PREFILLED=DIR reuses a prefilled dir
#
# Prints one line per start: listening, first /health, first report-in (201), caught up.
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-1000000}
cargo build --release --quiet --bin conduct -p conduct-api --example prefill_log
if [ -n "${PREFILLED:-}" ]; then
  work=$PREFILLED
else
  work=$(mktemp -d /tmp/restart.XXXXXX)
  vows=$(( n / 100 > 0 ? n / 100 : 1 ))
  epv=$(( n / vows - 1 > 0 ? n / vows - 1 : 1 ))
  echo "prefilling $vows vows x $epv entries into $work"
  target/release/examples/prefill_log --data "$work/data" --site "$work/site" \
    --origin bench.invalid/log --vows "$vows" --entries-per-vow "$epv" --ids "$work/ids" > /dev/null
fi
cat > "$work/conduct.toml" <<'TOML'
public_url = "http://bench.invalid"
report_demo_daily_cap = 0
TOML
one=$(head -1 "$work/ids")
python3 api/benches/body.py "$one" > "$work/one.json"

start() { # $1: label
  sync
  local t0 out
  t0=$(date +%s.%N)
  target/release/conduct serve --config "$work/conduct.toml" --listen 127.0.0.1:0 \
    --data "$work/data" --site "$work/site" > "$work/out" 2> "$work/err" &
  server=$!
  until grep -q 'listening on http://[^ ]* ' "$work/out"; do
    kill -0 "$server" 2>/dev/null || { cat "$work/err"; exit 1; }
    sleep 0.02
  done
  local listening health report caught url
  listening=$(python3 -c "import time; print('%.2f' % (time.time() - $t0))")
  url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/out")
  until curl -sf -o /dev/null "$url/health"; do sleep 0.02; done
  health=$(python3 -c "import time; print('%.2f' % (time.time() - $t0))")
  code=$(curl -s -o /dev/null -w '%{http_code}' -H 'content-type: application/json' \
    --data @"$work/one.json" "$url/vow/report/demo")
  report=$(python3 -c "import time; print('%.2f' % (time.time() - $t0))")
  until curl -s "$url/health" | grep -q '"site":{"state":"ok"'; do sleep 0.2; done
  caught=$(python3 -c "import time; print('%.1f' % (time.time() - $t0))")
  echo "$1: listening ${listening} s, first /health ${health} s, first report-in (${code}) ${report} s, caught up ${caught} s"
  kill -TERM "$server"; wait "$server" 2>/dev/null || true
}
if [ -n "${PREFILLED:-}" ]; then
  start "restart over $PREFILLED"
else
  start "first start (no vow pages on disk)"
fi
start "restart (complete tree)"
[ -n "${KEEP:-}${PREFILLED:-}" ] || rm -rf "$work"
