#!/usr/bin/env bash
# Restart timings over a prefilled, rendered tree (report_in.sh WORK=DIR ... KEEP=1): each start
# on a cold cache (caches dropped; needs root), timed to the listening line and to `/health`
# saying `ok` for the site, then one report-in, then a stop: after a clean stop (SIGTERM) the
# next start finds `<data>/site-clean` and skips its walk for temporaries; after `kill -9` it
# walks the tree.
#
# Usage: api/benches/clean_stop.sh DIR [STOP...]   (STOP: term or kill; default: term term kill term)
# Env:   BIN=path/to/conduct (default target/release/conduct: the binary that rendered DIR, or
#        the first start re-renders every vow).
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(realpath "$1"); shift
stops=("$@"); [ ${#stops[@]} -gt 0 ] || stops=(term term kill term)
bin=$(realpath "${BIN:-target/release/conduct}")
[ -s "$work/ids" ] && [ -s "$work/conduct.toml" ] || { echo "$work: no prefilled tree (report_in.sh KEEP=1)"; exit 1; }
python3 api/benches/body.py "$(head -1 "$work/ids")" > "$work/restart.json"
secs() { python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$@"; }
after="the tree as it is"
echo "| start after | mark present | listening s | /health ok s |"
echo "|---|---|---:|---:|"
for stop in "${stops[@]}"; do
  sync; echo 3 > /proc/sys/vm/drop_caches
  mark=$([ -s "$work/data/site-clean" ] && echo yes || echo no)
  t0=$(date +%s.%N)
  "$bin" serve --config "$work/conduct.toml" --listen 127.0.0.1:0 --data "$work/data" \
    --site "$work/site" > "$work/restart.out" 2> "$work/restart.err" &
  pid=$!
  until grep -q 'listening on http://[^ ]* ' "$work/restart.out"; do kill -0 "$pid" || exit 1; sleep 0.05; done
  t1=$(date +%s.%N)
  url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/restart.out")
  until curl -s "$url/health" | grep -q '"site":{"state":"ok"}'; do sleep 0.1; done
  t2=$(date +%s.%N)
  echo "| $after | $mark | $(secs "$t0" "$t1") | $(secs "$t0" "$t2") |"
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'content-type: application/json' \
    --data @"$work/restart.json" "$url/vow/report/demo")
  [ "$code" = 201 ] || { echo "a report-in answered $code"; kill "$pid"; exit 1; }
  if [ "$stop" = kill ]; then kill -9 "$pid"; after="kill -9"; else kill "$pid"; after="a clean stop"; fi
  wait "$pid" 2>/dev/null || true
done
