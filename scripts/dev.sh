#!/usr/bin/env bash
# Hark with hot reload for the window: Vite serves ui/ (edits show at once) and a debug app
# built without the `custom-protocol` feature loads it from there (tauri.conf.json devUrl).
# Rust edits need a restart of this script.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
(cd ui && npm ci --no-audit --no-fund --silent)
(cd ui && exec npm run dev -- --strictPort) &
VITE=$!
trap 'kill $VITE 2>/dev/null || true' EXIT
cargo build --locked -p hark-llm
cargo run --locked -p hark-app --no-default-features -- "$@"
