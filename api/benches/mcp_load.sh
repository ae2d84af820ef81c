#!/usr/bin/env bash
# Loopback load test of /mcp: `tools/call list_vows` over MCP (POST /mcp, one JSON-RPC message
# per request, the headers an MCP client sends after initialize) against `GET /vows` over plain
# HTTP, on the same release `conduct serve`, with the same load tool (wrk) and connection count,
# in the same run (each measured twice, alternating, after a warm-up of both). MCP `ping` is
# measured too: the transport (route table, body, rmcp) without a tool.
# Usage: api/benches/mcp_load.sh [seconds] [connections] [vows]
# BIN=path/to/conduct runs that binary instead of building this tree's (to compare builds).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-10}
conns=${2:-50}
vows=${3:-20}
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
bin=${BIN:-}
if [ -z "$bin" ]; then cargo build --release --quiet --bin conduct; bin=target/release/conduct; fi
work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT

printf 'vow_daily_cap = 0\n' > "$work/conduct.toml"
"$bin" serve --listen 127.0.0.1:0 --data "$work/data" --site "$work/site" \
  --config "$work/conduct.toml" > "$work/conduct.out" 2>/dev/null &
server=$!
for _ in $(seq 100); do grep -q listening "$work/conduct.out" && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/conduct.out")

# The index the two answers carry: $vows sandbox vows.
for i in $(seq "$vows"); do
  curl -sf -o /dev/null -H 'content-type: application/json' "$url/vow" \
    -d "{\"text\":\"Answer billing questions, vow $i.\",\"agent\":\"bench-$i\",\"cadence_hours\":24}"
done

# Both scripts read every answer (the same Lua cost on both sides) and count failures per
# thread: a non-200, a body that is not the index, and for MCP a JSON-RPC error or an isError
# result.
count='
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0 end
function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + t:get("bad") end
  io.write("failed answers: ", total, "\n")
end'
cat > "$work/mcp.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_vows","arguments":{}}}'
$count
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"structuredContent"', 1, true)
     or string.find(body, '"isError":true', 1, true) then bad = bad + 1 end
end
LUA
cat > "$work/ping.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
$count
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"result":{}', 1, true) then bad = bad + 1 end
end
LUA
cat > "$work/http.lua" <<LUA
wrk.method = "GET"
wrk.headers["Accept"] = "application/json"
$count
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"conduct.vows/v', 1, true) then bad = bad + 1 end
end
LUA

mcp_bytes=$(curl -s -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
  -H 'mcp-protocol-version: 2025-11-25' "$url/mcp" \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_vows","arguments":{}}}' | wc -c)
http_bytes=$(curl -s -H 'accept: application/json' "$url/vows" | wc -c)

run() { wrk -t2 -c"$conns" -d"${secs}s" --latency -s "$work/$1.lua" "$2"; }
echo "== warm-up"
wrk -t2 -c"$conns" -d2s -s "$work/http.lua" "$url/vows" >/dev/null
wrk -t2 -c"$conns" -d2s -s "$work/mcp.lua" "$url/mcp" >/dev/null
for round in 1 2; do
  echo "== round $round: GET /vows"; run http "$url/vows" | tee "$work/http$round.txt"
  echo "== round $round: tools/call list_vows"; run mcp "$url/mcp" | tee "$work/mcp$round.txt"
  echo "== round $round: ping"; run ping "$url/mcp" | tee "$work/ping$round.txt"
done
rps() { awk '/^Requests\/sec/ {print $2}' "$1"; }
p99() { awk '$1 == "99%" {print $2}' "$1"; }
p50() { awk '$1 == "50%" {print $2}' "$1"; }
errs() { awk '/Non-2xx/ {n=$NF} /Socket errors/ {e=$0} /failed answers/ {f=$NF} END {print (n?n:0) " / " (f?f:0) (e?" / "e:"")}' "$1"; }
echo
echo "$vows vows; answer bytes: GET /vows $http_bytes, tools/call list_vows $mcp_bytes"
echo "| round | request | requests/s | p50 | p99 | non-2xx / failed answers |"
echo "|---|---|---:|---:|---:|---:|"
for round in 1 2; do
  echo "| $round | GET /vows | $(rps "$work/http$round.txt") | $(p50 "$work/http$round.txt") | $(p99 "$work/http$round.txt") | $(errs "$work/http$round.txt") |"
  echo "| $round | MCP tools/call list_vows | $(rps "$work/mcp$round.txt") | $(p50 "$work/mcp$round.txt") | $(p99 "$work/mcp$round.txt") | $(errs "$work/mcp$round.txt") |"
  echo "| $round | MCP ping (the transport alone) | $(rps "$work/ping$round.txt") | $(p50 "$work/ping$round.txt") | $(p99 "$work/ping$round.txt") | $(errs "$work/ping$round.txt") |"
done
