#!/usr/bin/env bash
# Rendering the site at scale: VOWS vows of ENTRIES report-ins each (default 10,000 x 99, so
# 1,000,000 log records), prefilled through the real ledger jobs.
#
#  1. full render: `conduct render --as-of T` into an empty directory (every vow read,
#     verified and rendered: JSON, HTML, chain pages, feeds, index pages, sitemap, manifest);
#  2. the same render again over that tree (nothing changes, nothing is written);
#  3. a render one day later (only the pages that carry the clock are rewritten);
#  4. incremental: `conduct serve` on that state, N sequential free report-ins to random vows,
#     each answered after its entry committed and its vow's files were re-rendered; the
#     render's share is read from the response's Server-Timing header.
# Floor, in the same run: copying the rendered tree (`cp -a`), i.e. writing the same bytes.
#
# Usage: api/benches/render.sh            Env: VOWS=10000 ENTRIES=99 N=300 KEEP=1
set -euo pipefail
cd "$(dirname "$0")/../.."
vows=${VOWS:-10000}
entries=${ENTRIES:-99}
n=${N:-300}
cargo build --release --quiet --bin conduct -p conduct-api --example prefill_log
work=$(mktemp -d /tmp/render_bench.XXXXXX)
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
secs() { python3 -c "import time; print('%.1f' % (time.time() - $1))"; }

echo "== prefill: $vows vows x $entries entries"
target/release/examples/prefill_log --data "$work/data" --site "$work/site" \
  --origin bench.invalid/log --vows "$vows" --entries-per-vow "$entries" --ids "$work/ids" \
  2> "$work/prefill.err" | tail -1
cat > "$work/conduct.toml" <<'EOF'
public_url = "http://bench.invalid"
report_demo_daily_cap = 0
EOF
render() { # $1 site dir, $2 as-of
  target/release/conduct render --config "$work/conduct.toml" --data "$work/data" \
    --site "$1" --as-of "$2"
}
sync
t0=$(date +%s.%N); full=$(render "$work/site" 2026-11-21T12:00:00Z); full_s=$(secs "$t0")
sync
echo "   full render: $full (wall $full_s s)"
t0=$(date +%s.%N); same=$(render "$work/site" 2026-11-21T12:00:00Z); same_s=$(secs "$t0")
echo "   same state, same instant: $same (wall $same_s s)"
t0=$(date +%s.%N); later=$(render "$work/site" 2026-11-22T12:00:00Z); later_s=$(secs "$t0")
echo "   one day later: $later (wall $later_s s)"
sync
t0=$(date +%s.%N); cp -a "$work/site" "$work/copy"; sync; floor_s=$(secs "$t0")
size=$(du -sh --exclude=log "$work/site" | cut -f1)
files=$(find "$work/site" -type f -not -path '*/log/*' | wc -l)
echo "   floor: cp -a of the tree ($files files outside log/, $size): $floor_s s"
rm -rf "$work/copy"

echo "== incremental: $n sequential report-ins on random vows"
target/release/conduct serve --config "$work/conduct.toml" --listen 127.0.0.1:0 \
  --data "$work/data" --site "$work/site" > "$work/serve.out" 2> "$work/serve.err" &
server=$!
until grep -q 'listening on http://[^ ]* ' "$work/serve.out"; do
  kill -0 "$server" 2>/dev/null || { cat "$work/serve.err"; exit 1; }
  sleep 0.2
done
sync
url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/serve.out")
python3 api/benches/body.py @@ID@@ > "$work/tmpl.json"
python3 - "$url" "$work/ids" "$n" "$work/tmpl.json" <<'PY'
import http.client, json, random, re, sys, urllib.parse
url, idsf, n, tmpl = sys.argv[1], sys.argv[2], int(sys.argv[3]), open(sys.argv[4]).read()
u = urllib.parse.urlparse(url)
ids = [l.strip() for l in open(idsf) if l.strip()]
c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
timing = {"commit": [], "render": [], "total": []}
for k in range(n):
    body = tmpl.replace("@@ID@@", random.choice(ids)).encode()
    c.request("POST", "/vow/report/demo", body, {"content-type": "application/json"})
    r = c.getresponse(); r.read()
    assert r.status == 201, r.status
    for name, dur in re.findall(r"(\w+);dur=([\d.]+)", r.getheader("server-timing") or ""):
        timing[name].append(float(dur))
def pct(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(len(xs) * p))]
for name, xs in timing.items():
    print(f"   {name}: p50 {pct(xs, .5):.2f} ms, p99 {pct(xs, .99):.2f} ms, max {max(xs):.2f} ms (n={len(xs)})")
PY
