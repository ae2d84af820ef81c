#!/usr/bin/env bash
# The manifest at scale (library/MIRRORS.md, "The manifest"): VOWS vows of ENTRIES report-ins
# each, prefilled through the real ledger jobs, then
#
#  1. a full render (`conduct render`): time, peak RSS, files, the manifest's bins and bytes;
#  2. `conduct serve` over that tree (its manifest taken back from disk): time to listening;
#  3. ONE report-ins to random vows, each alone in its signing round (1.5 s apart): manifest
#     bytes and bins each round re-signed, and its signing time, from the signer's debug log;
#  4. a burst: BURST seconds of report-ins to random vows at CONNS connections: manifest bytes
#     re-signed per report-in (rounds are a second apart, so a burst shares ancestors);
#  5. RSS of the server after the burst; once the manifest has caught up, `conduct verify-site`
#     over the tree (time, peak RSS).
#
# Usage: api/benches/manifest.sh        Env: VOWS=20000 ENTRIES=3 ONE=30 BURST=20 CONNS=16 KEEP=1
set -euo pipefail
cd "$(dirname "$0")/../.."
vows=${VOWS:-20000}
entries=${ENTRIES:-3}
one=${ONE:-30}
burst=${BURST:-20}
conns=${CONNS:-16}
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
cargo build --release --quiet --bin conduct -p conduct-api --example prefill_log
work=$(mktemp -d /tmp/manifest_bench.XXXXXX)
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
secs() { python3 -c "import time; print('%.1f' % (time.time() - $1))"; }

echo "== prefill: $vows vows x $entries entries ($work)"
target/release/examples/prefill_log --data "$work/data" --site "$work/site" \
  --origin bench.invalid/log --vows "$vows" --entries-per-vow "$entries" --ids "$work/ids" \
  2> "$work/prefill.err" | tail -1
cat > "$work/conduct.toml" <<'EOF'
public_url = "http://bench.invalid"
report_demo_daily_cap = 0
max_connections_per_ip = 0
EOF

echo "== 1. full render"
t0=$(date +%s.%N)
/usr/bin/time -f "%M" -o "$work/render.rss" target/release/conduct render \
  --config "$work/conduct.toml" --data "$work/data" --site "$work/site" | tail -1
echo "   wall $(secs "$t0") s, peak RSS $(( $(cat "$work/render.rss") / 1024 )) MB"
python3 - "$work/site" <<'PY'
import json, os, sys
site = sys.argv[1]
files = sum(len([f for f in fs if os.path.join(d, f) != os.path.join(site, "manifest.json")])
            for d, _, fs in os.walk(site) if not d.startswith(os.path.join(site, "log"))
            and not d.startswith(os.path.join(site, "manifest")))
bins = [os.path.join(site, "manifest", f) for f in os.listdir(os.path.join(site, "manifest"))]
sizes = [os.path.getsize(b) for b in bins]
leaves = [s for b, s in zip(bins, sizes) if open(b, "rb").read(9) == b'{"files":']
depth = max(len(os.path.basename(b)) - 5 for b in bins)
root = os.path.getsize(os.path.join(site, "manifest.json"))
print(f"   {files} files outside log/ (manifest aside); manifest: root {root} B + {len(bins)} bins "
      f"({len(leaves)} leaves, depth {depth}), {(root + sum(sizes)) / 1e6:.1f} MB in all; "
      f"leaf mean {sum(leaves) / max(1, len(leaves)) / 1024:.1f} KiB, max {max(leaves) / 1024:.1f} KiB")
PY

echo "== 2. restart: serve over the rendered tree"
sync
t0=$(date +%s.%N)
RUST_LOG=info,conduct_renderer::manifest=debug target/release/conduct serve \
  --config "$work/conduct.toml" --listen 127.0.0.1:0 --data "$work/data" --site "$work/site" \
  > "$work/serve.out" 2> "$work/serve.err" &
server=$!
until grep -q 'listening on http://[^ ]* ' "$work/serve.out"; do
  kill -0 "$server" 2>/dev/null || { cat "$work/serve.err"; exit 1; }
  sleep 0.05
done
echo "   listening after $(secs "$t0") s"
url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/serve.out")
# Let the restart's catch-up (every vow re-rendered, nothing changed) finish first.
t1=$(date +%s.%N)
until curl -s "$url/health" | python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)['site']['state'] == 'ok' else 1)" 2>/dev/null; do sleep 1; done
echo "   caught up (every vow re-rendered, nothing changed) $(secs "$t1") s later"
sleep 2
python3 api/benches/body.py @@ID@@ > "$work/tmpl.json"

