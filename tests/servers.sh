# The suite's shared servers, sourced by tests/run.sh: one PostgreSQL and one S3-compatible
# bucket server for every test that needs a database or a bucket, each on a loopback port,
# started once and stopped when the shell that sourced this exits. Real servers, never an
# in-process fake:
#
# - PostgreSQL from Debian's `postgresql` package (installed when missing): `initdb` into a
#   temporary directory as an unprivileged user (`nobody` when the suite runs as root), trust
#   authentication on 127.0.0.1 only.
# - s3s-fs 0.14.1 from crates.io (`--features binary`), built once into tests/.tools/s3s-fs
#   (about 2.5 minutes on 2 cores). Its conditional writes are not atomic: nothing may rely
#   on them for safety.
#
# Exports, for the tests:
#   CONDUCT_TEST_POSTGRES      postgres://conduct@127.0.0.1:<port>/conduct_test
#   CONDUCT_TEST_PG_BIN        the PostgreSQL binaries (psql, pg_ctl, ...)
#   CONDUCT_TEST_S3_ENDPOINT   http://127.0.0.1:<port> (path-style, plain HTTP)
#   CONDUCT_TEST_S3_BUCKET     a bucket directory that exists on that server
#   CONDUCT_TEST_S3_ACCESS_KEY, CONDUCT_TEST_S3_SECRET_KEY
#   CONDUCT_TEST_S3S_BIN       the s3s-fs binary, for a test's own server
# Tests hand the AWS_* variables (AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID,
# AWS_SECRET_ACCESS_KEY, AWS_ALLOW_HTTP) to the processes they start; this shell sets none.

servers_root=$root/tests/.tools/servers
mkdir -p "$servers_root"

# A free loopback port (the kernel's pick; a race with another process is retried by the
# caller seeing the server fail to start).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Wait until `$@` succeeds, at most `limit` seconds; print `what` and fail otherwise.
await_ready() {
  local what=$1 limit=$2
  shift 2
  local deadline=$((SECONDS + limit))
  until "$@" > /dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "$what did not become ready in ${limit}s" >&2
      return 1
    fi
    sleep 0.1
  done
}

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql > /dev/null
  pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
fi
pg_dir=$(mktemp -d "$servers_root/pg.XXXXXX")
as_pg=()
if [ "$(id -u)" = 0 ]; then
  # initdb refuses to run as root. setpriv execs in place, so `$!` below is the server.
  chown nobody "$pg_dir"
  as_pg=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi
"${as_pg[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -U conduct --auth=trust -E UTF8 --locale=C.UTF-8 > "$pg_dir/initdb.log" 2>&1 ||
  { cat "$pg_dir/initdb.log"; exit 1; }
pg_port=$(free_port)
"${as_pg[@]}" "$pg_bin/postgres" -D "$pg_dir/data" -h 127.0.0.1 -p "$pg_port" -k "$pg_dir" \
  -c max_connections=200 > "$pg_dir/postgres.log" 2>&1 &
pg_pid=$!
await_ready "PostgreSQL (log: $pg_dir/postgres.log)" 30 "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" -U conduct
"$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U conduct conduct_test
export CONDUCT_TEST_POSTGRES="postgres://conduct@127.0.0.1:$pg_port/conduct_test"
export CONDUCT_TEST_PG_BIN=$pg_bin

s3s_version=0.14.1
s3s_bin=$root/tests/.tools/s3s-fs/bin/s3s-fs
if [ ! -x "$s3s_bin" ] || [ "$("$s3s_bin" --version 2>/dev/null)" != "s3s-fs $s3s_version" ]; then
  started=$SECONDS
  cargo install --quiet s3s-fs --version "$s3s_version" --features binary --root "$root/tests/.tools/s3s-fs"
  echo "s3s-fs $s3s_version built in $((SECONDS - started)) s"
fi
s3_dir=$(mktemp -d "$servers_root/s3.XXXXXX")
mkdir -p "$s3_dir/root/conduct-test"
s3_port=$(free_port)
export CONDUCT_TEST_S3_ACCESS_KEY=conduct-test
export CONDUCT_TEST_S3_SECRET_KEY=conduct-test-secret
"$s3s_bin" --host 127.0.0.1 --port "$s3_port" --access-key "$CONDUCT_TEST_S3_ACCESS_KEY" \
  --secret-key "$CONDUCT_TEST_S3_SECRET_KEY" "$s3_dir/root" > "$s3_dir/s3s-fs.log" 2>&1 &
s3_pid=$!
await_ready "s3s-fs (log: $s3_dir/s3s-fs.log)" 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$s3_port"
export CONDUCT_TEST_S3_ENDPOINT="http://127.0.0.1:$s3_port"
# For tests that need a bucket server of their own (to stop it under the service).
export CONDUCT_TEST_S3S_BIN=$s3s_bin
export CONDUCT_TEST_S3_BUCKET=conduct-test

stop_servers() {
  kill "$s3_pid" 2> /dev/null || true
  # SIGINT: PostgreSQL's fast shutdown.
  kill -INT "$pg_pid" 2> /dev/null || true
  wait "$s3_pid" "$pg_pid" 2> /dev/null || true
  rm -rf "$pg_dir" "$s3_dir"
}
trap stop_servers EXIT
echo "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$pg_port; s3s-fs $s3s_version on 127.0.0.1:$s3_port"
