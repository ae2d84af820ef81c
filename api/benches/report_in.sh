#!/usr/bin/env bash
# Durable report-ins: POST /vow/report/demo (10-turn trace, caps lifted) against a log prefilled
# with N records (N/100 vows, ~100 entries each, interleaved), one vow and random vows, at 16
# and 64 connections, with the POST /demo/profile floor (same trace, nothing written) at the
# same concurrency. Every 201 is a committed (synchronous=FULL), published and re-rendered entry.
#
# Usage: api/benches/report_in.sh [SIZES...]        (default: 1000 100000 1000000)
# Env:   SECS=20 CONNS="16 64" CHECK=2000 (exact-count requests) KEEP=1 (keep the temp dirs)
#        VOWS=V: prefill V vows (default SIZE/100), SIZE/V - 1 entries each
#        RENDER=1: render the whole tree (`conduct render`) before serving, and time it
#        WORK=DIR: prefill into DIR (kept) instead of a temp dir under /tmp
#        TAKE=1: also take sandbox vows (POST /vow, a new agent name each) at each concurrency
#        NODU=1: skip counting the disk bytes (du walks every file: minutes at a million vows)
#        PREFILLED=DIR: use DIR (made by prefill_log with --origin bench.invalid/log and
#        --ids DIR/ids, data in DIR/data, site in DIR/site) instead of prefilling; one size.
# Each random-vow run is followed by the integration report (metrics_delta.py over the
# service's /metrics before and after): entries integrated, commit -> signed snapshot p50/p99,
# group commits and their sizes, and how long the render backlog took to drain after the load.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
secs=${SECS:-20}
conns_list=${CONNS:-16 64}
check=${CHECK:-2000}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 100000 1000000)
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
cargo build --release --quiet --bin conduct -p conduct-api --example prefill_log
results=$(mktemp)
dirs=()
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  if [ -z "${KEEP:-}" ]; then for d in "${dirs[@]}"; do rm -rf "$d"; done; fi
}
trap cleanup EXIT

# The body of a 10-turn report-in (api/benches/body.py); "" for the /demo/profile body.
body() { python3 api/benches/body.py "$1"; }

# A wrk script: POST bodies (vow ids from $2, one a line; "" for the fixed body $1), counts
# statuses exactly and prints one machine-readable RESULT line.
lua() { # $1: fixed body file or "", $2: ids file or "", $3: expected status
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
fixed, ids, want = sys.argv[1], sys.argv[2], sys.argv[3]
out = ['wrk.method = "POST"', 'wrk.headers["Content-Type"] = "application/json"',
       'local want = ' + want, 'local threads = {}',
       'function setup(t) table.insert(threads, t) end',
       'ok = 0; bad = 0; pushed = 0; backoff = false; shown = false',
       # A 503 (integration-behind) is the service pushing back: count it apart and wait
       # 100 ms before this thread's next request, as a client honouring Retry-After would.
       'function delay() if backoff then backoff = false; return 100 end return 0 end']
if ids:
    tmpl = json.loads(open(fixed).read())
    s = json.dumps(tmpl)
    pre, post = s.split('"@@ID@@"')
    out += ['local pre = ' + json.dumps(pre), 'local post = ' + json.dumps(post),
            'local ids = {}',
            'for line in io.lines(' + json.dumps(ids) + ') do if #line > 0 then ids[#ids + 1] = line end end',
            'function init(args) math.randomseed(os.time() + #tostring({})) end',
            'function request() return wrk.format(nil, nil, nil, pre .. \'"\' .. ids[math.random(#ids)] .. \'"\' .. post) end']
else:
    out += ['wrk.body = ' + json.dumps(open(fixed).read())]
out += ['function response(status, headers, body)',
        '  if status == want then ok = ok + 1 elseif status == 503 then pushed = pushed + 1; backoff = true else bad = bad + 1',
        '    if not shown then print("first unexpected: " .. status .. " " .. body); shown = true end end',
        'end',
        'function done(s, lat, req)',
        '  local o, b, p = 0, 0, 0',
        '  for _, t in ipairs(threads) do o = o + t:get("ok"); b = b + t:get("bad"); p = p + t:get("pushed") end',
        '  io.write(string.format("RESULT requests=%d secs=%.3f ok=%d bad=%d pushed=%d sockerr=%d p50=%.2f p99=%.2f max=%.2f\\n",',
        '    s.requests, s.duration / 1e6, o, b, p, s.errors.connect + s.errors.read + s.errors.write + s.errors.timeout,',
        '    lat:percentile(50) / 1000, lat:percentile(99) / 1000, lat.max / 1000))',
        'end']
print("\n".join(out))
PY
}

