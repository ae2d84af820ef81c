#!/usr/bin/env bash
# Install the test tools pinned in contracts/package-lock.json (anvil 1.7.1, solc-js, viem, and the
# MCP TypeScript SDK and inspector CLI) and tell the tests where they are. Idempotent: `npm ci`
# runs only when contracts/node_modules does not match the lockfile (stamp file), so a second run
# takes well under a second.
#
#   tests/tools.sh                      # install if needed; print `export ...` lines on stdout
#   eval "$(tests/tools.sh)"            # ... and use them in this shell
#   . tests/.tools/env.sh               # the same exports, written to a file for later shells
#
# Needs only node (>= 20) and npm, plus access to the npm registry the first time.
# Progress goes to stderr; stdout carries only the export lines.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONTRACTS="$ROOT/contracts"
TOOLS_DIR="$ROOT/tests/.tools"
STAMP="$CONTRACTS/node_modules/.cas-tools.stamp"

log() { printf 'tools.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

command -v node >/dev/null 2>&1 || die "node not found on PATH (need node >= 20)"
command -v npm >/dev/null 2>&1 || die "npm not found on PATH"
NODE_MAJOR="$(node -p 'process.versions.node.split(".")[0]')"
[[ "$NODE_MAJOR" -ge 20 ]] || die "node $(node --version) is too old (need >= 20)"
[[ -f "$CONTRACTS/package-lock.json" ]] || die "missing $CONTRACTS/package-lock.json"

# The npm registry carries anvil's linux-x64 binary package only, which is what this project's
# machines are; contracts/package.json depends on it directly (not on the @foundry-rs/anvil wrapper).
[[ "$(uname -s)-$(uname -m)" == "Linux-x86_64" ]] ||
  die "anvil is pinned as @foundry-rs/anvil-linux-amd64 (Linux x86_64 only); this is $(uname -s)-$(uname -m). Set ANVIL_BIN to an anvil 1.7.1 binary instead."
ANVIL_BIN="$CONTRACTS/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil"

# The stamp records the hash of package.json + package-lock.json that node_modules was built from.
WANT="$(cat "$CONTRACTS/package.json" "$CONTRACTS/package-lock.json" | sha256sum | cut -d' ' -f1)"
HAVE="$(cat "$STAMP" 2>/dev/null || true)"
if [[ "$HAVE" == "$WANT" && -f "$ANVIL_BIN" ]]; then
  log "contracts/node_modules matches the lockfile; skipping npm ci"
else
  log "npm ci in contracts/ (lockfile hash ${WANT:0:12})"
  START=$SECONDS
  (cd "$CONTRACTS" && npm ci --no-audit --no-fund --loglevel=error >&2)
  [[ -f "$ANVIL_BIN" ]] || die "npm ci finished but $ANVIL_BIN is missing"
  printf '%s\n' "$WANT" >"$STAMP"
  log "npm ci done in $((SECONDS - START)) s"
fi

# npm 11 skips @foundry-rs/anvil's postinstall (which would chmod the binary), so do it here.
[[ -x "$ANVIL_BIN" ]] || chmod +x "$ANVIL_BIN"
ANVIL_VERSION="$("$ANVIL_BIN" --version | head -n1)" || die "$ANVIL_BIN does not run"
log "$ANVIL_VERSION at $ANVIL_BIN"

NODE_PATH_DIR="$CONTRACTS/node_modules"
mkdir -p "$TOOLS_DIR"
ENV_FILE="$TOOLS_DIR/env.sh"
TMP="$(mktemp "$TOOLS_DIR/env.sh.XXXXXX")"
{
  echo "# written by tests/tools.sh; source it: . tests/.tools/env.sh"
  printf 'export ANVIL_BIN=%q\n' "$ANVIL_BIN"
  printf 'export NODE_PATH=%q\n' "$NODE_PATH_DIR"
  printf 'export CAS_CONTRACTS_DIR=%q\n' "$CONTRACTS"
} >"$TMP"
mv -f "$TMP" "$ENV_FILE"
log "wrote ${ENV_FILE#"$ROOT"/}"
grep '^export ' "$ENV_FILE"
