#!/usr/bin/env bash
# A quick A/B of the random-vow write path: prefill V vows of ten records (prefill_log), render,
# serve with caps lifted, warm 2 s, then wrk random-vow report-ins at C connections for S
# seconds. Prints the integration report (metrics_delta.py), wrk's RESULT line, report-ins/s and
# the server's CPU per 201 (user + system, /proc). PERF=1 also records a call graph of the
# server during the run into $W/perf.data (perf report -i $W/perf.data --children).
#
# Usage: V=20000 C=16 S=10 W=/tmp/rb api/benches/random_vows.sh
# Needs: cargo build --release --bin conduct -p conduct-api --example prefill_log; wrk; curl
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-target/release/conduct}; V=${V:-2000}; C=${C:-16}; S=${S:-8}; W=${W:-/tmp/rb}
pkill -f "conduct serve --config $W/" || true
rm -rf "$W"; mkdir -p "$W"
target/release/examples/prefill_log --data "$W/data" --site "$W/site" --origin bench.invalid/log \
  --vows "$V" --entries-per-vow 9 --ids "$W/ids" >/dev/null 2>&1
cat > "$W/conduct.toml" <<'T'
public_url = "http://bench.invalid"
demo_daily_cap = 0
report_demo_daily_cap = 0
vow_daily_cap = 0
max_connections_per_ip = 0
T
"$BIN" render --config "$W/conduct.toml" --data "$W/data" --site "$W/site" > /dev/null 2>&1
"$BIN" serve --config "$W/conduct.toml" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
  --data "$W/data" --site "$W/site" > "$W/out" 2> "$W/err" &
srv=$!
trap 'kill $srv 2>/dev/null || true' EXIT
until grep -q "metrics on" "$W/out"; do sleep 0.1; done
URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$W/out")
MURL=$(sed -n 's/.*metrics on \(http:[^ ]*\).*/\1/p' "$W/out")
until curl -s "$URL/health" | python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)['site']['state'] == 'ok' else 1)" 2>/dev/null; do sleep 0.2; done
# shellcheck disable=SC1090
source <(sed -n '/^lua()/,/^}/p' api/benches/report_in.sh)
python3 api/benches/body.py @@ID@@ > "$W/tmpl.json"
lua "$W/tmpl.json" "$W/ids" 201 > "$W/random.lua"
wrk -t2 -c"$C" -d2s -s "$W/random.lua" "$URL/vow/report/demo" >/dev/null
curl -s "$MURL" > "$W/m0"
if [ -n "${PERF:-}" ]; then
  perf record -F 499 -g --call-graph dwarf,16384 -p $srv -o "$W/perf.data" -- sleep "$S" >/dev/null 2>&1 &
fi
cpu0=$(awk '{print $14+$15}' /proc/$srv/stat)
wrk -t2 -c"$C" -d"${S}s" --latency -s "$W/random.lua" "$URL/vow/report/demo" > "$W/wrk.txt"
wait %2 2>/dev/null || true
cpu1=$(awk '{print $14+$15}' /proc/$srv/stat)
curl -s "$MURL" > "$W/m1"
python3 api/benches/metrics_delta.py "$W/m0" "$W/m1"
r=$(grep RESULT "$W/wrk.txt"); echo "$r"
ok=$(echo "$r" | sed 's/.* ok=\([0-9]*\).*/\1/')
python3 -c "print('report-ins/s %.0f, server CPU %.2f ms per 201' % ($ok/$S, ($cpu1-$cpu0)*10/max($ok, 1)))"