log_size() { sed -n 2p "$1/site/log/checkpoint"; }
field() { sed -n "s/.*RESULT.* $1=\([^ ]*\).*/\1/p" "$2"; }

# Exact accounting: $3 requests at concurrency $4, one connection per thread, count 201s.
exact() { # $1 url, $2 body file (vow_id "@@ID@@" replaced by a random id from $5), $3 n, $4 conc, $5 ids
  python3 - "$@" <<'PY'
import http.client, json, random, sys, threading, time, urllib.parse
url, bodyf, n, conc, idsf = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
u = urllib.parse.urlparse(url)
tmpl = open(bodyf).read()
ids = [l.strip() for l in open(idsf) if l.strip()]
counts, lock, left, pushed = {}, threading.Lock(), [n], [0]
def worker():
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    while True:
        with lock:
            if left[0] == 0: return
            left[0] -= 1
        b = tmpl.replace("@@ID@@", random.choice(ids)).encode()
        while True:
            try:
                c.request("POST", u.path, b, {"content-type": "application/json"})
                r = c.getresponse(); r.read(); s = r.status
            except Exception as e:
                s = "exc:" + type(e).__name__
                c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
            if s != 503:
                break
            with lock: pushed[0] += 1  # pushed back: nothing recorded, retry after a pause
            time.sleep(0.1)
        with lock: counts[s] = counts.get(s, 0) + 1
ts = [threading.Thread(target=worker) for _ in range(conc)]
[t.start() for t in ts]; [t.join() for t in ts]
print(json.dumps({str(k): v for k, v in counts.items()}))
print("   (%d pushed back and retried)" % pushed[0], file=sys.stderr)
PY
}

for n in "${sizes[@]}"; do
  if [ -n "${PREFILLED:-}" ]; then
    work=$PREFILLED
    echo "== $n records: using prefilled $work (log size $(log_size "$work"))"
    prefill_s="(prefilled)"
    vows=$(grep -c . "$work/ids")
  else
    if [ -n "${WORK:-}" ]; then work=$WORK; mkdir -p "$work"; else
      work=$(mktemp -d /tmp/report_in.XXXXXX)
      dirs+=("$work")
    fi
    vows=${VOWS:-$(( n / 100 > 0 ? n / 100 : 1 ))}
    epv=$(( n / vows - 1 > 0 ? n / vows - 1 : 1 ))
    echo "== $n records: prefilling $vows vows x $epv entries into $work"
    t0=$(date +%s.%N)
    target/release/examples/prefill_log --data "$work/data" --site "$work/site" \
      --origin bench.invalid/log --vows "$vows" --entries-per-vow "$epv" --ids "$work/ids" \
      2> "$work/prefill.err" | tee "$work/prefill.out"
    prefill_s=$(python3 -c "import time; print('%.1f' % (time.time() - $t0))")
  fi
  cat > "$work/conduct.toml" <<'EOF'
