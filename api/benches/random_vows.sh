#!/usr/bin/env bash
# A quick A/B of the random-vow write path: prefill V vows of ten records (prefill_log), render,
# serve with caps lifted, warm 2 s, then wrk random-vow report-ins at C connections for S
# seconds. Prints the integration report (metrics_delta.py), wrk's RESULT line, report-ins/s and
# the server's CPU per 201 (user + system, /proc). PERF=1 also records a call graph of the
# server during the run into $W/perf.data (perf report -i $W/perf.data --children).
# EVERY=1: before the measured run, one report-in into every vow, in order (the server has then
# rendered each vow once, as a long-running one has: its records were verified by this process,
# and its state was kept and, past the cache, evicted), so the run measures the steady state
# rather than first renders.
#
# STATE=postgres://... keeps the state in that (empty) database instead of SQLite in $W/data;
# SITE=s3://bucket/prefix publishes the tree into a bucket (the standard AWS environment)
# instead of $W/site. C may list several connection counts ("16 64"), measured one after the
# other on the same server. RESTART=1 then stops the server (SIGTERM), starts it again and
# prints the time to its first acknowledged report-in.
#
# Usage: V=20000 C=16 S=10 W=/tmp/rb api/benches/random_vows.sh
# Needs: cargo build --release --bin conduct -p conduct-api --example prefill_log; wrk; curl
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-target/release/conduct}; V=${V:-2000}; C=${C:-16}; S=${S:-8}; W=${W:-/tmp/rb}
SITE=${SITE:-$W/site}
state=(); [ -n "${STATE:-}" ] && state=(--state "$STATE")
pkill -f "conduct serve --config $W/" || true
while pgrep -f "conduct serve --config $W/" >/dev/null; do sleep 0.1; done
rm -rf "$W"; mkdir -p "$W"
target/release/examples/prefill_log --data "$W/data" --site "$SITE" "${state[@]}" \
  --origin bench.invalid/log --vows "$V" --entries-per-vow 9 --ids "$W/ids" >/dev/null 2>&1
cat > "$W/conduct.toml" <<'T'
public_url = "http://bench.invalid"
demo_daily_cap = 0
report_demo_daily_cap = 0
vow_daily_cap = 0
max_connections_per_ip = 0
T
"$BIN" render --config "$W/conduct.toml" --data "$W/data" --site "$SITE" "${state[@]}" > /dev/null 2>&1
start_server() {
  "$BIN" serve --config "$W/conduct.toml" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --data "$W/data" --site "$SITE" "${state[@]}" > "$W/out" 2> "$W/err" &
  srv=$!
}
start_server
trap 'kill $srv 2>/dev/null || true; wait $srv 2>/dev/null || true' EXIT
until grep -q "metrics on" "$W/out"; do sleep 0.1; done
URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$W/out")
MURL=$(sed -n 's/.*metrics on \(http:[^ ]*\).*/\1/p' "$W/out")
until curl -s "$URL/health" | python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)['site']['state'] == 'ok' else 1)" 2>/dev/null; do sleep 0.2; done
# shellcheck disable=SC1090
source <(sed -n '/^lua()/,/^}/p' api/benches/report_in.sh)
python3 api/benches/body.py @@ID@@ > "$W/tmpl.json"
lua "$W/tmpl.json" "$W/ids" 201 > "$W/random.lua"
wrk -t2 -c"${C%% *}" -d2s -s "$W/random.lua" "$URL/vow/report/demo" >/dev/null
if [ -n "${EVERY:-}" ]; then
  # C connections share the vows in order, each taken once; pushed back (503), a vow is
  # taken again after 100 ms.
  python3 - "$URL" "$W/tmpl.json" "$W/ids" "${C%% *}" <<'PY'
import http.client, queue, sys, threading, time, urllib.parse
url, tmpl, ids, conns = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3], int(sys.argv[4])
todo = queue.Queue()
for line in open(ids):
    if line.strip():
        todo.put(line.strip())
n = todo.qsize()
counts = {"ok": 0, "pushed": 0, "bad": 0}
lock = threading.Lock()
def work():
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port)
    while True:
        try:
            vow = todo.get_nowait()
        except queue.Empty:
            return
        while True:
            c.request("POST", "/vow/report/demo", tmpl.replace("@@ID@@", vow),
                      {"Content-Type": "application/json"})
            r = c.getresponse(); r.read()
            with lock:
                counts["ok" if r.status == 201 else "pushed" if r.status == 503 else "bad"] += 1
            if r.status != 503:
                break
            time.sleep(0.1)
start = time.time()
threads = [threading.Thread(target=work) for _ in range(conns)]
for t in threads: t.start()
for t in threads: t.join()
print("one report-in into each of %d vows in %.1f s: %s" % (n, time.time() - start, counts))
PY
  until curl -s "$URL/health" | python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)['site']['state'] == 'ok' else 1)" 2>/dev/null; do sleep 0.2; done
fi
for c in $C; do
  curl -s "$MURL" > "$W/m0"
  if [ -n "${PERF:-}" ]; then
    perf record -F 499 -g --call-graph dwarf,16384 -p $srv -o "$W/perf.data" -- sleep "$S" >/dev/null 2>&1 &
  fi
  cpu0=$(awk '{print $14+$15}' /proc/$srv/stat)
  wrk -t2 -c"$c" -d"${S}s" --latency -s "$W/random.lua" "$URL/vow/report/demo" > "$W/wrk.txt"
  wait %2 2>/dev/null || true
  cpu1=$(awk '{print $14+$15}' /proc/$srv/stat)
  curl -s "$MURL" > "$W/m1"
  echo "connections $c"
  python3 api/benches/metrics_delta.py "$W/m0" "$W/m1"
  r=$(grep RESULT "$W/wrk.txt"); echo "$r"
  ok=$(echo "$r" | sed 's/.* ok=\([0-9]*\).*/\1/')
  python3 -c "print('report-ins/s %.0f, server CPU %.2f ms per 201' % ($ok/$S, ($cpu1-$cpu0)*10/max($ok, 1)))"
  # Let the site catch up before the next run.
  until curl -s "$URL/health" | python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)['site']['state'] == 'ok' else 1)" 2>/dev/null; do sleep 0.2; done
done
if [ -n "${RESTART:-}" ]; then
  kill $srv; wait $srv 2>/dev/null || true
  one=$(head -n 1 "$W/ids")
  t0=$(date +%s%N)
  start_server
  until grep -q "listening on" "$W/out"; do sleep 0.01; done
  URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$W/out")
  until [ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
      --data-binary "$(sed "s/@@ID@@/$one/" "$W/tmpl.json")" "$URL/vow/report/demo")" = 201 ]; do
    sleep 0.01
  done
  echo "restart: first acknowledged report-in $(( ($(date +%s%N) - t0) / 1000000 )) ms after the start"
fi
