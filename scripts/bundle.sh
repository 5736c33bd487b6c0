#!/usr/bin/env bash
# Builds the installers (here: deb and rpm; pass e.g. `--bundles app,dmg` on macOS) with the
# offline model server inside: hark-llm is built first and bundled as a Tauri sidecar
# (`externalBin`), which installs it next to the app, where the app looks for it.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
EXE=""
case "$TRIPLE" in *windows*) EXE=".exe" ;; esac
# Installers run on other computers: on x86-64, whisper.cpp is built for ggml's portable
# baseline (AVX2, FMA, F16C) instead of this machine's CPU, as in the release workflow.
case "$TRIPLE" in x86_64-*) export GGML_NATIVE=OFF ;; esac
(cd ui && npm ci --no-audit --no-fund --silent && npm run build --silent)
cargo build --release --locked -p hark-llm
mkdir -p src-tauri/binaries
cp "$CARGO_TARGET_DIR/release/hark-llm$EXE" "src-tauri/binaries/hark-llm-$TRIPLE$EXE"
# The Tauri CLI from the UI's pinned npm packages (a prebuilt binary: no 15-minute
# `cargo install tauri-cli`).
ui/node_modules/.bin/tauri build --config src-tauri/tauri.bundle.conf.json "$@"