# Rounds the signer logged since line $1 of its log: count, bins, bytes, micros (sums, max).
rounds() {
  tail -n +"$1" "$work/serve.err" | python3 -c '
import re, sys
r = [tuple(int(x) for x in m.groups()) for m in
     (re.search(r"bins=(\d+) bytes=(\d+) leaves=(\d+) micros=(\d+)", l) for l in sys.stdin) if m]
print(len(r), sum(x[0] for x in r), sum(x[1] for x in r), sum(x[3] for x in r),
      max([x[1] for x in r] or [0]), max([x[3] for x in r] or [0]))'
}

echo "== 3. $one report-ins, one a round"
mark=$(( $(wc -l < "$work/serve.err") + 1 ))
python3 - "$url" "$work/ids" "$one" "$work/tmpl.json" <<'PY'
import http.client, random, sys, time, urllib.parse
url, idsf, n, tmpl = sys.argv[1], sys.argv[2], int(sys.argv[3]), open(sys.argv[4]).read()
u = urllib.parse.urlparse(url)
ids = [l.strip() for l in open(idsf) if l.strip()]
c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
for _ in range(n):
    c.request("POST", "/vow/report/demo", tmpl.replace("@@ID@@", random.choice(ids)).encode(),
              {"content-type": "application/json"})
    r = c.getresponse(); r.read()
    assert r.status == 201, r.status
    time.sleep(1.5)
PY
read -r n bins bytes micros maxbytes maxmicros < <(rounds "$mark")
echo "   $n rounds: per round $(( bins / n )) bins, $(( bytes / n )) bytes (max $maxbytes), signed and written in $(( micros / n )) us (max $maxmicros us)"

echo "== 4. burst: ${burst} s at $conns connections, random vows"
mark=$(( $(wc -l < "$work/serve.err") + 1 ))
before=$(sed -n 2p "$work/site/log/checkpoint")
python3 - "$work/tmpl.json" "$work/ids" > "$work/random.lua" <<'PY'
import json, sys
pre, post = open(sys.argv[1]).read().strip().split('"@@ID@@"')
print('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"')
print("local pre = " + json.dumps(pre) + "\nlocal post = " + json.dumps(post) + "\nlocal ids = {}")
print("for line in io.lines(" + json.dumps(sys.argv[2]) + ") do if #line > 0 then ids[#ids + 1] = line end end")
print("function init(args) math.randomseed(os.time() + #tostring({})) end")
print("function request() return wrk.format(nil, \"/vow/report/demo\", nil, pre .. '\"' .. ids[math.random(#ids)] .. '\"' .. post) end")
PY
wrk -t2 -c"$conns" -d"${burst}s" --timeout 10s -s "$work/random.lua" "$url" | grep -E "Requests/sec|Non-2xx" || true
sleep 3
after=$(sed -n 2p "$work/site/log/checkpoint")
reports=$(( after - before ))
read -r n bins bytes micros maxbytes maxmicros < <(rounds "$mark")
echo "   $reports report-ins in $n rounds: $(( bytes / reports )) manifest bytes per report-in, $(( bytes / n )) per round (max $maxbytes), $(( bins / n )) bins a round, signing $(( micros / n )) us a round (max $maxmicros us)"
echo "   server RSS after the burst: $(awk '/VmRSS/ {print int($2/1024) " MB"}' /proc/$server/status)"
# The signer lags a burst by a round or two: wait until no round was signed for 5 s.
while true; do
  n=$(wc -l < "$work/serve.err"); sleep 5
  [ "$n" = "$(wc -l < "$work/serve.err")" ] && break
done

echo "== 5. verify-site over the tree (the server idle)"
vkey=$(curl -s "$url/pubkey" | python3 -c 'import json,sys; print(json.load(sys.stdin)["vkey"])')
t0=$(date +%s.%N)
/usr/bin/time -f "%M" -o "$work/verify.rss" target/release/conduct verify-site "$work/site" \
  --pubkey "$vkey" --settle 10 2>&1 | tail -2 | cut -c1-400
echo "   wall $(secs "$t0") s, peak RSS $(( $(cat "$work/verify.rss") / 1024 )) MB"
kill "$server"; wait "$server" 2>/dev/null || true; server=""
echo "   disk: data $(du -sh "$work/data" | cut -f1), site $(du -sh "$work/site" | cut -f1), manifest $(du -sh "$work/site/manifest" | cut -f1)"