public_url = "http://bench.invalid"
demo_daily_cap = 0
report_demo_daily_cap = 0
vow_daily_cap = 0
max_connections_per_ip = 0
EOF
  render_s="-"
  if [ -n "${RENDER:-}" ] && [ -z "${PREFILLED:-}" ]; then
    t0=$(date +%s.%N)
    /usr/bin/time -f "%M" -o "$work/render.rss" target/release/conduct render \
      --config "$work/conduct.toml" --data "$work/data" --site "$work/site" > "$work/render.out"
    render_s="$(python3 -c "import time; print('%.1f' % (time.time() - $t0))") s, peak RSS $(( $(cat "$work/render.rss") / 1024 )) MB"
    echo "   full render: $render_s"
  fi
  records=$(log_size "$work")
  if [ -n "${NODU:-}" ]; then disk="(not counted)"; per_record="(not counted)"; else
    disk=$(du -sh "$work/data" | cut -f1)/$(du -sh "$work/site" | cut -f1)
    per_record=$(python3 -c "print(round($(du -sb "$work/data" | cut -f1) / $records), round($(du -sb "$work/site" | cut -f1) / $records))")
  fi
  sync
  t0=$(date +%s.%N)
  target/release/conduct serve --config "$work/conduct.toml" --listen 127.0.0.1:0 \
    --metrics-listen 127.0.0.1:0 \
    --data "$work/data" --site "$work/site" > "$work/conduct.out" 2> "$work/conduct.err" &
  server=$!
  until grep -q 'listening on http://[^ ]* ' "$work/conduct.out"; do
    kill -0 "$server" 2>/dev/null || { cat "$work/conduct.err"; exit 1; }
    sleep 0.05
  done
  startup_s=$(python3 -c "import time; print('%.1f' % (time.time() - $t0))")
  url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/conduct.out")
  until grep -q "metrics on" "$work/conduct.out"; do sleep 0.05; done
  metrics=$(sed -n 's/.*metrics on \(http:[^ ]*\).*/\1/p' "$work/conduct.out")
  until curl -s "$url/health" | python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)['site']['state'] == 'ok' else 1)" 2>/dev/null; do
    sleep 0.2
  done
  caught_up_s=$(python3 -c "import time; print('%.1f' % (time.time() - $t0))")
  sync # the startup render's writes must not be written back during the measurements
  rss=$(awk '/VmRSS/ {print int($2/1024) " MB"}' /proc/$server/status)
  echo "   $records records in $vows vows: prefill ${prefill_s} s, render $render_s, disk data/site $disk ($per_record bytes a record)"
  echo "   restart: listening ${startup_s} s, site caught up ${caught_up_s} s, RSS $rss"

  one=$(head -1 "$work/ids")
  body "$one" > "$work/one.json"
  body "@@ID@@" > "$work/tmpl.json"
  body "" > "$work/floor.json"
  lua "$work/one.json" "" 201 > "$work/one.lua"
  lua "$work/tmpl.json" "$work/ids" 201 > "$work/random.lua"
  # Taking a vow: the same counting script, the body made per request with a fresh agent name.
  lua "$work/floor.json" "" 201 | python3 -c 'import sys; print(sys.stdin.read().replace("wrk.body = ", "local n = 0\nfunction request() n = n + 1; return wrk.format(nil, nil, nil, string.format([[{\"text\": \"bench vow taken under load\", \"agent\": \"take-%s-%d-%d\", \"cadence_hours\": 24}]], tostring({}):sub(-8), os.time(), n)) end\nlocal unused = ", 1))' > "$work/take.lua"
  lua "$work/floor.json" "" 200 > "$work/floor.lua"
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'content-type: application/json' \
    --data @"$work/one.json" "$url/vow/report/demo")
  [ "$code" = 201 ] || { echo "report-in answered $code"; exit 1; }
  wrk -t2 -c16 -d2s -s "$work/floor.lua" "$url/demo/profile" > /dev/null

  declare -A floor_rps=()
  for c in $conns_list; do
    wrk -t"$(( c < 2 ? 1 : 2 ))" -c"$c" -d"${secs}s" --timeout 10s --latency -s "$work/floor.lua" "$url/demo/profile" > "$work/floor.$c.txt"
    f=$work/floor.$c.txt
    floor_rps[$c]=$(python3 -c "print('%.0f' % ($(field requests "$f") / $(field secs "$f")))")
    echo "| $n | /demo/profile floor | $c | ${floor_rps[$c]} | $(field p50 "$f") | $(field p99 "$f") | $(field max "$f") | $(field bad "$f")+$(field sockerr "$f") | - | - | - | - |" >> "$results"
    scens="one random"; [ -n "${TAKE:-}" ] && scens="$scens take"
    for scen in $scens; do
      before=$(log_size "$work")
      f=$work/$scen.$c.txt
      curl -s "$metrics" > "$work/metrics.before"
      path=/vow/report/demo; [ "$scen" = take ] && path=/vow
      wrk -t"$(( c < 2 ? 1 : 2 ))" -c"$c" -d"${secs}s" --timeout 10s --latency -s "$work/$scen.lua" "$url$path" > "$f"
      t0=$(date +%s.%N)
      # The load stopped: await the render backlog (the pages catching up with the commits).
      until curl -s "$metrics" | awk '/^conduct_render_queue / {q=$2} END {exit !(q == 0)}'; do sleep 0.05; done
      drain=$(python3 -c "import time; print('%.2f' % (time.time() - $t0))")
      curl -s "$metrics" > "$work/metrics.after"
      after=$(log_size "$work")
      grew=$(( after - before ))
      ok=$(field ok "$f")
      rps=$(python3 -c "print('%.0f' % ($ok / $(field secs "$f")))")
      ratio=$(python3 -c "print('%.1f%%' % (100 * $rps / ${floor_rps[$c]}))")
      case $scen in one) label="report-in, one vow";; random) label="report-in, random vows";; take) label="POST /vow (sandbox)";; esac
      echo "| $n | $label | $c | $rps | $(field p50 "$f") | $(field p99 "$f") | $(field max "$f") | $(field bad "$f")+$(field sockerr "$f") | $(field pushed "$f") | $ok | $grew (+$(( grew - ok )) in flight at stop) | $ratio |" >> "$results"
      grep -q "first unexpected" "$f" && grep "first unexpected" "$f" | head -2
      echo "   integration ($label, $c conns): $(python3 api/benches/metrics_delta.py "$work/metrics.before" "$work/metrics.after") backlog_drained_after_load_s=$drain" | tee -a "$results.notes"
    done
  done
  # Exact count: every request answered, 201s == log growth.
  before=$(log_size "$work")
  counts=$(exact "$url/vow/report/demo" "$work/tmpl.json" "$check" 16 "$work/ids")
  sleep 0.5
  after=$(log_size "$work")
  n201=$(python3 -c "import json; print(json.loads('$counts').get('201', 0))")
  verdict=$([ "$n201" = "$(( after - before ))" ] && [ "$n201" = "$check" ] && echo OK || echo MISMATCH)
  echo "   exact check: $check report-ins at 16 threads -> statuses $counts, log grew $(( after - before )): $verdict"
  echo "   exact check ($n): statuses $counts, log grew $(( after - before )): $verdict" >> "$results.notes"
  echo "   one vow $one chain length now $(python3 -c "import json; d=json.load(open('$work/site/vow/$one/chain.json')); print(d.get('length', '?'))" 2>/dev/null || echo '?')"
  echo "   $records records in $vows vows: prefill ${prefill_s} s, render $render_s, data/site on disk $disk ($per_record bytes a record), restart listening ${startup_s} s, caught up ${caught_up_s} s, RSS after load $(awk '/VmRSS/ {print int($2/1024) " MB"}' /proc/$server/status), peak $(awk '/VmHWM/ {print int($2/1024) " MB"}' /proc/$server/status)" >> "$results.notes"
  kill "$server"; wait "$server" 2>/dev/null || true; server=""
  if [ -z "${KEEP:-}" ] && [ -z "${PREFILLED:-}" ] && [ -z "${WORK:-}" ]; then rm -rf "$work"; fi
done

echo
echo "Each run ${secs} s, wrk -t2, 10-turn trace; latency ms; report-ins/s counts 201s only."
echo
echo "| records | endpoint | conns | req/s | p50 ms | p99 ms | max ms | errors + socket errors | 503 pushback | 201s | log growth | of floor |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
cat "$results"
echo
cat "$results.notes"
rm -f "$results" "$results.notes"
