#!/usr/bin/env bash
# Runs Hark on a fresh machine: installs what it needs (apt packages, the UI's npm packages,
# the offline speech model), builds the desktop app and starts it.
# `scripts/run.sh cli chat ...` runs the `hark` command-line client instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/fetch-models.sh >/dev/null
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
if [ "${1:-}" = "cli" ]; then
  shift
  cargo build --release --locked -p hark-cli
  exec "$CARGO_TARGET_DIR/release/hark" "$@"
fi
(cd ui && npm ci --no-audit --no-fund --silent && npm run build --silent)
cargo build --release --locked -p hark-app
exec "$CARGO_TARGET_DIR/release/hark-app" "$@"
