#!/usr/bin/env bash
# Builds the installers (here: deb and rpm; pass e.g. `--bundles app,dmg` on macOS) with the
# offline model server inside: hark-llm is built first and bundled as a Tauri sidecar
# (`externalBin`), which installs it next to the app, where the app looks for it. Built as the
# release workflow builds them: the environment from scripts/build-env.sh (a portable CPU
# baseline, the app's minimum macOS) and the updater's configuration from
# scripts/updater-config.sh (updates only with HARK_UPDATE_ENDPOINT and HARK_UPDATE_PUBKEY).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
EXE=""
case "$TRIPLE" in *windows*) EXE=".exe" ;; esac
(cd ui && npm ci --no-audit --no-fund --silent && npm run build --silent)
while IFS= read -r line; do export "${line?}"; done < <(scripts/build-env.sh)
scripts/updater-config.sh src-tauri/tauri.updater.conf.json
cargo build --release --locked -p hark-llm
mkdir -p src-tauri/binaries
cp "$CARGO_TARGET_DIR/release/hark-llm$EXE" "src-tauri/binaries/hark-llm-$TRIPLE$EXE"
# The Tauri CLI from the UI's pinned npm packages (a prebuilt binary: no 15-minute
# `cargo install tauri-cli`).
ui/node_modules/.bin/tauri build --config src-tauri/tauri.bundle.conf.json \
  --config src-tauri/tauri.updater.conf.json "$@"
