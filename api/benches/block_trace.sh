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
. api/benches/cgroup_serve.sh
check_work "$work"
set_limit "$limit"
sync; echo 3 > /proc/sys/vm/drop_caches
serve block_trace cg
wrk -t2 -c16 -d20s --timeout 10s -s "$work/random.lua" "$url/vow/report/demo" > /dev/null
wrk -t2 -c16 -d12s --timeout 10s -s "$work/random.lua" "$url/vow/report/demo" > "$work/block_trace.run" &
load=$!
sleep 2
perf record -q -e block:block_rq_issue --call-graph dwarf -p "$server" -o "$work/block_trace.data" -- sleep 8 2> /dev/null
wait "$load"
stop
perf script -i "$work/block_trace.data" 2> /dev/null > "$work/block_trace.txt"
ok=$(sed -n 's/.*RESULT.* ok=\([0-9]*\).*/\1/p' "$work/block_trace.run")
secs=$(sed -n 's/.*RESULT.* secs=\([0-9.]*\).*/\1/p' "$work/block_trace.run")
python3 "$root/api/benches/block_trace.py" "$work/block_trace.txt" "$ok" "$secs" 8
rm -f "$work/block_trace.data" "$work/block_trace.txt"
