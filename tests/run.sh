#!/usr/bin/env bash
# The whole test suite, from a clean checkout: installs the pinned tools it needs, checks
# formatting and lints, builds, and runs every test. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tools=$root/tests/.tools
mkdir -p "$tools"

echo "== system tools (Debian): headless Chromium and its driver, nginx, rsync"
debs=()
command -v chromium >/dev/null || debs+=(chromium)
command -v chromedriver >/dev/null || debs+=(chromium-driver)
{ command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; } || debs+=(nginx-light)
command -v rsync >/dev/null || debs+=(rsync)
if [ ${#debs[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${debs[@]}" > /dev/null
fi

echo "== pinned Python clients (PyPI) -> tests/.tools/venv"
req=tests/py/requirements.txt
stamp=$tools/venv/.requirements.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ ! -x "$tools/venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  python3 -m venv "$tools/venv"
  "$tools/venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  echo "$want" > "$stamp"
fi
export CONDUCT_TEST_PYTHON=$tools/venv/bin/python

echo "== the last 1.x MCP Python SDK (PyPI; it cannot share the venv with mcp 2.x) -> tests/.tools/venv-mcp1"
req=tests/py/requirements-mcp1.txt
stamp=$tools/venv-mcp1/.requirements.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ ! -x "$tools/venv-mcp1/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  python3 -m venv "$tools/venv-mcp1"
  "$tools/venv-mcp1/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  echo "$want" > "$stamp"
fi
export CONDUCT_TEST_PYTHON_MCP1=$tools/venv-mcp1/bin/python

echo "== the Python kit (clients/python with its pay extra, and its pinned test tools) -> tests/.tools/venv-kit; mypy --strict"
stamp=$tools/venv-kit/.kit.sha256
want=$(find clients/python/pyproject.toml clients/python/requirements-test.txt clients/python/README.md clients/python/src \
  -type f -not -path '*/__pycache__/*' | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
if [ ! -x "$tools/venv-kit/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  rm -rf "$tools/venv-kit"
  python3 -m venv "$tools/venv-kit"
  "$tools/venv-kit/bin/pip" install --quiet --disable-pip-version-check \
    -r clients/python/requirements-test.txt "./clients/python[pay]"
  echo "$want" > "$stamp"
fi
export CONDUCT_TEST_PYTHON_KIT=$tools/venv-kit/bin/python
(cd clients/python && "$CONDUCT_TEST_PYTHON_KIT" -m mypy --strict --no-incremental src)

echo "== pinned npm tools (anvil, solc, viem, the MCP SDK and inspector) -> contracts/node_modules"
bash tests/tools.sh > /dev/null
# shellcheck disable=SC1091
. tests/.tools/env.sh

echo "== the TypeScript kit's dependencies (npm ci) -> clients/js/node_modules; its dist/ matches a fresh tsc build"
stamp=clients/js/node_modules/.conduct-kit.stamp
want=$(cat clients/js/package.json clients/js/package-lock.json | sha256sum | cut -d' ' -f1)
if [ ! -d clients/js/node_modules ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  (cd clients/js && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" > "$stamp"
fi
node clients/js/scripts/check-dist.mjs

echo "== contract artifacts match a fresh compile"
node contracts/build.mjs --check

echo "== ERC-8257 ToolRegistry on a throw-away anvil"
node contracts/registry-check.mjs > "$tools/registry-check.log" && tail -n 1 "$tools/registry-check.log" || { cat "$tools/registry-check.log"; exit 1; }
node contracts/chain-fixtures-check.mjs > "$tools/chain-fixtures-check.log" && tail -n 1 "$tools/chain-fixtures-check.log" || { cat "$tools/chain-fixtures-check.log"; exit 1; }

echo "== the shared servers: PostgreSQL (Debian) and the s3s-fs bucket server (crates.io), on loopback"
. tests/servers.sh

echo "== cargo fmt --check"
cargo fmt --all --check

echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings

echo "== build the conduct binary"
cargo build --workspace --bins --quiet

echo "== cargo test"
# Every test binary runs even when one fails, so the tally covers the whole suite.
status=0
cargo test --workspace --no-fail-fast --quiet 2>&1 | tee "$tools/test.log" || status=$?
# The State suites again on the other backend: each test gets a database of its own on the
# shared PostgreSQL server.
echo "== the State suites on PostgreSQL (CONDUCT_TEST_STATE=postgres)"
CONDUCT_TEST_STATE=postgres cargo test -p conduct-indexer --test ledger --test append --test vows --test vow_reads --test tables --test munus --test kept --test chain_index \
  --no-fail-fast --quiet 2>&1 |
  tee -a "$tools/test.log" || status=$?
# The service's end-to-end suites whose state is vows, payments, the board and the chain index, with each
# server it starts on a database of its own (tests/src/lib.rs, state_for).
CONDUCT_TEST_STATE=postgres cargo test -p conduct-tests --test x402 --test x402_extensions --test vows --test munus --test munus_payment --test registry --test reputation \
  --no-fail-fast --quiet 2>&1 |
  tee -a "$tools/test.log" || status=$?
# Print one closing tally line for CI readers.
awk '/^test result:/ {p+=$4; f+=$6; i+=$8} END {printf "%d passed, %d failed, %d skipped\n", p, f, i}' "$tools/test.log"
exit "$status"
