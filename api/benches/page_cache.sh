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
# report_in.sh left its config and its random-vow wrk script (201s, 503s counted apart) there.
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
io() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/io"; }
dstat() { awk -v d="$disk" -v f="$1" '$3 == d {print $f}' /proc/diskstats; }
field() { sed -n "s/.*RESULT.* $1=\([^ ]*\).*/\1/p" "$2"; }

if [ -n "${RERENDER:-}" ]; then
  start=$(date +%s)
  "$bin" serve --config "$work/conduct.toml" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --data "$work/data" --site "$work/site" > "$work/page_cache.out" 2> "$work/page_cache.err" &
  server=$!
  until grep -q 'listening on http://[^ ]* ' "$work/page_cache.out"; do kill -0 "$server" || exit 1; sleep 0.05; done
  url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/page_cache.out")
  until curl -s "$url/health" | grep -q '"site":{"state":"ok"}'; do sleep 1; done
  echo "re-render caught up in $(( $(date +%s) - start )) s"
  kill -TERM "$server"; wait "$server" 2>/dev/null || true; server=""
fi

echo "| limit (MiB) | report-ins/s | p99 ms | 503s | MiB read / report-in KB | disk reads / report-in | ms reading | CPU of 2 cores | vmstat us/sy/id/wa |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for lim in "${limits[@]}"; do
  set_limit "$lim"
  sync; echo 3 > /proc/sys/vm/drop_caches
  sh -c "echo \$\$ > $cg/cgroup.procs; exec $bin serve --config $work/conduct.toml --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --data $work/data --site $work/site" \
    > "$work/page_cache.out" 2> "$work/page_cache.err" &
  server=$!
  until grep -q 'listening on http://[^ ]* ' "$work/page_cache.out"; do kill -0 "$server" || exit 1; sleep 0.05; done
  url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/page_cache.out")
  until curl -s "$url/health" | grep -q '"site":{"state":"ok"}'; do sleep 0.2; done
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
  kill "$server"; wait "$server" 2>/dev/null || true; server=""
done
