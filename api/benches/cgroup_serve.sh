# Sourced by page_cache.sh and block_trace.sh: a tree made by report_in.sh (WORK=DIR ... KEEP=1)
# served by $bin in a memory cgroup. Needs root and cgroup v1 or v2 memory control.
#   check_work DIR     exit unless report_in.sh left its config, ids and random-vow wrk script
#   set_limit MIB      the cgroup's limit (0: none); the EXIT trap stops the server and lifts it
#   serve NAME [cg]    start `conduct serve` over $work (in the cgroup with `cg`), output in
#                      $work/NAME.out and .err; sets $server and $url once /health says the site
#                      is ok
#   stop               SIGTERM the server and wait for it (a clean stop)

check_work() {
  # report_in.sh left its config and its random-vow wrk script (201s, 503s counted apart) there.
  for f in ids conduct.toml random.lua; do
    [ -s "$1/$f" ] || { echo "$1/$f missing: prefill and run report_in.sh with WORK=$1 KEEP=1"; exit 1; }
  done
}

if [ -d /sys/fs/cgroup/memory ]; then
  cg=/sys/fs/cgroup/memory/conduct-page-cache; mkdir -p "$cg"
  set_limit() { if [ "$1" = 0 ]; then echo -1; else echo $(( $1 << 20 )); fi > "$cg/memory.limit_in_bytes"; }
else
  cg=/sys/fs/cgroup/conduct-page-cache; mkdir -p "$cg"
  set_limit() { if [ "$1" = 0 ]; then echo max; else echo $(( $1 << 20 )); fi > "$cg/memory.max"; }
fi

server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; set_limit 0' EXIT

serve() {
  local into=""
  [ "${2:-}" = cg ] && into="echo \$\$ > $cg/cgroup.procs; "
  sh -c "${into}exec $bin serve --config $work/conduct.toml --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --data $work/data --site $work/site" \
    > "$work/$1.out" 2> "$work/$1.err" &
  server=$!
  until grep -q 'listening on http://[^ ]* ' "$work/$1.out"; do kill -0 "$server" || exit 1; sleep 0.05; done
  url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/$1.out")
  until curl -s "$url/health" | grep -q '"site":{"state":"ok"}'; do sleep 0.2; done
}

stop() {
  kill -TERM "$server"; wait "$server" 2>/dev/null || true; server=""
}
