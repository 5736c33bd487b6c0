#!/usr/bin/env bash
# The offline spoken turn measured in one run (issues 12 and 20): today's pipeline (whisper
# tiny.en at each pause while the key is held, the overlapped schedule) and the new one
# (Moonshine tiny's live words), each with the OS voice and the natural voice (the new one
# also with the quick natural voice, Piper's Joe), on the same
# clips played as live speech (the path of `hark talk --wav FILE --live`): espeak-ng
# questions and real human speech that registry packages ship (twelve of Debian's
# asterisk-core-sounds-en-wav prompts, CC-BY-SA-3.0, and beckett.wav from the PyPI wheel
# useful-moonshine-onnx); same models, same model server. Release builds.
# Prints release → final transcript / first token / first audio, p50 and p95, for each
# pipeline and voice; the ratios new / today per voice against issue 20's goals; the first
# live words' delay from the speech onset, the longest wait for new words while
# speaking and how often a word already on screen changed; each engine's word error in the turns, and on every clip transcribed whole
# (every Asterisk prompt of five words or more: the sample that decides the default English
# engine); each voice's real-time factor; and the first turn after a start against the
# second.
#
# Usage: scripts/bench-offline-turn.sh [RUNS]   (default 2; a run plays all 16 clips
#        through every pipeline: about ten minutes on 2 cores)
# Environment:
#   HARK_BENCH_RUNS        runs (the argument wins); 0 prints only each engine's word error
#                          on every clip transcribed whole (every Asterisk prompt of five
#                          words or more), which decides the default English engine
#   HARK_BENCH_PIPELINES   default overlapped,overlapped/natural,moonshine,moonshine/natural,
#                          moonshine/hibari,moonshine/piper; sequential (whisper after the
#                          release) too; a voice after `/` (system, natural, hibari or
#                          piper; system when none is named)
#   HARK_BENCH_CLIPS       clip sets, default espeak,asterisk,beckett
#   HARK_BENCH_RELEASE_MS  how long after the last word the key comes up (default 300)
#   HARK_BENCH_LLM         the chat model, a manifest id (default: the default one)
#   HARK_BENCH_VERBOSE     a line per turn on stderr: figures, live words, transcript, reply
#   HARK_BENCH_SPEECH      where the human recordings are kept (default
#                          ~/.cache/hark/bench-speech; beckett.wav is fetched there too)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
export HARK_MODELS_DIR="${HARK_MODELS_DIR:-$HOME/.cache/hark/models}"
export HARK_BENCH_RUNS="${1:-${HARK_BENCH_RUNS:-2}}"
export HARK_BENCH_SPEECH="${HARK_BENCH_SPEECH:-$HOME/.cache/hark/bench-speech}"

# Human speech: Debian's Asterisk prompts (scripts/bench-speech.sh). beckett.wav the
# benchmark fetches itself, through Hark's model store, from the wheel that models.json pins.
scripts/bench-speech.sh

scripts/fetch-models.sh >/dev/null
cargo build --release --locked -q -p hark-llm
export HARK_LLM_BIN="$CARGO_TARGET_DIR/release/hark-llm"
exec cargo bench --locked -q -p hark-core --bench offline_turn
