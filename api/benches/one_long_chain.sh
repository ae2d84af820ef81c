#!/usr/bin/env bash
# One vow with N entries (prefill_log, then `conduct render`): the chain head's size, the HTML
# twin's, the number of pages, the vow's manifest leaf (both re-signed at each report-in), and a
# `verify-site` over the tree (every page walked through the head). Then the first report-in
# after a restart, answered once its pages are written (`Prefer: wait=60`): from the vow's
# resume point, then with the resume points deleted (the whole chain read), each twice.
# Then, for report-ins into that vow: PREFILLED=$W api/benches/report_in.sh <N+1>.
#
# Usage: N=50000 W=/tmp/rc api/benches/one_long_chain.sh
# Needs: cargo build --release --bin conduct -p conduct-api --example prefill_log
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-target/release/conduct}; N=${N:-50000}; W=${W:-/tmp/rc}
rm -rf "$W"; mkdir -p "$W"
target/release/examples/prefill_log --data "$W/data" --site "$W/site" --origin bench.invalid/log \
  --vows 1 --entries-per-vow "$N" --ids "$W/ids" >/dev/null 2>&1
cat > "$W/conduct.toml" <<'T'
public_url = "http://bench.invalid"
demo_daily_cap = 0
report_demo_daily_cap = 0
vow_daily_cap = 0
max_connections_per_ip = 0
T
/usr/bin/time -f "render: %e s, peak %M KB" "$BIN" render --config "$W/conduct.toml" --data "$W/data" --site "$W/site" > /dev/null
id=$(head -1 "$W/ids")
echo "chain.json: $(stat -c %s "$W/site/vow/$id/chain.json") B; chain.html: $(stat -c %s "$W/site/vow/$id/chain.html") B; pages: $(ls "$W/site/vow/$id/chain" | wc -l)"
leaf=$(grep -l "vow/$id.json" "$W"/site/manifest/*.json | head -1)
echo "the vow's manifest leaf $leaf: $(stat -c %s "$leaf") B"
VKEY=$("$BIN" pubkey --data "$W/data" --public-url http://bench.invalid | python3 -c 'import json,sys; print(json.load(sys.stdin)["vkey"])')
/usr/bin/time -f "verify-site: %e s, peak %M KB" "$BIN" verify-site "$W/site" --pubkey "$VKEY" 2>&1 | tail -3

# The first report-in after a restart, from the resume point and without one.
python3 api/benches/body.py "$id" > "$W/body.json"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
first_after_restart() {
  "$BIN" serve --config "$W/conduct.toml" --data "$W/data" --site "$W/site" --listen "127.0.0.1:$port" > "$W/serve.log" 2>&1 &
  local pid=$!
  until curl -sf -o /dev/null "127.0.0.1:$port/health"; do kill -0 $pid || exit 1; sleep 0.1; done
  curl -s -o /dev/null -w "$1: %{http_code} in %{time_total} s\n" -H 'Prefer: wait=60' \
    -H 'content-type: application/json' --data-binary @"$W/body.json" "127.0.0.1:$port/vow/report/demo"
  kill $pid; wait $pid || true
}
for run in 1 2; do first_after_restart "first report-in after a restart, from the resume point ($run)"; done
for run in 1 2; do
  rm -f "$W"/data/resume-points.sqlite3*
  first_after_restart "first report-in after a restart, no resume point ($run)"
done
