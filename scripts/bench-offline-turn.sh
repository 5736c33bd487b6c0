#!/usr/bin/env bash
# The offline spoken turn measured both ways in one run (issue 12): the sequential pipeline
# (Hark before: transcribe after release, then the whole prompt, then the first sentence)
# and the overlapped one (prefix evaluated at the press, whisper at each pause, speech
# from the first clause), same models, same server, same espeak clips. Release builds.
# Prints release → transcript / first token / first audio, p50 and p95, and the ratio.
# Usage: scripts/bench-offline-turn.sh [RUNS]   (conversations per pipeline; default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
export HARK_MODELS_DIR="${HARK_MODELS_DIR:-$HOME/.cache/hark/models}"
export HARK_BENCH_RUNS="${1:-${HARK_BENCH_RUNS:-5}}"
scripts/fetch-models.sh >/dev/null
cargo build --release --locked -q -p hark-llm
export HARK_LLM_BIN="$CARGO_TARGET_DIR/release/hark-llm"
exec cargo bench --locked -q -p hark-core --bench offline_turn
