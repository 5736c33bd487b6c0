#!/usr/bin/env bash
# Do the offline chat models call tools reliably? (issue 25): each chat model of the
# manifest answers 32 spoken requests with Hark's four built-in tools described in Qwen2.5's
# Hermes tool format; prints the right calls, the false calls and the verdict against the
# bar for offering tools to a local model. Fetches the models first.
#
# The test build's profile (`dev`) is used, not a release build: what is measured is the
# models' answers, which greedy decoding makes the same in any build, and llama.cpp is
# optimised in both (Cargo.toml: llama-cpp-sys-2 at opt-level 3), so the reply times are
# llama.cpp's too. It reuses the suite's build instead of a 10-minute release build.
# Usage: scripts/bench-local-tools.sh
# Environment: HARK_BENCH_LLMS=id,id (default: every chat model), HARK_BENCH_VERBOSE=1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
export HARK_MODELS_DIR="${HARK_MODELS_DIR:-$HOME/.cache/hark/models}"
cargo build --workspace --locked -q   # the suite's build: one feature set, nothing rebuilt
HARK_BIN="$CARGO_TARGET_DIR/debug/hark" scripts/fetch-models.sh qwen2.5-coder-1.5b qwen2.5-coder-0.5b smollm2-135m >/dev/null
export HARK_LLM_BIN="$CARGO_TARGET_DIR/debug/hark-llm"
exec cargo bench --locked -q --profile dev -p hark-core --bench local_tools
