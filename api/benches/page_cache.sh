#!/usr/bin/env bash
# Random-vow report-ins against the memory the page cache is allowed: the service runs in a
# memory cgroup whose limit bounds its resident memory and the page cache it fills (both are
# charged to it), after the caches are dropped, over a tree prefilled and rendered by
# report_in.sh (WORK=DIR ... KEEP=1). For each limit: a 20 s warm-up, then a measured 10 s run
# at 16 connections with the disk reads and writes of the process (/proc/PID/io), the reads
# the disk completed (/proc/diskstats) and the CPU (vmstat) beside it. Needs root and cgroup v1
# or v2 memory control.
#
# Usage: api/benches/page_cache.sh DIR [LIMIT...]     (LIMIT in MiB, 0: none; default 0 2048 1024 512)
# Env:   BIN=path/to/conduct (default target/release/conduct: use the binary that rendered
#        DIR, or the restart re-renders every vow), DISK=vda (the block device under DIR),
#        RERENDER=1 (first start BIN with no limit, wait for /health ok, print how long its
#        re-render of DIR took and stop it with SIGTERM: how BENCHMARKS.md section 18 compares
#        binaries, each measured right after its own re-render).
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(realpath "$1"); shift
limits=("$@"); [ ${#limits[@]} -gt 0 ] || limits=(0 2048 1024 512)
bin=$(realpath "${BIN:-target/release/conduct}")
disk=${DISK:-vda}
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
. api/benches/cgroup_serve.sh
check_work "$work"
io() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/io"; }
dstat() { awk -v d="$disk" -v f="$1" '$3 == d {print $f}' /proc/diskstats; }
field() { sed -n "s/.*RESULT.* $1=\([^ ]*\).*/\1/p" "$2"; }

if [ -n "${RERENDER:-}" ]; then
  start=$(date +%s)
  serve page_cache
  echo "re-render caught up in $(( $(date +%s) - start )) s"
  stop
fi

echo "| limit (MiB) | report-ins/s | p99 ms | 503s | MiB read / report-in KB | disk reads / report-in | ms reading | CPU of 2 cores | vmstat us/sy/id/wa |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for lim in "${limits[@]}"; do
  set_limit "$lim"
  sync; echo 3 > /proc/sys/vm/drop_caches
  serve page_cache cg
  wrk -t2 -c16 -d20s --timeout 10s -s "$work/random.lua" "$url/vow/report/demo" > /dev/null
  r0=$(io "$server" read_bytes); d0=$(dstat 4); t0=$(dstat 7)
  c0=$(awk '{print $14 + $15}' "/proc/$server/stat")
  vmstat 1 11 > "$work/page_cache.vmstat" & vm=$!
  wrk -t2 -c16 -d10s --timeout 10s -s "$work/random.lua" "$url/vow/report/demo" > "$work/page_cache.run"
  r1=$(io "$server" read_bytes); d1=$(dstat 4); t1=$(dstat 7)
  c1=$(awk '{print $14 + $15}' "/proc/$server/stat")
  wait "$vm"
  f=$work/page_cache.run; ok=$(field ok "$f"); secs=$(field secs "$f")
  python3 - "$lim" "$ok" "$secs" "$(field p99 "$f")" "$(field pushed "$f")" $((r1 - r0)) $((d1 - d0)) $((t1 - t0)) $((c1 - c0)) "$(getconf CLK_TCK)" "$work/page_cache.vmstat" <<'PY'
import sys
lim, ok, secs, p99, pushed, rb, dr, ms, ticks, hz, vm = sys.argv[1:]
ok, secs, rb, dr, ticks = int(ok), float(secs), int(rb), int(dr), int(ticks)
rows = [l.split() for l in open(vm).read().splitlines()[3:]]
avg = lambda i: round(sum(int(r[i]) for r in rows) / max(len(rows), 1))
print(f"| {lim or 'none'} | {ok / secs:.0f} | {p99} | {pushed} | {rb / 2**20:.0f} / {rb / 1024 / max(ok, 1):.0f} | "
      f"{dr / max(ok, 1):.1f} | {ms} | {ticks / int(hz) / secs / 2:.0%} | {avg(12)}/{avg(13)}/{avg(14)}/{avg(15)} |")
PY
  stop
done
