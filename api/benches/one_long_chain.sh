#!/usr/bin/env bash
# One vow with N entries (prefill_log, then `conduct render`): the chain head's size, the HTML
# twin's, the number of pages, the vow's manifest leaf (both re-signed at each report-in), and a
# `verify-site` over the tree (every page walked through the head). Then, for report-ins into
# that vow: PREFILLED=$W api/benches/report_in.sh <N+1>.
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
