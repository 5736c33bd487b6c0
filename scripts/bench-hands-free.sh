#!/usr/bin/env bash
# Hands-free listening (issue 23) in a private virtual room (scripts/virtual-audio.sh: the
# microphone hears the speaker): false starts on five minutes of no speech, ERLE of the
# echo canceller on Hark's own replies, end-of-turn and barge-in delays (p50/p95), the
# CPU that listening costs, and (issue 49) the replies Hark cut by hearing itself and the
# voices over a reply that cut it, with the code before side by side. Release build;
# fetches the models and the human recordings (scripts/bench-speech.sh) first.
# Usage: scripts/bench-hands-free.sh
# Environment:
#   HARK_BENCH_TRIALS    turns of section 3 (default 10)
#   HARK_BENCH_SECTIONS  which sections (default 1,2,3,4,5; 3 and 4 run together)
#   HARK_BENCH_REPLIES   section 5: Hark's own replies with today's code (default 200;
#                        about 9 s each)
#   HARK_BENCH_REPLIES_BEFORE  the same with the code before issue 49 (default 100)
#   HARK_BENCH_ROUNDS    section 5: rounds of the 16 voices over a reply (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
export HARK_MODELS_DIR="${HARK_MODELS_DIR:-$HOME/.cache/hark/models}"
export HARK_BENCH_SPEECH="${HARK_BENCH_SPEECH:-$HOME/.cache/hark/bench-speech}"
scripts/bench-speech.sh
# The room gets a HOME of its own; the toolchain stays where it is.
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
cargo build --locked -q -p hark-cli
HARK_BIN="$CARGO_TARGET_DIR/debug/hark" scripts/fetch-models.sh silero-vad smart-turn-v3 kokoro-82m moonshine-tiny >/dev/null
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
