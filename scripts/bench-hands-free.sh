#!/usr/bin/env bash
# Hands-free listening (issue 23) in a private virtual room (scripts/virtual-audio.sh: the
# microphone hears the speaker): false starts on five minutes of no speech, ERLE of the
# echo canceller on Hark's own replies, end-of-turn and barge-in delays (p50/p95), and the
# CPU that listening costs. Release build; fetches the models first.
# Usage: scripts/bench-hands-free.sh   (HARK_BENCH_TRIALS=N turns, default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
export HARK_MODELS_DIR="${HARK_MODELS_DIR:-$HOME/.cache/hark/models}"
# The room gets a HOME of its own; the toolchain stays where it is.
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
cargo build --locked -q -p hark-cli
HARK_BIN="$CARGO_TARGET_DIR/debug/hark" scripts/fetch-models.sh silero-vad smart-turn-v3 kokoro-82m >/dev/null
cargo bench --locked -q -p hark-core --bench hands_free --no-run
ROOM=$(mktemp -d)
trap 'rm -rf "$ROOM"' EXIT
mkdir -p "$ROOM/home" "$ROOM/run"
chmod 700 "$ROOM/run"
HOME="$ROOM/home" XDG_RUNTIME_DIR="$ROOM/run" bash -c '
  eval "$(scripts/virtual-audio.sh start "$1/audio")"
  trap "scripts/virtual-audio.sh stop" EXIT
  cargo bench --locked -q -p hark-core --bench hands_free
' bash "$ROOM"
