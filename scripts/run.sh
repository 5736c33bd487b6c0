#!/usr/bin/env bash
# Runs Hark on a fresh machine: installs what it needs (apt packages, the UI's npm packages),
# builds the desktop app and its offline model server, and starts it. With no API key Hark
# runs entirely offline: the models it needs are downloaded on first use (with a progress
# bar, resumable, sha256-checked).
# `scripts/run.sh cli chat ...` runs the `hark` command-line client instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
if [ "${1:-}" = "cli" ]; then
  shift
  cargo build --release --locked -p hark-cli -p hark-llm
  exec "$CARGO_TARGET_DIR/release/hark" "$@"
fi
(cd ui && npm ci --no-audit --no-fund --silent && npm run build --silent)
cargo build --release --locked -p hark-app -p hark-llm
exec "$CARGO_TARGET_DIR/release/hark-app" "$@"
