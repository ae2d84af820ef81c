#!/usr/bin/env bash
# Where a random-vow report-in's disk reads come from, by code path: the service runs in a
# memory cgroup of LIMIT MiB over a tree made by report_in.sh (WORK=DIR ... KEEP=1), caches
# dropped; after a 20 s warm-up of random-vow report-ins at 16 connections, `perf record -e
# block:block_rq_issue --call-graph dwarf` samples the service for 8 s of a 12 s run, and
# block_trace.py sorts the read requests by the frames they were issued under. Needs root,
# perf and cgroup memory control.
#
# Usage: api/benches/block_trace.sh DIR [LIMIT]      (LIMIT in MiB, default 384)
# Env:   BIN=path/to/conduct (default target/release/conduct: the binary that rendered DIR)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
work=$(realpath "$1")
limit=${2:-384}
bin=$(realpath "${BIN:-target/release/conduct}")
command -v perf >/dev/null || { echo "perf missing (Debian: linux-perf)"; exit 1; }
for f in ids conduct.toml random.lua; do
  [ -s "$work/$f" ] || { echo "$work/$f missing: prefill and run report_in.sh with WORK=$work KEEP=1"; exit 1; }
done
if [ -d /sys/fs/cgroup/memory ]; then
  cg=/sys/fs/cgroup/memory/conduct-page-cache; mkdir -p "$cg"
  set_limit() { if [ "$1" = 0 ]; then echo -1; else echo $(( $1 << 20 )); fi > "$cg/memory.limit_in_bytes"; }
else
  cg=/sys/fs/cgroup/conduct-page-cache; mkdir -p "$cg"
  set_limit() { if [ "$1" = 0 ]; then echo max; else echo $(( $1 << 20 )); fi > "$cg/memory.max"; }
fi
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; set_limit 0' EXIT
set_limit "$limit"
sync; echo 3 > /proc/sys/vm/drop_caches
sh -c "echo \$\$ > $cg/cgroup.procs; exec $bin serve --config $work/conduct.toml --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --data $work/data --site $work/site" \
  > "$work/block_trace.out" 2> "$work/block_trace.err" &
server=$!
until grep -q 'listening on http://[^ ]* ' "$work/block_trace.out"; do kill -0 "$server" || exit 1; sleep 0.05; done
url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/block_trace.out")
until curl -s "$url/health" | grep -q '"site":{"state":"ok"}'; do sleep 0.2; done
wrk -t2 -c16 -d20s --timeout 10s -s "$work/random.lua" "$url/vow/report/demo" > /dev/null
wrk -t2 -c16 -d12s --timeout 10s -s "$work/random.lua" "$url/vow/report/demo" > "$work/block_trace.run" &
load=$!
sleep 2
perf record -q -e block:block_rq_issue --call-graph dwarf -p "$server" -o "$work/block_trace.data" -- sleep 8 2> /dev/null
wait "$load"
kill -TERM "$server"; wait "$server" 2>/dev/null || true; server=""
perf script -i "$work/block_trace.data" 2> /dev/null > "$work/block_trace.txt"
ok=$(sed -n 's/.*RESULT.* ok=\([0-9]*\).*/\1/p' "$work/block_trace.run")
secs=$(sed -n 's/.*RESULT.* secs=\([0-9.]*\).*/\1/p' "$work/block_trace.run")
python3 "$root/api/benches/block_trace.py" "$work/block_trace.txt" "$ok" "$secs" 8
rm -f "$work/block_trace.data" "$work/block_trace.txt"
