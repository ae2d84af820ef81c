#!/usr/bin/env bash
# Issue 40's table: random-vow report-ins on sqlite+dir, postgres+dir and postgres+s3, side by
# side in one run (api/benches/random_vows.sh for each: V vows of ten records prefilled and
# rendered, then C connections for S seconds each, then a restart to the first acknowledged
# report-in). PostgreSQL and the s3s-fs bucket server are the test suite's (tests/servers.sh:
# real servers on loopback, stopped when this exits); each backend gets a fresh database or
# bucket prefix. Prints each run's lines under its name, then one table: throughput and its
# ratio to sqlite+dir at the same connection count, request p99, integration p99, tree puts
# per report-in, and the restart.
#
# Usage: V=20000 S=10 C="16 64" W=/tmp/bk api/benches/backends.sh
# (B="postgres+s3" runs only those named; the ratio then takes an earlier sqlite+dir run in W.)
# Needs: cargo build --release --bin conduct -p conduct-api --example prefill_log; wrk; curl
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
V=${V:-20000}; S=${S:-10}; C=${C:-"16 64"}; W=${W:-/tmp/bk}
# shellcheck disable=SC1091
. tests/servers.sh
psql() { "$CONDUCT_TEST_PG_BIN/psql" "$CONDUCT_TEST_POSTGRES" -qX -v ON_ERROR_STOP=1 "$@"; }
database() {
  psql -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1"
  echo "${CONDUCT_TEST_POSTGRES%/*}/$1"
}
export AWS_ENDPOINT_URL=$CONDUCT_TEST_S3_ENDPOINT AWS_REGION=us-east-1 AWS_ALLOW_HTTP=true
export AWS_ACCESS_KEY_ID=$CONDUCT_TEST_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$CONDUCT_TEST_S3_SECRET_KEY
mkdir -p "$W"
run() {
  local name=$1
  shift
  echo "== $name"
  env "$@" V="$V" S="$S" C="$C" W="$W/$name" RESTART=1 api/benches/random_vows.sh | tee "$W/$name.txt"
}
B=${B:-"sqlite+dir postgres+dir postgres+s3"}
for b in $B; do
  case $b in
    sqlite+dir) run sqlite+dir ;;
    postgres+dir) run postgres+dir STATE="$(database bench_pg_dir)" ;;
    postgres+s3) run postgres+s3 STATE="$(database bench_pg_s3)" SITE="s3://$CONDUCT_TEST_S3_BUCKET/bench-$$" ;;
    *) echo "unknown backends $b" >&2; exit 2 ;;
  esac
done
python3 - "$W" "$C" "$B" <<'PY'
import os, re, sys
w, conns, names = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
def runs(name):
    out, c = {}, None
    for line in open(f"{w}/{name}.txt"):
        if line.startswith("connections "):
            c = line.split()[1]; out[c] = {}
        elif c and line.startswith("integrated="):
            out[c].update(dict(kv.split("=", 1) for kv in line.split()))
        elif c and line.startswith("RESULT"):
            out[c].update(dict(kv.split("=", 1) for kv in line.split()[1:]))
        elif line.startswith("restart:"):
            out["restart"] = re.search(r"(\d+) ms", line).group(1)
    return out
got = {n: runs(n) for n in names}
got.setdefault("sqlite+dir", runs("sqlite+dir") if os.path.exists(f"{w}/sqlite+dir.txt") else {})
print("\n| backends | connections | report-ins/s (ratio to sqlite+dir) | p99 ms | integration p99 s | tree puts a report-in (its vow's own) | restart to first write |")
print("|---|---|---|---|---|---|---|")
for n in names:
    for c in conns:
        r, base = got[n].get(c, {}), got["sqlite+dir"].get(c, {})
        secs = float(r.get("secs", "nan"))
        rate = int(r.get("ok", 0)) / secs if secs == secs and secs else float("nan")
        brate = int(base.get("ok", 0)) / float(base.get("secs", "nan")) if base else float("nan")
        print(f"| {n} | {c} | {rate:,.0f} ({rate / brate:.2f}) | {r.get('p99', '?')} | "
              f"{float(r.get('integrate_p99', 'nan')):.2f} | {float(r.get('puts_per_integrated', 'nan')):.1f} "
              f"({float(r.get('vow_puts_per_integrated', 'nan')):.1f}) | "
              f"{got[n].get('restart', '?')} ms |")
PY
