#!/usr/bin/env bash
# Runs Hark on a fresh machine: installs what it needs, builds, and starts a chat.
# Arguments go to `hark chat` (e.g. --llm openai --base-url http://127.0.0.1:11434/v1 --model llama3.2).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
cargo build --release --locked -p hark-cli
exec "$CARGO_TARGET_DIR/release/hark" chat "$@"
